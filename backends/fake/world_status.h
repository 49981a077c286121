// Health of one fake world, shared by all of its rank threads: which rank
// failed first (the root cause), which ranks returned from their function, and
// the rendezvous to wake so that their waiters notice either at once.
//   status.record_failure(/*rank=*/2, "boom", /*secondary=*/false);  // aborts
//   if (status.aborted()) throw_peer_failure(where + ": " + status.abort_reason());
#pragma once

#include <c10/util/Exception.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace dtensor {

/// An error a rank of a fake world raises because of another rank's failure:
/// the world was aborted, or a group it waits in broke. run_fake_world reports
/// the root cause instead of these. Catch c10::Error to catch both.
class PeerFailureError : public c10::Error {
 public:
  using c10::Error::Error;
};

namespace detail {

/// Throws PeerFailureError(message).
[[noreturn]] void throw_peer_failure(const std::string& message);

/// Something that waits on a condition variable and must re-check the world's
/// health when a rank fails or returns.
class Wakeable {
 public:
  virtual ~Wakeable() = default;
  virtual void wake_all() = 0;
};

/// Failure and exit bookkeeping of one fake world. Thread-safe.
class FakeWorldStatus {
 public:
  explicit FakeWorldStatus(int64_t world_size);
  FakeWorldStatus(const FakeWorldStatus&) = delete;
  FakeWorldStatus& operator=(const FakeWorldStatus&) = delete;

  int64_t world_size() const { return world_size_; }

  /// True once any rank failed. One atomic load.
  bool aborted() const { return aborted_.load(std::memory_order_acquire); }
  /// "rank 2 failed: boom": the root cause (or, without one, the first
  /// secondary failure). Empty while nothing failed.
  std::string abort_reason() const;

  /// Records that `rank`'s function threw `message`. The first failure with
  /// secondary == false is the root cause; secondary failures (see
  /// PeerFailureError) are kept only in case no root cause is ever recorded.
  /// Aborts the world and wakes every waiter.
  void record_failure(int64_t rank, std::string message, bool secondary);

  /// `rank` returned normally from its function; wakes every waiter so that
  /// peers waiting for it fail at once instead of timing out.
  void mark_exited(int64_t rank);
  bool exited(int64_t rank) const;

  /// Throws the root cause as a c10::Error "[rank N] <message>"; returns when
  /// no rank failed.
  void rethrow_failure() const;

  /// Registers a waiter to wake on failure or exit; `wakeable` must call
  /// remove_wakeable before it dies.
  void add_wakeable(Wakeable* wakeable);
  void remove_wakeable(Wakeable* wakeable);

 private:
  struct Failure {
    int64_t rank = 0;
    std::string message;
  };
  void wake_all();

  const int64_t world_size_;
  std::atomic<bool> aborted_{false};
  std::unique_ptr<std::atomic<bool>[]> exited_;
  mutable std::mutex mutex_;
  std::optional<Failure> root_cause_;       // guarded by mutex_
  std::optional<Failure> first_secondary_;  // guarded by mutex_
  std::mutex wake_mutex_;
  std::vector<Wakeable*> wakeables_;  // guarded by wake_mutex_
};

}  // namespace detail
}  // namespace dtensor
