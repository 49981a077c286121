// Checkpoint saves of a Gloo job whose rank is SIGKILLed at each point of the
// save (issue 35): afterwards the directory loads as exactly the previous
// checkpoint or the new one, never a mix, and no process is left. The fake
// world's version (a rank's function throwing there) is checkpoint_crash_test.
#include <gtest/gtest.h>
#include <signal.h>
#include <torch/utils.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "backends/world.h"
#include "core/checkpoint/checkpoint.h"
#include "core/dtensor.h"
#include "tests/backends/gloo/multiprocess.h"
#include "tests/core/checkpoint/versioned_state.h"

namespace dtensor {
namespace {

namespace fs = std::filesystem;
using checkpoint::SavePhase;

constexpr int kRanks = 4;

using checkpoint::test::versioned_weight;

// Worker: saves version 1, then version 2, during which rank
// DTENSOR_TEST_VICTIM SIGKILLs itself on reaching phase DTENSOR_TEST_PHASE.
TEST(CheckpointKillWorker, SaveTwiceVictimDiesInTheSecond) {
  if (!testing::is_worker()) GTEST_SKIP() << "runs as a rank of CheckpointKillTest";
  auto world = testing::make_worker_world();
  ScopedCurrentWorld current(*world);
  const std::string dir = std::getenv("DTENSOR_TEST_DIR");
  const std::string phase = std::getenv("DTENSOR_TEST_PHASE");
  const int64_t victim = std::atoll(std::getenv("DTENSOR_TEST_VICTIM"));
  auto mesh = DeviceMesh::init(c10::kCPU, {2, 2});
  for (int version : {1, 2}) {
    checkpoint::SaveOptions options;
    options.on_phase = [&](SavePhase reached) {
      if (version == 2 && world->rank() == victim &&
          phase == checkpoint::save_phase_name(reached)) {
        std::fflush(nullptr);
        raise(SIGKILL);
      }
    };
    checkpoint::save({{"w", distribute_tensor(versioned_weight(version), mesh, {Shard(0), Shard(1)})}}, dir,
                     options);
  }
}

struct KillCase {
  SavePhase phase;
  int victim;
};

class CheckpointKillTest : public ::testing::TestWithParam<KillCase> {};

TEST_P(CheckpointKillTest, TheDirectoryHoldsTheOldOrTheNewCheckpoint) {
  if (testing::is_worker()) GTEST_SKIP() << "parent test; this process is a rank";
  const KillCase c = GetParam();
  const char* tmp = std::getenv("TEST_TMPDIR");
  const fs::path root = fs::path(tmp != nullptr ? tmp : fs::temp_directory_path().string()) /
                        ("kill_" + std::string(checkpoint::save_phase_name(c.phase)) + "_" +
                         std::to_string(c.victim));
  fs::remove_all(root);
  fs::create_directories(root);
  const std::string dir = (root / "ckpt").string();
  testing::WorkerOptions options;
  options.env = {{"DTENSOR_TEST_DIR", dir},
                 {"DTENSOR_TEST_PHASE", checkpoint::save_phase_name(c.phase)},
                 {"DTENSOR_TEST_VICTIM", std::to_string(c.victim)}};
  // The victim's death ends the job at once (the launcher kills the others,
  // wherever they are): a crash of the whole job.
  options.kill_on_failure = true;
  const launch::LaunchResult result = testing::run_worker_test(
      kRanks, "CheckpointKillWorker.SaveTwiceVictimDiesInTheSecond", options);
  ASSERT_FALSE(result.ok()) << "the victim was to die: " << result.report();
  ASSERT_FALSE(result.timed_out) << result.report();
  const launch::RankResult& dead = result.ranks.at(static_cast<size_t>(c.victim));
  EXPECT_TRUE(!dead.exited && dead.signal == SIGKILL && !dead.stopped_by_launcher)
      << "the victim died of its own SIGKILL: " << result.report();
  for (const launch::RankResult& rank : result.ranks) {
    // Every other rank ended normally or was stopped by the launcher: no
    // other signal (SIGPIPE, SIGSEGV) ended anyone.
    if (rank.rank == c.victim || rank.exited) continue;
    EXPECT_TRUE(rank.stopped_by_launcher) << "rank " << rank.rank << ": " << rank.status();
  }
  testing::expect_no_leftovers(result);

  at::Tensor w = torch::zeros({8, 6});
  checkpoint::load({{"w", w}}, dir);
  const bool old_one = at::equal(w, versioned_weight(1));
  const bool new_one = at::equal(w, versioned_weight(2));
  EXPECT_TRUE(old_one || new_one) << "a mix of two saves";
  if (c.phase == SavePhase::kStarted || c.phase == SavePhase::kFileWritten ||
      (c.phase == SavePhase::kCommitting && c.victim == 0)) {
    EXPECT_TRUE(old_one) << "nothing of the unfinished save may show";
  }
  if (c.phase == SavePhase::kCommitted) {
    EXPECT_TRUE(new_one) << "the commit happened";
  }
}

INSTANTIATE_TEST_SUITE_P(
    EveryPhase, CheckpointKillTest,
    ::testing::Values(KillCase{SavePhase::kStarted, 0}, KillCase{SavePhase::kStarted, 2},
                      KillCase{SavePhase::kFileWritten, 0}, KillCase{SavePhase::kFileWritten, 2},
                      KillCase{SavePhase::kCommitting, 0}, KillCase{SavePhase::kCommitting, 2},
                      KillCase{SavePhase::kCommitted, 0}, KillCase{SavePhase::kCommitted, 2}),
    [](const ::testing::TestParamInfo<KillCase>& info) {
      return std::string(checkpoint::save_phase_name(info.param.phase)) + "_rank" +
             std::to_string(info.param.victim);
    });

}  // namespace
}  // namespace dtensor
