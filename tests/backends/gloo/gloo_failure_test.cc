// Failures of a Gloo job surface instead of hanging: a rank that dies makes
// its peers' collectives fail with messages naming collective, group and
// rank; a dead store host makes store work fail with an error, never a
// SIGPIPE death (workers start with SIGPIPE's default disposition, as under
// torchrun: Note [SIGPIPE]); a skipped collective times out; a failed
// expectation in a rank shows up in the parent with that rank's output; a
// hung job is killed whole.
#include <ATen/ATen.h>
#include <dirent.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "backends/gloo/gloo_world.h"
#include "backends/launch/env.h"
#include "backends/world.h"
#include "tests/backends/gloo/multiprocess.h"

namespace dtensor::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr const char* kDyingRankVar = "DTENSOR_TEST_DYING_RANK";

#define SKIP_UNLESS_WORKER() \
  if (!is_worker()) GTEST_SKIP() << "runs as a rank of a GlooFailure test"
#define SKIP_IN_WORKER() \
  if (is_worker()) GTEST_SKIP() << "parent test; this process is a rank"

int64_t env_int(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? -1 : std::atoll(value);
}

// Runs an all_reduce expected to fail; prints "SURVIVOR_ERROR <ms> <message>".
void expect_all_reduce_fails(World& world) {
  at::Tensor t = at::ones({1024});
  const auto start = std::chrono::steady_clock::now();
  try {
    world.world_group()->all_reduce(t);
    ADD_FAILURE() << "all_reduce succeeded although a peer is gone";
  } catch (const c10::Error& e) {
    const auto ms =
        std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - start).count();
    const std::string message = e.what_without_backtrace();
    std::printf("SURVIVOR_ERROR %lld ms: %s\n", static_cast<long long>(ms), message.c_str());
    std::fflush(stdout);
    EXPECT_NE(message.find("all_reduce on gloo group [0, 1, 2, 3]"), std::string::npos);
    EXPECT_NE(message.find("global rank " + std::to_string(world.rank())), std::string::npos);
  }
}

// ---- worker side ------------------------------------------------------------

// The rank named by DTENSOR_TEST_DYING_RANK exits abruptly (as a crash would)
// after a first successful all_reduce; the others' next all_reduce must fail.
TEST(GlooFailureWorker, PeerDies) {
  SKIP_UNLESS_WORKER();
  auto world = make_worker_world();
  at::Tensor warmup = at::ones({4});
  world->world_group()->all_reduce(warmup);
  ASSERT_TRUE(at::equal(warmup, at::full({4}, 4.0f)));
  if (world->rank() == env_int(kDyingRankVar)) {
    std::fflush(nullptr);
    _exit(7);
  }
  expect_all_reduce_fails(*world);
}

// Rank 1 never issues the all_reduce; rank 0's, with a timeout of its own,
// times out with a hint (the world's timeout stays long, so that a slow start
// under load does not fail the group's creation).
TEST(GlooFailureWorker, PeerSkipsCollective) {
  SKIP_UNLESS_WORKER();
  auto world = make_worker_world();
  world->world_group()->barrier();
  if (world->rank() == 1) {
    std::this_thread::sleep_for(seconds(4));
    return;
  }
  at::Tensor t = at::ones({4});
  try {
    world->world_group()->all_reduce(t, {ReduceOp::kSum, milliseconds(1500)});
    ADD_FAILURE() << "all_reduce completed without rank 1";
  } catch (const c10::Error& e) {
    const std::string message = e.what_without_backtrace();
    std::printf("TIMEOUT_ERROR %s\n", message.c_str());
    EXPECT_NE(message.find("all_reduce on gloo group [0, 1] (group rank 0 of 2, global rank 0) "
                           "with timeout 1500 ms failed"),
              std::string::npos);
    EXPECT_NE(message.find("imed out"), std::string::npos);
    EXPECT_NE(message.find("same collectives in the same order"), std::string::npos);
  }
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Rank 0, which serves the store, dies after a first all_reduce. Once the
// survivors' next all_reduce has failed (rank 0 is gone), every store
// operation writes to the closed store socket: creating groups without rank
// 0 must fail with an error naming the group, the rank and the store, and
// the exit rendezvous (world destruction) must end quietly.
TEST(GlooFailureWorker, StoreHostDies) {
  SKIP_UNLESS_WORKER();
  auto world = make_worker_world();
  at::Tensor warmup = at::ones({4});
  world->world_group()->all_reduce(warmup);
  if (world->rank() == 0) {
    std::fflush(nullptr);
    _exit(7);
  }
  expect_all_reduce_fails(*world);
  const std::vector<std::vector<int64_t>> groups = {{1, 2, 3}, {1, 2}, {2, 3}, {1, 3}};
  for (const auto& ranks : groups) {
    if (std::find(ranks.begin(), ranks.end(), world->rank()) == ranks.end()) continue;
    try {
      world->new_group(ranks);
      ADD_FAILURE() << "new_group succeeded although the store host is gone";
    } catch (const c10::Error& e) {
      const std::string message = e.what_without_backtrace();
      std::printf("STORE_ERROR %s\n", message.c_str());
      EXPECT_TRUE(contains(message,
                           "creating gloo group " + std::string(c10::str(c10::IntArrayRef(ranks)))))
          << message;
      EXPECT_TRUE(contains(message, "on global rank " + std::to_string(world->rank()))) << message;
      EXPECT_TRUE(contains(message, "the store at 127.0.0.1:")) << message;
    }
  }
  std::fflush(stdout);
}

// The thread ids of this process.
std::set<std::string> thread_ids() {
  std::set<std::string> ids;
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return ids;
  while (const dirent* entry = readdir(dir)) {
    if (entry->d_name[0] != '.') ids.insert(entry->d_name);
  }
  closedir(dir);
  return ids;
}

// Whether thread `tid` of this process blocks SIGPIPE; nullopt when it is gone.
std::optional<bool> thread_blocks_sigpipe(const std::string& tid) {
  std::ifstream status("/proc/self/task/" + tid + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("SigBlk:", 0) == 0) {
      return (std::stoull(line.substr(7), nullptr, 16) & (1ull << (SIGPIPE - 1))) != 0;
    }
  }
  return std::nullopt;
}

// Note [SIGPIPE]: every thread started by creating the world and its groups
// and by their first collectives (Gloo's device loop and worker threads, the
// TCPStore server on rank 0) blocks SIGPIPE, so its writes to a dead peer
// fail with EPIPE; the calling thread's mask is as it was. This is what keeps
// the survivors of PeerDies alive whichever thread meets the closed socket
// first.
TEST(GlooFailureWorker, ThreadsStartedByTheWorldBlockSigpipe) {
  SKIP_UNLESS_WORKER();
  const std::set<std::string> before = thread_ids();
  auto world = make_worker_world();
  world->world_group();
  world->new_group({0, 1});
  // Collectives too: a thread started lazily by the first one would inherit
  // the caller's mask, outside any block.
  at::Tensor t = at::ones({4});
  world->world_group()->all_reduce(t);
  world->new_group({0, 1})->barrier();
  const std::set<std::string> after = thread_ids();
  int started = 0;
  for (const std::string& tid : after) {
    if (before.count(tid) != 0) continue;
    const std::optional<bool> blocks = thread_blocks_sigpipe(tid);
    if (!blocks) continue;
    ++started;
    EXPECT_TRUE(*blocks) << "thread " << tid << " started by the gloo world lets SIGPIPE through";
  }
  std::printf("STARTED_THREADS %d\n", started);
  EXPECT_GE(started, 3) << "the device loop and two workers per group at least";
  EXPECT_FALSE(thread_blocks_sigpipe(std::to_string(gettid())).value_or(true));
  world->world_group()->barrier();
}

// Rank 0 never starts its store: the others' world creation fails within
// their connect timeout, naming the store's address and the likely cause.
TEST(GlooFailureWorker, StoreHostNeverStarts) {
  SKIP_UNLESS_WORKER();
  const LaunchEnv env = launch_env_from_environment();
  if (env.rank == 0) _exit(7);
  GlooWorldOptions options;
  options.connect_timeout = milliseconds(3000);
  const auto start = std::chrono::steady_clock::now();
  try {
    gloo_world(env, options);
    ADD_FAILURE() << "gloo_world connected although rank 0 never served the store";
  } catch (const c10::Error& e) {
    const auto ms =
        std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - start).count();
    const std::string message = e.what_without_backtrace();
    std::printf("CONNECT_ERROR %lld ms: %s\n", static_cast<long long>(ms), message.c_str());
    EXPECT_TRUE(contains(message, "rendezvous store at 127.0.0.1:" + std::to_string(env.port)))
        << message;
    EXPECT_TRUE(contains(message, "is rank 0 running")) << message;
  }
  std::fflush(stdout);
}

TEST(GlooFailureWorker, ExpectationFailsOnRankOne) {
  SKIP_UNLESS_WORKER();
  auto world = make_worker_world();
  at::Tensor t = at::full({2}, static_cast<double>(world->rank()));
  world->world_group()->all_reduce(t, {ReduceOp::kMax});
  if (world->rank() == 1) {
    EXPECT_EQ(t[0].item<double>(), 42.0) << "deliberate failure on rank 1";
  }
}

TEST(GlooFailureWorker, Hangs) {
  SKIP_UNLESS_WORKER();
  for (;;) pause();
}

// ---- parent side ------------------------------------------------------------

constexpr long long kSurvivorTimeoutMs = 10000;

WorkerOptions survivors_options(int dying_rank) {
  WorkerOptions options;
  options.kill_on_failure = false;  // let the survivors meet the failure themselves
  options.collective_timeout = milliseconds(kSurvivorTimeoutMs);
  options.job_timeout = seconds(60);
  options.env = {{kDyingRankVar, std::to_string(dying_rank)}};
  return options;
}

void expect_survivors_failed_cleanly(const launch::LaunchResult& result, int dying_rank) {
  ASSERT_EQ(result.ranks.size(), 4u) << result.report();
  EXPECT_FALSE(result.timed_out) << result.report();
  for (const auto& rank : result.ranks) {
    if (rank.rank == dying_rank) {
      EXPECT_TRUE(rank.exited && rank.exit_code == 7) << result.report();
    } else {
      EXPECT_TRUE(rank.ok()) << "survivor rank " << rank.rank << ":\n" << result.report();
      const auto at = rank.output.find("SURVIVOR_ERROR ");
      ASSERT_NE(at, std::string::npos) << result.report();
      const long long ms = std::stoll(rank.output.substr(at + 15));
      EXPECT_LT(ms, kSurvivorTimeoutMs) << "rank " << rank.rank << " noticed the death late";
    }
  }
  expect_no_leftovers(result);
}

TEST(GlooFailure, NonZeroRankDiesOthersFailWithinTimeout) {
  SKIP_IN_WORKER();
  const auto result = run_worker_test(4, "GlooFailureWorker.PeerDies", survivors_options(2));
  expect_survivors_failed_cleanly(result, 2);
  std::printf("job with a dead rank 2 ended in %lld ms\n",
              static_cast<long long>(result.elapsed.count()));
}

TEST(GlooFailure, StoreHostRankZeroDiesOthersFailWithinTimeout) {
  SKIP_IN_WORKER();
  const auto result = run_worker_test(4, "GlooFailureWorker.PeerDies", survivors_options(0));
  expect_survivors_failed_cleanly(result, 0);
  std::printf("job with a dead rank 0 ended in %lld ms\n",
              static_cast<long long>(result.elapsed.count()));
}

// Each survivor reports the failed all_reduce and one error per group it
// tried to create on the dead store, and exits 0: none dies of SIGPIPE.
TEST(GlooFailure, StoreHostDiesSurvivorsReportEveryStoreError) {
  SKIP_IN_WORKER();
  const auto result = run_worker_test(4, "GlooFailureWorker.StoreHostDies", survivors_options(0));
  expect_survivors_failed_cleanly(result, 0);
  // Each survivor is in 3 of the 4 groups {1,2,3}, {1,2}, {2,3}, {1,3}.
  for (const auto& rank : result.ranks) {
    if (rank.rank == 0) continue;
    int errors = 0;
    for (size_t at = rank.output.find("STORE_ERROR "); at != std::string::npos;
         at = rank.output.find("STORE_ERROR ", at + 1)) {
      ++errors;
    }
    EXPECT_EQ(errors, 3) << result.report();
  }
}

TEST(GlooFailure, ThreadsStartedByTheWorldBlockSigpipe) {
  SKIP_IN_WORKER();
  EXPECT_WORKERS_OK(run_worker_test(2, "GlooFailureWorker.ThreadsStartedByTheWorldBlockSigpipe"));
}

TEST(GlooFailure, StoreHostNeverStartsOthersFailWithinConnectTimeout) {
  SKIP_IN_WORKER();
  WorkerOptions options = survivors_options(0);
  const auto result = run_worker_test(3, "GlooFailureWorker.StoreHostNeverStarts", options);
  ASSERT_EQ(result.ranks.size(), 3u) << result.report();
  EXPECT_FALSE(result.timed_out) << result.report();
  for (const auto& rank : result.ranks) {
    if (rank.rank == 0) {
      EXPECT_TRUE(rank.exited && rank.exit_code == 7) << result.report();
      continue;
    }
    EXPECT_TRUE(rank.ok()) << result.report();
    const auto at = rank.output.find("CONNECT_ERROR ");
    ASSERT_NE(at, std::string::npos) << result.report();
    // The 3 s connect timeout plus c10d's last retry and the process start.
    EXPECT_LT(std::stoll(rank.output.substr(at + 14)), 20000) << result.report();
  }
  expect_no_leftovers(result);
}

TEST(GlooFailure, SkippedCollectiveTimesOutWithHint) {
  SKIP_IN_WORKER();
  WorkerOptions options;
  options.collective_timeout = seconds(20);
  options.kill_on_failure = false;
  const auto result = run_worker_test(2, "GlooFailureWorker.PeerSkipsCollective", options);
  EXPECT_TRUE(result.ok()) << result.report();
  EXPECT_NE(result.ranks.at(0).output.find("TIMEOUT_ERROR"), std::string::npos) << result.report();
}

TEST(GlooFailure, WorkerExpectationFailureSurfacesWithItsOutput) {
  SKIP_IN_WORKER();
  const auto result = run_worker_test(2, "GlooFailureWorker.ExpectationFailsOnRankOne");
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.first_failed_rank, 1) << result.report();
  const std::string report = result.report();
  EXPECT_NE(report.find("rank 1 failed first: exit code 1"), std::string::npos) << report;
  EXPECT_NE(report.find("deliberate failure on rank 1"), std::string::npos) << report;
  EXPECT_NE(report.find("[  FAILED  ] GlooFailureWorker.ExpectationFailsOnRankOne"),
            std::string::npos)
      << report;
  expect_no_leftovers(result);
}

TEST(GlooFailure, HungJobIsKilledAtTheTimeout) {
  SKIP_IN_WORKER();
  WorkerOptions options;
  options.job_timeout = seconds(3);
  const auto result = run_worker_test(2, "GlooFailureWorker.Hangs", options);
  EXPECT_TRUE(result.timed_out) << result.report();
  EXPECT_FALSE(result.ok());
  EXPECT_LT(result.elapsed, seconds(10)) << result.report();
  for (const auto& rank : result.ranks) EXPECT_TRUE(rank.stopped_by_launcher) << result.report();
  expect_no_leftovers(result);
}

}  // namespace
}  // namespace dtensor::testing
