// Phase counters, waiting with abort/timeout/exit detection, fingerprint
// checks and the error messages of the fake world's rendezvous.
#include "backends/fake/rendezvous.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <sstream>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace dtensor {
namespace detail {

// Note [Phases]
// Every collective is one or more phases. In a phase each member increments
// its own counter and waits until every member's counter reached the same
// value; the counters of a group stay aligned because all members run the
// same collectives (checked by the fingerprint at the first phase, "arrive").
// Data moves between phases: a member reads its peers' posts and writes only
// its own output, so no member ever writes memory another one reads, except:
//  - Staged inputs: a small input is first copied into a buffer the member
//    owns, posted at parity seq % 2. The member rewrites that buffer at
//    seq + 2 at the earliest, after arriving at seq + 1, which implies that
//    every peer finished seq. So a staged collective is a single phase.
//  - Zero-copy inputs: a large input is posted as is, so its owner must not
//    return (and let the caller modify it) until every reader is done: one
//    more phase at the end ("finish reading"), taken when any member posted a
//    zero-copy input, a fact every member sees identically after arriving.
// Waiting spins briefly, then blocks on a condition variable: with more rank
// threads than cores (the usual case here) spinning only steals the CPU from
// the rank everyone waits for.

namespace {

std::string list_string(const std::vector<int64_t>& values) {
  std::ostringstream out;
  out << c10::IntArrayRef(values);
  return out.str();
}

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

// Busy polls before yielding: only when every rank can have its own core.
int pause_iterations_for(int64_t world_size) {
  const int64_t cores = std::max<int64_t>(1, std::thread::hardware_concurrency());
  return world_size <= cores ? 2000 : 0;
}

// Yields before blocking: a yield hands the core to a rank that has work,
// cheaper than a futex sleep and wake-up when the wait is short.
constexpr int kYieldIterations = 64;

}  // namespace

bool Fingerprint::operator==(const Fingerprint& other) const {
  return kind == other.kind && seq == other.seq && dtype == other.dtype &&
         device_type == other.device_type && shape == other.shape && reduce_op == other.reduce_op &&
         root == other.root;
}

std::string Fingerprint::to_string() const {
  std::ostringstream out;
  out << collective_name(kind);
  if (reduce_op) out << '(' << reduce_op_name(*reduce_op) << ')';
  if (root) out << "(root=" << *root << ')';
  if (kind != CollectiveKind::kBarrier) {
    out << ' ' << c10::toString(dtype) << list_string(shape);
    if (device_type != c10::DeviceType::CPU) out << " on " << device_type;
  }
  out << " seq=" << seq;
  return out.str();
}

FakeRendezvous::FakeRendezvous(std::vector<int64_t> ranks, std::shared_ptr<FakeWorldStatus> status,
                               std::shared_ptr<PhaseFence> fence)
    : ranks_(std::move(ranks)),
      status_(std::move(status)),
      pause_iterations_(pause_iterations_for(status_->world_size())),
      fence_(std::move(fence)),
      phase_(std::make_unique<Counter[]>(ranks_.size())),
      last_arrived_(ranks_.size()) {
  posts_[0].resize(ranks_.size());
  posts_[1].resize(ranks_.size());
  status_->add_wakeable(this);
}

FakeRendezvous::~FakeRendezvous() { status_->remove_wakeable(this); }

std::string FakeRendezvous::describe(CollectiveKind kind, int64_t group_rank) const {
  std::ostringstream out;
  out << collective_name(kind) << " on fake group " << list_string(ranks_) << " (group rank "
      << group_rank << " of " << size() << ", global rank " << ranks_[group_rank] << ")";
  return out.str();
}

void FakeRendezvous::check_usable(CollectiveKind kind, int64_t group_rank) const {
  if (status_->aborted()) {
    throw_peer_failure(describe(kind, group_rank) + ": the fake world was aborted because " +
                       status_->abort_reason());
  }
  if (broken_.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(mutex_);
    throw_peer_failure(describe(kind, group_rank) +
                       ": this group is unusable after an earlier failure: " + broken_reason_);
  }
}

void FakeRendezvous::mark_broken(const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    mark_broken_locked(reason);
  }
  cv_.notify_all();
}

void FakeRendezvous::mark_broken_locked(const std::string& reason) {
  if (broken_.load(std::memory_order_relaxed)) return;
  broken_reason_ = reason;
  broken_.store(true, std::memory_order_release);
}

void FakeRendezvous::wake_all() {
  { std::lock_guard<std::mutex> lock(mutex_); }  // waiters are in wait() or will re-check
  cv_.notify_all();
}

bool FakeRendezvous::all_reached(uint64_t target) const {
  for (int64_t r = 0; r < size(); ++r) {
    if (counter(r) < target) return false;
  }
  return true;
}

bool FakeRendezvous::spin_until_reached(uint64_t target) const {
  for (int i = 0; i < pause_iterations_; ++i) {
    if (all_reached(target)) return true;
    cpu_relax();
  }
  for (int i = 0; i < kYieldIterations; ++i) {
    if (all_reached(target)) return true;
    std::this_thread::yield();
  }
  return all_reached(target);
}

void FakeRendezvous::arrive(int64_t group_rank, uint64_t target, const Fingerprint* fingerprint) {
  bool complete = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (fingerprint != nullptr) last_arrived_[group_rank] = *fingerprint;
    phase_[group_rank].value.store(target, std::memory_order_release);
    complete = all_reached(target);
  }
  // Only the last member to reach a phase can release its waiters.
  if (complete) cv_.notify_all();
}

void FakeRendezvous::wait(int64_t group_rank, uint64_t target, const Fingerprint& fingerprint,
                          bool first_phase, std::chrono::steady_clock::time_point deadline,
                          std::chrono::milliseconds timeout) {
  if (spin_until_reached(target)) return;
  std::unique_lock<std::mutex> lock(mutex_);
  while (!all_reached(target)) {
    throw_if_failed(lock, group_rank, target, fingerprint);
    if (cv_.wait_until(lock, deadline) == std::cv_status::timeout && !all_reached(target)) {
      throw_if_failed(lock, group_rank, target, fingerprint);
      fail_timeout(lock, group_rank, target, fingerprint, first_phase, timeout);
    }
  }
}

void FakeRendezvous::throw_if_failed(std::unique_lock<std::mutex>& lock, int64_t group_rank,
                                     uint64_t target, const Fingerprint& fingerprint) {
  if (status_->aborted()) {
    lock.unlock();
    throw_peer_failure(describe(fingerprint.kind, group_rank) +
                       ": the fake world was aborted because " + status_->abort_reason());
  }
  if (broken_.load(std::memory_order_acquire)) {
    std::string reason = broken_reason_;
    lock.unlock();
    throw_peer_failure(describe(fingerprint.kind, group_rank) +
                       ": this group is unusable after an earlier failure: " + reason);
  }
  for (int64_t r = 0; r < size(); ++r) {
    if (counter(r) >= target || !status_->exited(ranks_[r])) continue;
    std::string message = describe(fingerprint.kind, group_rank) + ": global rank " +
                          std::to_string(ranks_[r]) +
                          " returned from its function without issuing " + fingerprint.to_string() +
                          " on this group (" + missing_rank_status(r) +
                          "). Every member must issue the same collectives in the same order.";
    mark_broken_locked(message);
    lock.unlock();
    cv_.notify_all();
    TORCH_CHECK(false, message);
  }
}

std::string FakeRendezvous::missing_rank_status(int64_t group_rank) const {
  const std::optional<Fingerprint>& last = last_arrived_[group_rank];
  if (!last) return "it issued no collective on this group";
  return "its last collective on this group was " + last->to_string();
}

void FakeRendezvous::fail_timeout(std::unique_lock<std::mutex>& lock, int64_t group_rank,
                                  uint64_t target, const Fingerprint& fingerprint, bool first_phase,
                                  std::chrono::milliseconds timeout) {
  std::vector<int64_t> missing;
  std::vector<int64_t> present;
  std::ostringstream details;
  for (int64_t r = 0; r < size(); ++r) {
    if (counter(r) >= target) {
      present.push_back(ranks_[r]);
      continue;
    }
    missing.push_back(ranks_[r]);
    details << "; global rank " << ranks_[r] << ": "
            << (first_phase ? missing_rank_status(r) : "arrived but has not finished reading");
  }
  std::ostringstream out;
  out << describe(fingerprint.kind, group_rank) << ": timed out after " << timeout.count()
      << " ms in " << fingerprint.to_string() << " waiting for global rank(s) "
      << list_string(missing) << (first_phase ? " to arrive" : " to finish") << details.str()
      << ". Arrived and waiting in this collective: global rank(s) " << list_string(present)
      << ". Every member must issue the same collectives in the same order: check whether the "
         "missing rank(s) skipped this collective or are blocked elsewhere, or raise the "
         "timeout (FakeWorldOptions::timeout or the collective's options.timeout).";
  std::string message = out.str();
  mark_broken_locked(message);
  lock.unlock();
  cv_.notify_all();
  TORCH_CHECK(false, message);
}

void FakeRendezvous::check_fingerprints(int64_t group_rank, uint64_t seq) {
  const Fingerprint& mine = post(group_rank, seq).fingerprint;
  bool same = true;
  for (int64_t r = 0; r < size() && same; ++r) same = post(r, seq).fingerprint == mine;
  if (same) return;
  std::ostringstream out;
  out << describe(mine.kind, group_rank)
      << ": the members issued different collectives at seq=" << seq << " of this group:";
  for (int64_t r = 0; r < size(); ++r) {
    const Fingerprint& theirs = post(r, seq).fingerprint;
    out << "\n  global rank " << ranks_[r] << ": " << theirs.to_string()
        << (theirs == mine ? "" : "   <- differs from this rank");
  }
  out << "\nEvery member must issue the same collective (kind, dtype, shape, reduce op, root) "
         "in the same order.";
  std::string message = out.str();
  mark_broken(message);
  TORCH_CHECK(false, message);
}

RendezvousRound::RendezvousRound(FakeRendezvous& rendezvous, int64_t group_rank,
                                 Fingerprint fingerprint, std::chrono::milliseconds timeout)
    : rendezvous_(rendezvous),
      group_rank_(group_rank),
      seq_(fingerprint.seq),
      timeout_(timeout),
      deadline_(std::chrono::steady_clock::now() + timeout) {
  rendezvous_.check_usable(fingerprint.kind, group_rank);
  mine() = Post{};
  mine().fingerprint = std::move(fingerprint);
}

RendezvousRound::~RendezvousRound() {
  if (finished_) return;
  rendezvous_.mark_broken("global rank " + std::to_string(rendezvous_.ranks()[group_rank_]) +
                          " failed inside " + mine().fingerprint.to_string());
}

void RendezvousRound::arrive() {
  TORCH_INTERNAL_ASSERT(!arrived_, "arrive() called twice in one round");
  arrived_ = true;
  const uint64_t target = rendezvous_.counter(group_rank_) + 1;
  const Fingerprint& fingerprint = mine().fingerprint;
  if (rendezvous_.fence_) rendezvous_.fence_->record(group_rank_, target);
  rendezvous_.arrive(group_rank_, target, &fingerprint);
  rendezvous_.wait(group_rank_, target, fingerprint, /*first_phase=*/true, deadline_, timeout_);
  rendezvous_.check_fingerprints(group_rank_, seq_);
  if (rendezvous_.fence_) rendezvous_.fence_->wait_all(group_rank_, target);
}

void RendezvousRound::sync() {
  TORCH_INTERNAL_ASSERT(arrived_, "sync() before arrive()");
  const uint64_t target = rendezvous_.counter(group_rank_) + 1;
  if (rendezvous_.fence_) rendezvous_.fence_->record(group_rank_, target);
  rendezvous_.arrive(group_rank_, target, nullptr);
  rendezvous_.wait(group_rank_, target, mine().fingerprint, /*first_phase=*/false, deadline_,
                   timeout_);
  if (rendezvous_.fence_) rendezvous_.fence_->wait_all(group_rank_, target);
}

void RendezvousRound::release_inputs() {
  mine().input = at::Tensor();
  mine().inputs.clear();
}

bool RendezvousRound::any_zero_copy() const {
  for (int64_t r = 0; r < size(); ++r) {
    if (peer(r).zero_copy) return true;
  }
  return false;
}

}  // namespace detail
}  // namespace dtensor
