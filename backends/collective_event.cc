// Names of collectives, event formatting and the per-rank observer list.
#include "backends/collective_event.h"

#include <algorithm>
#include <sstream>

namespace dtensor {

std::string MeshDimTag::dim_name() const {
  if (mesh_dim < 0 || static_cast<size_t>(mesh_dim) >= mesh_dim_names.size()) return "";
  return mesh_dim_names[static_cast<size_t>(mesh_dim)];
}

namespace {
void append_list(std::ostringstream& out, const std::vector<int64_t>& values) {
  out << '[';
  for (size_t i = 0; i < values.size(); ++i) out << (i ? ", " : "") << values[i];
  out << ']';
}
}  // namespace

std::string CollectiveEvent::to_string() const {
  std::ostringstream out;
  out << collective_name(kind);
  if (reduce_op) out << '(' << reduce_op_name(*reduce_op) << ')';
  if (root) out << "(root=" << *root << ')';
  out << ' ' << c10::toString(dtype);
  for (const auto& shape : input_shapes) append_list(out, shape);
  out << " group=";
  append_list(out, group_ranks);
  out << " seq=" << seq;
  return out.str();
}

namespace {
const CollectiveOriginSource*& thread_origin_source() {
  thread_local const CollectiveOriginSource* source = nullptr;
  return source;
}
}  // namespace

const CollectiveOriginSource* exchange_collective_origin_source(const CollectiveOriginSource* source) {
  const CollectiveOriginSource* previous = thread_origin_source();
  thread_origin_source() = source;
  return previous;
}

std::shared_ptr<const CollectiveOrigin> current_collective_origin() {
  const CollectiveOriginSource* source = thread_origin_source();
  return source == nullptr ? nullptr : source->origin();
}

ObserverList::Registration::Registration(Registration&& other) noexcept
    : list_(other.list_), observer_(other.observer_) {
  other.list_ = nullptr;
  other.observer_ = nullptr;
}

ObserverList::Registration& ObserverList::Registration::operator=(Registration&& other) noexcept {
  if (this != &other) {
    reset();
    list_ = other.list_;
    observer_ = other.observer_;
    other.list_ = nullptr;
    other.observer_ = nullptr;
  }
  return *this;
}

void ObserverList::Registration::reset() {
  if (list_ != nullptr) list_->remove(observer_);
  list_ = nullptr;
  observer_ = nullptr;
}

ObserverList::Registration ObserverList::add(CollectiveObserver* observer) {
  std::lock_guard<std::mutex> lock(mutex_);
  observers_.push_back(observer);
  return Registration(this, observer);
}

void ObserverList::remove(CollectiveObserver* observer) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = std::find(observers_.begin(), observers_.end(), observer);
  if (it != observers_.end()) observers_.erase(it);
}

void ObserverList::notify(const CollectiveEvent& event) const {
  // Copy under the lock so an observer may unregister itself while notified.
  std::vector<CollectiveObserver*> snapshot;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    snapshot = observers_;
  }
  for (CollectiveObserver* observer : snapshot) observer->on_collective(event);
}

bool ObserverList::empty() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return observers_.empty();
}

}  // namespace dtensor
