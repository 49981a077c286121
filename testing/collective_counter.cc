// The per-rank collective counter. See collective_counter.h.
#include "testing/collective_counter.h"

#include <utility>

namespace dtensor::testing {

CollectiveCounter::CollectiveCounter(World& world) : registration_(world.observers().add(this)) {}

void CollectiveCounter::on_collective(const CollectiveEvent& event) {
  ++counts_[collective_name(event.kind)];
  events_.push_back(event);
}

int64_t CollectiveCounter::total() const {
  int64_t n = 0;
  for (const auto& [name, count] : counts_) n += count;
  return n;
}

void CollectiveCounter::clear() {
  counts_.clear();
  events_.clear();
}

Counts CollectiveCounter::take() {
  Counts out = std::move(counts_);
  clear();
  return out;
}

std::string to_string(const Counts& counts) {
  std::string out = "{";
  for (const auto& [name, n] : counts) out += (out.size() > 1 ? ", " : "") + name + ": " + std::to_string(n);
  return out + "}";
}

}  // namespace dtensor::testing
