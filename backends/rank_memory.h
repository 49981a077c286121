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
#include <vector>

namespace dtensor {

/// The stream a CUDA run would make an allocation on. PyTorch's caching
/// allocator caches each stream's freed blocks for that stream, so it
/// matters for what the allocator holds; the allocation log records it
/// (Note [Allocation log]). FSDP's collective buffers are on streams of
/// their own, as in PyTorch's FSDP2.
enum AllocationStream : int {
  kComputeStream = 0,
  kFsdpAllGatherStream = 1,      // the all_gather's input and output buffers
  kFsdpReduceScatterStream = 2,  // the reduce_scatter's output
};

/// One entry of a rank's allocation log (RankMemoryAccount::start_allocation_log).
struct AllocationEvent {
  int64_t id = 0;  // the allocation's number; its free carries the same
  int64_t bytes = 0;
  bool is_free = false;
  int stream = kComputeStream;  // allocations only
};

/// While in scope, the calling thread's allocations are logged as made on
/// `stream` (no effect on where they are made).
class ScopedAllocationStream {
 public:
  explicit ScopedAllocationStream(AllocationStream stream);
  ~ScopedAllocationStream();
  ScopedAllocationStream(const ScopedAllocationStream&) = delete;
  ScopedAllocationStream& operator=(const ScopedAllocationStream&) = delete;

 private:
  AllocationStream previous_;
};

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
  /// Counts an allocation that could not be refused beforehand (a CUDA
  /// allocation, seen by the caching allocator's trace after the fact). Past
  /// the cap, the error charge() would have thrown is kept, and
  /// throw_if_over_cap() throws it on the rank's thread. Any thread.
  void charge_after(int64_t bytes, const char* device);
  /// Throws the kept error of charge_after(), once.
  void throw_if_over_cap();
  /// Counts the free of an allocation charged before. Any thread.
  void release(int64_t bytes) { current_.fetch_sub(bytes, std::memory_order_relaxed); }

  /// From now on, every CPU and meta allocation charged to this account and
  /// every free of one is appended, in order, to a log (Note [Allocation
  /// log]): what a model of another allocator replays (the planner's
  /// CUDA caching allocator model). CUDA ranks' allocations are not logged:
  /// their own caching allocator is the real thing.
  void start_allocation_log();
  /// The log since start_allocation_log(); logging stops.
  std::vector<AllocationEvent> take_allocation_log();
  /// For the counting allocator: logs an allocation of `bytes` and returns
  /// its id, or -1 when nothing is being logged.
  int64_t log_allocation(int64_t bytes);
  /// For the counting allocator: logs the free of allocation `id` (>= 0).
  void log_free(int64_t id, int64_t bytes);

 private:
  void raise_peak(int64_t now);
  std::string over_cap_message(int64_t bytes, const char* device, int64_t live) const;

  const int64_t rank_;
  const int64_t cap_bytes_;
  std::atomic<int64_t> current_{0};
  std::atomic<int64_t> peak_{0};
  std::atomic<int64_t> allocations_{0};
  mutable std::mutex mutex_;
  std::shared_ptr<const std::string> location_;       // guarded by mutex_
  std::shared_ptr<const std::string> peak_location_;  // guarded by mutex_
  std::atomic<bool> over_cap_{false};
  std::string over_cap_error_;  // guarded by mutex_
  std::atomic<bool> logging_{false};
  int64_t next_logged_id_ = 0;        // guarded by mutex_
  std::vector<AllocationEvent> log_;  // guarded by mutex_
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
