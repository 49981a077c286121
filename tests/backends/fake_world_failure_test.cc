// The fake world's failure paths: a throwing rank aborts the others promptly,
// a missing rank is named after a timeout (or at once when it returned), and
// mismatched or invalid collectives fail with messages showing both sides.
#include <ATen/Functions.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "backends/fake/fake_world.h"

namespace dtensor {
namespace {

using std::chrono::milliseconds;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;

FakeWorldOptions short_timeout() { return {/*timeout=*/milliseconds(500)}; }
FakeWorldOptions long_timeout() { return {/*timeout=*/milliseconds(30000)}; }

// Runs the world and returns the message run_fake_world threw ("" if none).
std::string failure_of(int64_t n, const std::function<void(World&)>& fn,
                       const FakeWorldOptions& options) {
  try {
    run_fake_world(n, fn, options);
  } catch (const c10::Error& e) {
    return e.what_without_backtrace();
  }
  return "";
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Collects what each rank saw, for checks after the world ended.
struct Messages {
  void add(int64_t rank, const std::string& message) {
    std::lock_guard<std::mutex> lock(mutex);
    by_rank[rank] = message;
    changed.notify_all();
  }
  bool wait_for(size_t count, milliseconds limit) {
    std::unique_lock<std::mutex> lock(mutex);
    return changed.wait_for(lock, limit, [&] { return by_rank.size() >= count; });
  }
  std::mutex mutex;
  std::condition_variable changed;
  std::map<int64_t, std::string> by_rank;
};

TEST(FakeWorldFailureTest, ThrowingRankAbortsTheOthersPromptlyAndIsReportedAsRootCause) {
  Messages seen;
  const auto start = std::chrono::steady_clock::now();
  const std::string message = failure_of(
      4,
      [&](World& world) {
        auto comm = world.world_group();
        for (int step = 0; step < 1000; ++step) {
          if (world.rank() == 2 && step == 5) throw std::runtime_error("boom at step 5");
          at::Tensor t = at::ones({16});
          try {
            comm->all_reduce(t);
          } catch (const PeerFailureError& e) {
            seen.add(world.rank(), e.what_without_backtrace());
            throw;
          }
        }
      },
      long_timeout());
  EXPECT_LT(seconds_since(start), 5.0) << "the others waited for the 30 s timeout";
  EXPECT_THAT(message, StartsWith("[rank 2] "));
  EXPECT_THAT(message, HasSubstr("boom at step 5"));
  ASSERT_EQ(seen.by_rank.size(), 3u);
  for (const auto& [rank, text] : seen.by_rank) {
    EXPECT_THAT(text, AllOf(HasSubstr("all_reduce on fake group [0, 1, 2, 3]"),
                            HasSubstr("aborted because rank 2 failed: boom at step 5")));
  }
}

TEST(FakeWorldFailureTest, CollectivesIssuedAfterTheAbortFailAtOnce) {
  Messages seen;
  const std::string message = failure_of(
      2,
      [&](World& world) {
        if (world.rank() == 1) {
          TORCH_CHECK(false, "bad shape on rank 1");
        }
        std::this_thread::sleep_for(milliseconds(100));  // rank 1 has failed by now
        const auto start = std::chrono::steady_clock::now();
        try {
          world.world_group()->barrier();
        } catch (const PeerFailureError& e) {
          EXPECT_LT(seconds_since(start), 0.1);
          seen.add(0, e.what_without_backtrace());
          throw;
        }
      },
      long_timeout());
  EXPECT_THAT(message, StartsWith("[rank 1] bad shape on rank 1"));
  EXPECT_THAT(seen.by_rank[0], HasSubstr("barrier on fake group [0, 1]"));
  EXPECT_THAT(seen.by_rank[0], HasSubstr("aborted because rank 1 failed: bad shape on rank 1"));
}

TEST(FakeWorldFailureTest, ExceptionsOfAnyTypeAreReported) {
  EXPECT_THAT(failure_of(
                  3,
                  [](World& world) {
                    if (world.rank() == 1) throw 42;
                  },
                  long_timeout()),
              StartsWith("[rank 1] an exception of unknown type"));
}

TEST(FakeWorldFailureTest, SkippedCollectiveTimesOutNamingTheMissingRank) {
  Messages seen;
  const auto start = std::chrono::steady_clock::now();
  const std::string message = failure_of(
      3,
      [&](World& world) {
        auto comm = world.world_group();
        at::Tensor t = at::ones({4});
        comm->all_reduce(t);  // seq 0: everybody
        if (world.rank() == 2) {
          // Skips seq 1 but stays alive (blocked elsewhere) until the others gave up.
          EXPECT_TRUE(seen.wait_for(2, milliseconds(10000)));
          return;
        }
        try {
          comm->all_reduce(t, {ReduceOp::kMax});
        } catch (const c10::Error& e) {
          seen.add(world.rank(), e.what_without_backtrace());
          throw;
        }
      },
      short_timeout());
  EXPECT_LT(seconds_since(start), 5.0);
  EXPECT_THAT(message, AllOf(HasSubstr("timed out after 500 ms"), HasSubstr("global rank(s) [2]")));
  ASSERT_EQ(seen.by_rank.size(), 2u);
  // Whoever noticed first reports the timeout; the other may see the broken group.
  bool named = false;
  for (const auto& [rank, text] : seen.by_rank) {
    named = named || (text.find("waiting for global rank(s) [2] to arrive") != std::string::npos &&
                      text.find("all_reduce(max) Float[4] seq=1") != std::string::npos &&
                      text.find("its last collective on this group was all_reduce(sum) Float[4] "
                                "seq=0") != std::string::npos);
  }
  EXPECT_TRUE(named) << seen.by_rank.begin()->second;
}

TEST(FakeWorldFailureTest, RankReturningWithoutTheCollectiveFailsPeersWithoutTimeout) {
  const auto start = std::chrono::steady_clock::now();
  const std::string message = failure_of(
      3,
      [](World& world) {
        if (world.rank() == 2) return;
        at::Tensor t = at::ones({4});
        world.world_group()->all_reduce(t);
      },
      long_timeout());
  EXPECT_LT(seconds_since(start), 5.0);
  EXPECT_THAT(message, HasSubstr("global rank 2 returned from its function without issuing "
                                 "all_reduce(sum) Float[4] seq=0"));
  EXPECT_THAT(message, HasSubstr("it issued no collective on this group"));
}

TEST(FakeWorldFailureTest, PerCollectiveTimeoutOverridesTheWorldDefault) {
  const auto start = std::chrono::steady_clock::now();
  const std::string message = failure_of(
      2,
      [](World& world) {
        if (world.rank() == 1) {
          std::this_thread::sleep_for(milliseconds(1500));
          return;
        }
        world.world_group()->barrier({/*timeout=*/milliseconds(200)});
      },
      long_timeout());
  EXPECT_LT(seconds_since(start), 3.0);
  EXPECT_THAT(message, AllOf(StartsWith("[rank 0] "), HasSubstr("timed out after 200 ms"),
                             HasSubstr("barrier seq=0")));
}

// One row of the mismatch table: what rank 0 and rank 1 issue, and a piece of
// the fingerprint each must show in the error.
struct Mismatch {
  const char* name;
  std::function<void(Communicator&)> rank0;
  std::function<void(Communicator&)> rank1;
  const char* shown0;
  const char* shown1;
};

void all_reduce_of(Communicator& c, at::Tensor t, ReduceOp op) { c.all_reduce(t, {op}); }

TEST(FakeWorldFailureTest, MismatchedCollectivesShowWhatEachRankIssued) {
  const std::vector<Mismatch> table = {
      {"kind", [](Communicator& c) { all_reduce_of(c, at::ones({4}), ReduceOp::kSum); },
       [](Communicator& c) {
         at::Tensor out = at::empty({8});
         c.all_gather_into_tensor(out, at::ones({4}));
       },
       "all_reduce(sum) Float[4] seq=0", "all_gather_into_tensor Float[4] seq=0"},
      {"shape", [](Communicator& c) { all_reduce_of(c, at::ones({4}), ReduceOp::kSum); },
       [](Communicator& c) {
         all_reduce_of(c, at::ones({2, 2}), ReduceOp::kSum);
       },
       "all_reduce(sum) Float[4] seq=0", "all_reduce(sum) Float[2, 2] seq=0"},
      {"dtype", [](Communicator& c) { all_reduce_of(c, at::ones({4}), ReduceOp::kSum); },
       [](Communicator& c) { all_reduce_of(c, at::ones({4}, at::kDouble), ReduceOp::kSum); },
       "all_reduce(sum) Float[4]", "all_reduce(sum) Double[4]"},
      {"reduce op", [](Communicator& c) { all_reduce_of(c, at::ones({4}), ReduceOp::kSum); },
       [](Communicator& c) { all_reduce_of(c, at::ones({4}), ReduceOp::kMax); },
       "all_reduce(sum) Float[4]", "all_reduce(max) Float[4]"},
      {"root",
       [](Communicator& c) {
         at::Tensor t = at::ones({4});
         c.broadcast(t, {0});
       },
       [](Communicator& c) {
         at::Tensor t = at::ones({4});
         c.broadcast(t, {1});
       },
       "broadcast(root=0) Float[4]", "broadcast(root=1) Float[4]"},
  };
  for (const Mismatch& row : table) {
    SCOPED_TRACE(row.name);
    Messages seen;
    const std::string message = failure_of(
        2,
        [&](World& world) {
          auto comm = world.world_group();
          try {
            (world.rank() == 0 ? row.rank0 : row.rank1)(*comm);
          } catch (const c10::Error& e) {
            seen.add(world.rank(), e.what_without_backtrace());
            throw;
          }
        },
        short_timeout());
    EXPECT_THAT(message, AllOf(HasSubstr("issued different collectives at seq=0"),
                               HasSubstr(std::string("global rank 0: ") + row.shown0),
                               HasSubstr(std::string("global rank 1: ") + row.shown1)));
    ASSERT_EQ(seen.by_rank.size(), 2u);  // both sides learn it, neither waits for a timeout
    for (const auto& [rank, text] : seen.by_rank) EXPECT_THAT(text, HasSubstr("<- differs"));
  }
}

TEST(FakeWorldFailureTest, AsyncErrorsSurfaceAtWaitAndTheGroupStaysBroken) {
  run_fake_world(
      2,
      [](World& world) {
        auto comm = world.world_group();
        at::Tensor t = at::ones({world.rank() + 1});
        WorkPtr work;
        ASSERT_NO_THROW(work = comm->all_reduce(t, {ReduceOp::kSum, {}, /*async_op=*/true}));
        EXPECT_TRUE(work->is_completed());
        EXPECT_THROW(work->wait(), c10::Error);
        at::Tensor u = at::ones({1});
        try {
          comm->all_reduce(u);
          ADD_FAILURE() << "a broken group accepted a collective";
        } catch (const PeerFailureError& e) {
          EXPECT_THAT(e.what_without_backtrace(), HasSubstr("unusable after an earlier failure"));
        }
        // Other groups are unaffected.
        at::Tensor v = at::ones({1});
        world.new_group({1, 0})->all_reduce(v);
        EXPECT_EQ(v.item().toFloat(), 2.0f);
      },
      short_timeout());
}

TEST(FakeWorldFailureTest, DisagreeingAllToAllSplitsAreShownPerRank) {
  const std::string message = failure_of(
      2,
      [](World& world) {
        at::Tensor input = at::ones({4, 2});
        at::Tensor output = at::empty({4, 2});
        AllToAllOptions options;
        options.input_split_sizes = {2, 2};
        options.output_split_sizes =
            world.rank() == 0 ? std::vector<int64_t>{1, 3} : std::vector<int64_t>{2, 2};
        world.world_group()->all_to_all_single(output, input, options);
      },
      short_timeout());
  EXPECT_THAT(message,
              AllOf(HasSubstr("split sizes disagree"),
                    HasSubstr("global rank 0 sends 2 rows to global rank 0, which expects 1"),
                    HasSubstr("global rank 0: [2, 2] / [1, 3]")));
}

TEST(FakeWorldFailureTest, InvalidArgumentsFailOnTheCallingRankAndLeaveTheGroupUsable) {
  run_fake_world(
      2,
      [](World& world) {
        auto comm = world.world_group();
        at::Tensor input = at::ones({3, 2});
        at::Tensor wrong_size = at::empty({5, 2});
        at::Tensor wrong_dtype = at::empty({6, 2}, at::kDouble);
        at::Tensor strided = at::ones({2, 6}).t();
        auto what = [](const std::function<void()>& call) -> std::string {
          try {
            call();
          } catch (const c10::Error& e) {
            return e.what_without_backtrace();
          }
          return "no error";
        };
        EXPECT_THAT(what([&] { comm->all_gather_into_tensor(wrong_size, input); }),
                    AllOf(HasSubstr("all_gather_into_tensor on fake group [0, 1]"),
                          HasSubstr("output has shape [5, 2] but must be [6, 2]")));
        EXPECT_THAT(what([&] { comm->all_gather_into_tensor(wrong_dtype, input); }),
                    HasSubstr("output dtype Double differs from input dtype Float"));
        EXPECT_THAT(what([&] { comm->all_reduce(strided); }), HasSubstr("is not contiguous"));
        at::Tensor ints = at::ones({2}, at::kInt);
        EXPECT_THAT(what([&] { comm->all_reduce(ints, {ReduceOp::kAvg}); }),
                    HasSubstr("avg needs a floating-point tensor"));
        EXPECT_EQ(comm->sequence_number(), 0u);  // rejected calls are not collectives
        at::Tensor meta = at::empty({2}, at::TensorOptions().device(c10::kMeta));
        EXPECT_THAT(what([&] { comm->all_reduce(meta); }),
                    HasSubstr("use solo_world for meta tensors"));
        EXPECT_EQ(comm->sequence_number(), 1u);  // this one was issued (and refused by the backend)
        at::Tensor out = at::empty({6, 2});
        comm->all_gather_into_tensor(out, input);
        EXPECT_TRUE(at::equal(out, at::ones({6, 2})));
      },
      short_timeout());
}

TEST(FakeWorldFailureTest, GroupOfOneIsTheIdentity) {
  run_fake_world(
      3,
      [](World& world) {
        auto alone = world.new_group({world.rank()});
        EXPECT_EQ(alone->size(), 1);
        const at::Tensor original =
            at::add(at::arange(6, at::kFloat).reshape({3, 2}), world.rank());
        for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax, ReduceOp::kProduct}) {
          at::Tensor t = original.clone();
          alone->all_reduce(t, {op});
          EXPECT_TRUE(at::equal(t, original));
        }
        at::Tensor out = at::empty({3, 2});
        alone->all_gather_into_tensor(out, original);
        EXPECT_TRUE(at::equal(out, original));
        alone->reduce_scatter_tensor(out.zero_(), original, {ReduceOp::kAvg});
        EXPECT_TRUE(at::equal(out, original));
        alone->all_to_all_single(out.zero_(), original);
        EXPECT_TRUE(at::equal(out, original));
        alone->scatter(out.zero_(), {original}, {0});
        EXPECT_TRUE(at::equal(out, original));
        alone->barrier();
      },
      short_timeout());
}

TEST(FakeWorldFailureTest, InvalidWorldArgumentsAreRejected) {
  EXPECT_THROW(run_fake_world(0, [](World&) {}), c10::Error);
  EXPECT_THROW(run_fake_world(2, [](World&) {}, {/*timeout=*/milliseconds(0)}), c10::Error);
  EXPECT_THROW(run_fake_world(2, nullptr), c10::Error);
}

}  // namespace
}  // namespace dtensor
