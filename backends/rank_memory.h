// Per-rank memory accounting: which rank's live tensors hold how many bytes,
// their peak and where in the program it was reached, and an optional cap that
// simulates a smaller device per rank. See Note [Rank memory accounting].
//   auto account = std::make_shared<RankMemoryAccount>(/*rank=*/3, /*cap_bytes=*/1 << 30);
//   ScopedRankMemory scope(&account);    // this thread's allocations now count for rank 3
//   at::Tensor t = at::empty({256});     // account->stats().current_bytes == 1024
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

namespace dtensor {

/// One rank's memory figures (World::memory_stats()).
struct RankMemoryStats {
  int64_t current_bytes = 0;  // bytes of this rank's live allocations
  int64_t peak_bytes = 0;     // max current_bytes since start or reset_peak_memory()
  int64_t allocations = 0;    // allocations made
  int64_t cap_bytes = 0;      // 0 = no cap
  std::string peak_location;  // the label set (set_memory_location) when the peak was reached
};

/// The accounting of one rank. Allocations are counted on the threads whose
/// ScopedRankMemory names this account (the rank's own thread); frees may come
/// from any thread (a peer dropping a tensor, autograd): each allocation
/// remembers its account and size. Thread-safe.
class RankMemoryAccount {
 public:
  /// cap_bytes: 0 = no cap; else an allocation that would take the live bytes
  /// past it throws (see charge()). Throws when cap_bytes < 0.
  RankMemoryAccount(int64_t rank, int64_t cap_bytes);

  int64_t rank() const { return rank_; }
  int64_t cap_bytes() const { return cap_bytes_; }
  RankMemoryStats stats() const;
  /// The peak becomes the live bytes now, at the current location.
  void reset_peak();
  /// The label recorded with later peaks ("layers.0.attention forward").
  void set_location(std::string label);

  /// Counts an allocation of `bytes` on `device` ("CPU", "meta", "cuda:0"),
  /// or throws a c10::Error naming the rank, the bytes, the live bytes and the
  /// cap when it would exceed the cap (nothing is counted then).
  void charge(int64_t bytes, const char* device);
  /// Counts the free of an allocation charged before. Any thread.
  void release(int64_t bytes) { current_.fetch_sub(bytes, std::memory_order_relaxed); }

 private:
  void raise_peak(int64_t now);

  const int64_t rank_;
  const int64_t cap_bytes_;
  std::atomic<int64_t> current_{0};
  std::atomic<int64_t> peak_{0};
  std::atomic<int64_t> allocations_{0};
  mutable std::mutex mutex_;
  std::shared_ptr<const std::string> location_;       // guarded by mutex_
  std::shared_ptr<const std::string> peak_location_;  // guarded by mutex_
};

/// Makes `account` (may hold nullptr: no accounting) the calling thread's
/// account while in scope: CPU and meta allocations made on this thread are
/// charged to it. The first scope with an account installs the counting
/// allocators (once per process). `account` must outlive the scope.
class ScopedRankMemory {
 public:
  explicit ScopedRankMemory(const std::shared_ptr<RankMemoryAccount>* account);
  ~ScopedRankMemory();
  ScopedRankMemory(const ScopedRankMemory&) = delete;
  ScopedRankMemory& operator=(const ScopedRankMemory&) = delete;

 private:
  const std::shared_ptr<RankMemoryAccount>* previous_;
};

/// The calling thread's account, or nullptr.
RankMemoryAccount* current_rank_memory();

/// The calling thread's account as its owning pointer (nullptr when none), for
/// allocators of other devices (CUDA) that charge the same account.
const std::shared_ptr<RankMemoryAccount>* current_rank_memory_owner();

}  // namespace dtensor
