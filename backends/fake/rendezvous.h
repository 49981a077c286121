// The shared-memory meeting point of one fake group: per-rank phase counters,
// the posts through which ranks hand each other tensors, and the waiting that
// turns a peer's failure, a timeout or a mismatched collective into an error.
//   RendezvousRound round(rendezvous, group_rank, fingerprint, timeout);
//   round.mine().input = tensor;  round.arrive();  /* read round.peer(j) */  round.finish();
#pragma once

#include <ATen/core/Tensor.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "backends/collective_event.h"
#include "backends/fake/world_status.h"
#include "layout/reduce_op.h"

namespace dtensor {
namespace detail {

/// What a rank issued, compared across the group before any data moves. The
/// shape is the one every member must agree on (see FakeCommunicator).
struct Fingerprint {
  CollectiveKind kind = CollectiveKind::kBarrier;
  uint64_t seq = 0;
  c10::ScalarType dtype = c10::ScalarType::Byte;
  c10::DeviceType device_type = c10::DeviceType::CPU;
  std::vector<int64_t> shape;
  std::optional<ReduceOp> reduce_op;
  std::optional<int64_t> root;

  bool operator==(const Fingerprint& other) const;
  bool operator!=(const Fingerprint& other) const { return !(*this == other); }
  /// "all_reduce(sum) Float[4, 8] seq=3"; barriers print no dtype.
  std::string to_string() const;
};

/// What one rank offers its peers during one collective. Tensors are held by
/// reference so that a rank leaving early (with an error) cannot free memory a
/// peer is still reading. Written by its rank before arrive(), read by peers
/// between arrive() and the round's last phase.
struct Post {
  Fingerprint fingerprint;
  at::Tensor input;                  // the rank's input, or its staged copy
  std::vector<at::Tensor> inputs;    // scatter: the root's inputs
  at::Tensor reduced;                // all_reduce: this rank's reduced chunk
  std::vector<int64_t> send_splits;  // all_to_all_single: rows sent to each rank
  std::vector<int64_t> recv_splits;  // all_to_all_single: rows expected from each
  bool zero_copy = false;            // input is the caller's tensor; see Note [Phases]
};

/// Orders the members' device streams at every phase of a round, for ranks
/// on a GPU (see Note [CUDA fake collectives] in backends/fake/cuda_rank.cc);
/// CPU groups have none. record() and wait_all() run on the member's thread.
class PhaseFence {
 public:
  virtual ~PhaseFence() = default;
  /// Before arriving at `phase`: marks where this member's stream is.
  virtual void record(int64_t group_rank, uint64_t phase) = 0;
  /// After every member arrived at `phase`: this member's stream waits for
  /// every other member's mark of `phase` (on the device, the host goes on).
  virtual void wait_all(int64_t group_rank, uint64_t phase) = 0;
};

/// Shared state of one group; every member's FakeCommunicator holds it.
class FakeRendezvous final : public Wakeable {
 public:
  /// `fence`: null for CPU ranks.
  FakeRendezvous(std::vector<int64_t> ranks, std::shared_ptr<FakeWorldStatus> status,
                 std::shared_ptr<PhaseFence> fence = nullptr);
  ~FakeRendezvous() override;
  FakeRendezvous(const FakeRendezvous&) = delete;
  FakeRendezvous& operator=(const FakeRendezvous&) = delete;

  int64_t size() const { return static_cast<int64_t>(ranks_.size()); }
  const std::vector<int64_t>& ranks() const { return ranks_; }
  FakeWorldStatus& status() { return *status_; }

  /// "all_reduce on fake group [0, 1] (group rank 1 of 2, global rank 1)".
  std::string describe(CollectiveKind kind, int64_t group_rank) const;
  /// Throws PeerFailureError when the world was aborted or the group broke.
  void check_usable(CollectiveKind kind, int64_t group_rank) const;
  /// Makes every later wait and collective on this group fail with `reason`
  /// (the first reason wins) and wakes the waiters.
  void mark_broken(const std::string& reason);
  void wake_all() override;

 private:
  friend class RendezvousRound;
  struct alignas(64) Counter {
    std::atomic<uint64_t> value{0};
  };

  Post& post(int64_t group_rank, uint64_t seq) { return posts_[seq & 1][group_rank]; }
  uint64_t counter(int64_t group_rank) const {
    return phase_[group_rank].value.load(std::memory_order_acquire);
  }
  bool all_reached(uint64_t target) const;
  bool spin_until_reached(uint64_t target) const;
  void arrive(int64_t group_rank, uint64_t target, const Fingerprint* fingerprint);
  void wait(int64_t group_rank, uint64_t target, const Fingerprint& fingerprint, bool first_phase,
            std::chrono::steady_clock::time_point deadline, std::chrono::milliseconds timeout);
  void throw_if_failed(std::unique_lock<std::mutex>& lock, int64_t group_rank, uint64_t target,
                       const Fingerprint& fingerprint);
  [[noreturn]] void fail_timeout(std::unique_lock<std::mutex>& lock, int64_t group_rank,
                                 uint64_t target, const Fingerprint& fingerprint, bool first_phase,
                                 std::chrono::milliseconds timeout);
  std::string missing_rank_status(int64_t group_rank) const;  // needs mutex_
  void mark_broken_locked(const std::string& reason);
  void check_fingerprints(int64_t group_rank, uint64_t seq);

  const std::vector<int64_t> ranks_;
  const std::shared_ptr<FakeWorldStatus> status_;
  const int pause_iterations_;
  const std::shared_ptr<PhaseFence> fence_;
  std::unique_ptr<Counter[]> phase_;
  std::vector<Post> posts_[2];
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<std::optional<Fingerprint>> last_arrived_;  // guarded by mutex_
  std::atomic<bool> broken_{false};
  std::string broken_reason_;  // guarded by mutex_
};

/// One rank's part in one collective on a FakeRendezvous. See Note [Phases].
class RendezvousRound {
 public:
  /// Checks that the world and group are usable and claims this rank's post
  /// for `fingerprint.seq`. `timeout` covers every phase of the round.
  RendezvousRound(FakeRendezvous& rendezvous, int64_t group_rank, Fingerprint fingerprint,
                  std::chrono::milliseconds timeout);
  /// A round left before finish() (an exception) breaks the group, so that
  /// peers waiting for this rank fail at once.
  ~RendezvousRound();
  RendezvousRound(const RendezvousRound&) = delete;
  RendezvousRound& operator=(const RendezvousRound&) = delete;

  Post& mine() { return rendezvous_.post(group_rank_, seq_); }
  const Post& peer(int64_t group_rank) const { return rendezvous_.post(group_rank, seq_); }
  int64_t size() const { return rendezvous_.size(); }
  int64_t group_rank() const { return group_rank_; }

  /// First phase: publishes mine(), waits for every member, then checks that
  /// all issued the same fingerprint (throws c10::Error showing each one).
  void arrive();
  /// A later phase: waits until every member has reached it too.
  void sync();
  /// True when some member posted its own tensor (zero_copy), so readers must be done
  /// before anyone returns (one more sync()).
  bool any_zero_copy() const;
  /// Drops mine()'s tensor references once a sync() after the last read of
  /// them passed, so the caller's memory is not held until seq + 2.
  void release_inputs();
  /// Ends the round successfully.
  void finish() { finished_ = true; }

 private:
  FakeRendezvous& rendezvous_;
  const int64_t group_rank_;
  const uint64_t seq_;
  const std::chrono::milliseconds timeout_;
  const std::chrono::steady_clock::time_point deadline_;
  bool arrived_ = false;
  bool finished_ = false;
};

}  // namespace detail
}  // namespace dtensor
