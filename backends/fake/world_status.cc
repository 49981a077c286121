// Failure and exit bookkeeping of a fake world: the root cause wins over the
// secondary "aborted" errors of the ranks that were waiting for it.
#include "backends/fake/world_status.h"

#include <algorithm>

namespace dtensor {
namespace detail {

void throw_peer_failure(const std::string& message) {
  throw PeerFailureError({__func__, __FILE__, static_cast<uint32_t>(__LINE__)}, message);
}

FakeWorldStatus::FakeWorldStatus(int64_t world_size)
    : world_size_(world_size),
      exited_(std::make_unique<std::atomic<bool>[]>(static_cast<size_t>(world_size))) {
  for (int64_t r = 0; r < world_size; ++r) exited_[static_cast<size_t>(r)].store(false);
}

std::string FakeWorldStatus::abort_reason() const {
  std::lock_guard<std::mutex> lock(mutex_);
  const std::optional<Failure>& failure = root_cause_ ? root_cause_ : first_secondary_;
  if (!failure) return "";
  return "rank " + std::to_string(failure->rank) + " failed: " + failure->message;
}

void FakeWorldStatus::record_failure(int64_t rank, std::string message, bool secondary) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    std::optional<Failure>& slot = secondary ? first_secondary_ : root_cause_;
    if (!slot) slot = Failure{rank, std::move(message)};
    aborted_.store(true, std::memory_order_release);
  }
  wake_all();
}

void FakeWorldStatus::mark_exited(int64_t rank) {
  exited_[static_cast<size_t>(rank)].store(true, std::memory_order_release);
  wake_all();
}

bool FakeWorldStatus::exited(int64_t rank) const {
  return exited_[static_cast<size_t>(rank)].load(std::memory_order_acquire);
}

void FakeWorldStatus::rethrow_failure() const {
  std::lock_guard<std::mutex> lock(mutex_);
  const std::optional<Failure>& failure = root_cause_ ? root_cause_ : first_secondary_;
  if (!failure) return;
  TORCH_CHECK(false, "[rank ", failure->rank, "] ", failure->message);
}

void FakeWorldStatus::add_wakeable(Wakeable* wakeable) {
  std::lock_guard<std::mutex> lock(wake_mutex_);
  wakeables_.push_back(wakeable);
}

void FakeWorldStatus::remove_wakeable(Wakeable* wakeable) {
  std::lock_guard<std::mutex> lock(wake_mutex_);
  wakeables_.erase(std::remove(wakeables_.begin(), wakeables_.end(), wakeable), wakeables_.end());
}

void FakeWorldStatus::wake_all() {
  std::lock_guard<std::mutex> lock(wake_mutex_);
  for (Wakeable* wakeable : wakeables_) wakeable->wake_all();
}

}  // namespace detail
}  // namespace dtensor
