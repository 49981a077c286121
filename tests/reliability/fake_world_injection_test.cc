// Failure injection in the fake world, table-driven over every collective,
// the world group and a sub-group, and the failing rank (first or last):
// a rank throws before, during (while its peers wait in the collective) and
// after a collective; a rank returns early; a rank issues an extra
// collective; a rank stalls past the timeout. Every case must end with a
// c10::Error naming the failing or missing rank and the collective, every
// peer's error must name them too, and no rank thread may outlive
// run_fake_world. Hangs are caught by Bazel's test timeout; nothing here
// measures time.
#include <ATen/Functions.h>
#include <dirent.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "backends/fake/fake_world.h"

namespace dtensor {
namespace {

using std::chrono::milliseconds;
using ::testing::HasSubstr;

// Threads of this process, from /proc/self/task.
int thread_count() {
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return -1;
  int n = 0;
  while (dirent* entry = readdir(dir)) {
    if (entry->d_name[0] != '.') ++n;
  }
  closedir(dir);
  return n;
}

// Issues one valid collective of `kind` on `comm`.
void issue(CollectiveKind kind, Communicator& comm) {
  const int64_t n = comm.size();
  switch (kind) {
    case CollectiveKind::kAllReduce: {
      at::Tensor t = at::ones({4});
      comm.all_reduce(t);
      return;
    }
    case CollectiveKind::kAllGatherIntoTensor: {
      at::Tensor out = at::empty({4 * n});
      comm.all_gather_into_tensor(out, at::ones({4}));
      return;
    }
    case CollectiveKind::kReduceScatterTensor: {
      at::Tensor out = at::empty({4});
      comm.reduce_scatter_tensor(out, at::ones({4 * n}));
      return;
    }
    case CollectiveKind::kAllToAllSingle: {
      at::Tensor out = at::empty({2 * n});
      comm.all_to_all_single(out, at::ones({2 * n}));
      return;
    }
    case CollectiveKind::kBroadcast: {
      at::Tensor t = at::ones({4});
      comm.broadcast(t);
      return;
    }
    case CollectiveKind::kScatter: {
      at::Tensor out = at::empty({4});
      std::vector<at::Tensor> inputs;
      if (comm.rank() == 0) inputs.assign(static_cast<size_t>(n), at::ones({4}));
      comm.scatter(out, inputs);
      return;
    }
    case CollectiveKind::kBarrier:
      comm.barrier();
      return;
    default:
      throw std::logic_error("issue: unhandled collective kind");
  }
}

const CollectiveKind kKinds[] = {
    CollectiveKind::kAllReduce, CollectiveKind::kAllGatherIntoTensor,
    CollectiveKind::kReduceScatterTensor, CollectiveKind::kAllToAllSingle,
    CollectiveKind::kBroadcast, CollectiveKind::kScatter, CollectiveKind::kBarrier};

enum class Fault {
  kThrowBefore,      // throws instead of issuing the collective
  kThrowDuring,      // throws inside the collective call once every peer issued it
  kThrowAfter,       // completes one collective, throws before the second
  kReturnEarly,      // returns without issuing the collective
  kExtraCollective,  // issues one more collective than its peers
  kStall,            // stays busy elsewhere until its peers timed out
};

const char* fault_name(Fault f) {
  switch (f) {
    case Fault::kThrowBefore: return "ThrowBefore";
    case Fault::kThrowDuring: return "ThrowDuring";
    case Fault::kThrowAfter: return "ThrowAfter";
    case Fault::kReturnEarly: return "ReturnEarly";
    case Fault::kExtraCollective: return "ExtraCollective";
    case Fault::kStall: return "Stall";
  }
  return "?";
}

struct Case {
  Fault fault;
  CollectiveKind kind;
  bool subgroup;  // the faulty collective runs on ranks {1, 2, 3} instead of all 4
  int64_t faulty_rank;
};

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  return std::string(fault_name(c.fault)) + "_" + collective_name(c.kind) +
         (c.subgroup ? "_subgroup" : "_world") + "_rank" + std::to_string(c.faulty_rank);
}

// What every rank saw, plus a latch the stalling rank waits on.
struct Shared {
  std::mutex mutex;
  std::condition_variable changed;
  std::map<int64_t, std::string> errors;  // rank -> message of the error it raised
  std::atomic<int> issued{0};             // peers that reported the faulty collective
};

// Throws from the faulty rank's observer once all its peers reported the
// collective, i.e. while they are inside it waiting for this rank.
class ThrowingObserver : public CollectiveObserver {
 public:
  ThrowingObserver(Shared& shared, int peers) : shared_(shared), peers_(peers) {}
  void on_collective(const CollectiveEvent& event) override {
    std::unique_lock<std::mutex> lock(shared_.mutex);
    shared_.changed.wait(lock, [&] { return shared_.issued.load() >= peers_; });
    throw std::runtime_error("injected failure inside " + std::string(collective_name(event.kind)));
  }

 private:
  Shared& shared_;
  int peers_;
};

// Counts peers issuing a collective (see ThrowingObserver).
class CountingObserver : public CollectiveObserver {
 public:
  explicit CountingObserver(Shared& shared) : shared_(shared) {}
  void on_collective(const CollectiveEvent&) override {
    std::lock_guard<std::mutex> lock(shared_.mutex);
    ++shared_.issued;
    shared_.changed.notify_all();
  }

 private:
  Shared& shared_;
};

constexpr int64_t kWorld = 4;

// Runs every collective once on a healthy world, so that threads LibTorch
// starts lazily (and keeps) exist before a test counts threads.
void warm_up() {
  static const bool done = [] {
    run_fake_world(kWorld, [](World& world) {
      for (CollectiveKind k : kKinds) issue(k, *world.world_group());
    });
    return true;
  }();
  (void)done;
}

class FakeWorldInjectionTest : public ::testing::TestWithParam<Case> {};

TEST_P(FakeWorldInjectionTest, EndsWithAnErrorNamingTheRankAndTheCollective) {
  const Case c = GetParam();
  const std::vector<int64_t> members =
      c.subgroup ? std::vector<int64_t>{1, 2, 3} : std::vector<int64_t>{0, 1, 2, 3};
  const std::string kind = collective_name(c.kind);
  const std::string rank_text = "rank " + std::to_string(c.faulty_rank);
  warm_up();
  const int threads_before = thread_count();
  Shared shared;
  const int peers = static_cast<int>(members.size()) - 1;
  FakeWorldOptions options;
  // Long enough never to fire in the cases that must not wait; short for kStall.
  options.timeout = c.fault == Fault::kStall ? milliseconds(300) : milliseconds(60000);

  std::string message;
  try {
    run_fake_world(kWorld, [&](World& world) {
      const bool member =
          std::find(members.begin(), members.end(), world.rank()) != members.end();
      if (!member) return;
      auto comm = world.new_group(members);
      const bool faulty = world.rank() == c.faulty_rank;
      try {
        if (c.fault == Fault::kThrowAfter || c.fault == Fault::kExtraCollective) issue(c.kind, *comm);
        if (faulty) {
          switch (c.fault) {
            case Fault::kThrowBefore:
            case Fault::kThrowAfter:
              throw std::runtime_error("injected failure before " + kind);
            case Fault::kReturnEarly:
              return;
            case Fault::kExtraCollective:
              issue(c.kind, *comm);
              return;
            case Fault::kStall: {
              std::unique_lock<std::mutex> lock(shared.mutex);
              shared.changed.wait(lock, [&] { return shared.errors.size() >= static_cast<size_t>(peers); });
              break;  // then issue it, late: the group is broken by now
            }
            case Fault::kThrowDuring: {
              ThrowingObserver thrower(shared, peers);
              auto registration = world.observers().add(&thrower);
              issue(c.kind, *comm);
              return;
            }
          }
          issue(c.kind, *comm);
          return;
        }
        if (c.fault == Fault::kExtraCollective) return;  // peers stop after the common one
        CountingObserver counter(shared);
        auto registration = world.observers().add(&counter);
        issue(c.kind, *comm);
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(shared.mutex);
        shared.errors[world.rank()] = e.what();
        shared.changed.notify_all();
        throw;
      }
    }, options);
  } catch (const c10::Error& e) {
    message = e.what_without_backtrace();
  }
  ASSERT_NE(message, "") << "run_fake_world returned normally";
  switch (c.fault) {
    case Fault::kThrowBefore:
    case Fault::kThrowAfter:
    case Fault::kThrowDuring:
      EXPECT_THAT(message, HasSubstr("[" + rank_text + "] injected failure"));
      EXPECT_THAT(message, HasSubstr(kind));
      for (const auto& [rank, text] : shared.errors) {
        if (rank == c.faulty_rank) continue;
        SCOPED_TRACE("rank " + std::to_string(rank));
        EXPECT_THAT(text, HasSubstr(kind + " on fake group"));
        EXPECT_THAT(text, HasSubstr("aborted because " + rank_text + " failed"));
      }
      EXPECT_EQ(shared.errors.size(), members.size()) << "every member raised an error";
      break;
    case Fault::kReturnEarly:
      EXPECT_THAT(message, HasSubstr(kind));
      EXPECT_THAT(message, HasSubstr("global " + rank_text + " returned from its function without issuing " + kind));
      break;
    case Fault::kExtraCollective:
      // The extra collective's rank reports the peers that returned.
      EXPECT_THAT(message, HasSubstr("[" + rank_text + "]"));
      EXPECT_THAT(message, HasSubstr(kind));
      EXPECT_THAT(message, HasSubstr("returned from its function without issuing"));
      break;
    case Fault::kStall:
      EXPECT_THAT(message, HasSubstr("timed out after 300 ms"));
      EXPECT_THAT(message, HasSubstr("global rank(s) [" + std::to_string(c.faulty_rank) + "]"));
      EXPECT_THAT(message, HasSubstr(kind));
      EXPECT_EQ(shared.errors.size(), members.size());
      break;
  }
  // A joined thread can still be listed in /proc/self/task for a moment (the
  // kernel wakes join() before it has released the task), so give the count
  // up to a second to settle; a thread left running never does.
  int threads_after = thread_count();
  for (int i = 0; i < 100 && threads_after != threads_before; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    threads_after = thread_count();
  }
  EXPECT_EQ(threads_after, threads_before) << "a thread outlived run_fake_world";
}

std::vector<Case> all_cases() {
  std::vector<Case> out;
  for (Fault f : {Fault::kThrowBefore, Fault::kThrowDuring, Fault::kThrowAfter, Fault::kReturnEarly,
                  Fault::kExtraCollective, Fault::kStall}) {
    for (CollectiveKind k : kKinds) {
      for (bool subgroup : {false, true}) {
        // First and last member: group rank 0 is the root of broadcast/scatter.
        for (int64_t r : {subgroup ? int64_t{1} : int64_t{0}, kWorld - 1}) out.push_back({f, k, subgroup, r});
      }
    }
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(AllFaults, FakeWorldInjectionTest, ::testing::ValuesIn(all_cases()), case_name);

// A rank that keeps issuing collectives after its peers all failed never
// blocks: each one fails at once with the root cause, and the world ends.
TEST(FakeWorldInjectionTest, RepeatedFailuresInOneProcessLeaveNoThreads) {
  warm_up();
  const int before = thread_count();
  for (int round = 0; round < 20; ++round) {
    EXPECT_THROW(run_fake_world(kWorld, [&](World& world) {
      auto comm = world.world_group();
      if (world.rank() == round % kWorld) throw std::runtime_error("round failure");
      for (int i = 0; i < 5; ++i) {
        at::Tensor t = at::ones({8});
        try {
          comm->all_reduce(t);
        } catch (const PeerFailureError&) {
        }
      }
    }), c10::Error);
  }
  EXPECT_EQ(thread_count(), before);
}

}  // namespace
}  // namespace dtensor
