// Gloo with a killed process (issue 10), beyond tests/backends/gloo's
// gloo_failure_test (a rank _exit()s between collectives): here a rank is
// SIGKILLed while its peers already wait inside a collective, for several
// collective kinds and for a sub-group, and inside fully_shard's forward and
// backward collectives (issue 34). The survivors must get a c10::Error
// naming the collective (for FSDP: the module and the collective), the group
// and their rank, and exit normally before
// the job limit (no hang); no process may be left behind.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "backends/gloo/gloo_world.h"
#include "backends/launch/env.h"
#include "backends/world.h"
#include "backends/launch/launcher.h"
#include "core/device_mesh.h"
#include "core/fsdp/fully_shard.h"
#include "core/nn/module_call.h"
#include "tests/core/fsdp/linear_stack.h"

namespace dtensor {
namespace {

using std::chrono::milliseconds;

constexpr int kRanks = 4;
constexpr int kVictim = 2;
constexpr milliseconds kCollectiveTimeout{8000};

std::string self_path() {
  char buffer[4096];
  const ssize_t n = readlink("/proc/self/exe", buffer, sizeof(buffer) - 1);
  return n <= 0 ? "/proc/self/exe" : std::string(buffer, static_cast<size_t>(n));
}

// Issues the collective named by DTENSOR_TEST_KIND on `comm`.
void issue(const std::string& kind, Communicator& comm) {
  const int64_t n = comm.size();
  if (kind == "all_reduce") {
    at::Tensor t = at::ones({1 << 16});
    comm.all_reduce(t);
  } else if (kind == "all_gather_into_tensor") {
    at::Tensor out = at::empty({n * 1024});
    comm.all_gather_into_tensor(out, at::ones({1024}));
  } else if (kind == "broadcast") {
    // Rooted at the victim: with another root, ranks that only receive from
    // the root may rightly complete (Gloo sends root -> each rank).
    at::Tensor t = at::ones({1 << 16});
    BroadcastOptions options;
    const auto& ranks = comm.group_ranks();
    options.root = std::find(ranks.begin(), ranks.end(), kVictim) - ranks.begin();
    comm.broadcast(t, options);
  } else if (kind == "barrier") {
    comm.barrier();
  } else {
    FAIL() << "unknown kind " << kind;
  }
}

// FSDP cases ("fsdp_forward" / "fsdp_backward"): a fully_shard'ed 2-layer
// stack on the 4 ranks; the victim dies before forward (peers wait in the
// first layer's all_gather) or after it (peers wait in backward's). Every
// rank but the victim runs forward and backward.
void run_fsdp(World& world, bool victim_dies_in_backward) {
  ScopedCurrentWorld current(world);
  auto mesh = DeviceMesh::init(c10::kCPU, {kRanks}, {"dp"});
  testing::LinearStack model = testing::make_linear_stack({6, 8, 4}, 3);
  for (auto& layer : model->layers) fully_shard(*layer, mesh);
  fully_shard(*model, mesh);
  const bool victim = world.rank() == kVictim;
  if (victim && !victim_dies_in_backward) {
    std::this_thread::sleep_for(milliseconds(500));
    std::fflush(nullptr);
    raise(SIGKILL);
  }
  at::Tensor loss = nn::call(model, testing::make_batch(2, 6, 1)).pow(2).mean();
  if (victim) {
    std::this_thread::sleep_for(milliseconds(500));
    std::fflush(nullptr);
    raise(SIGKILL);
  }
  loss.backward();
}

// Worker side: the victim SIGKILLs itself after its peers entered the
// collective (it never issues it); survivors print SURVIVOR_ERROR <message>.
TEST(GlooKillWorker, KilledWhilePeersWait) {
  if (!has_launch_environment()) GTEST_SKIP() << "runs as a rank of GlooKillTest";
  GlooWorldOptions options;
  options.timeout = kCollectiveTimeout;
  options.exit_wait = kCollectiveTimeout;
  auto world = gloo_world(launch_env_from_environment(), options);
  const std::string kind = std::getenv("DTENSOR_TEST_KIND");
  const bool subgroup = std::getenv("DTENSOR_TEST_SUBGROUP")[0] == '1';
  std::shared_ptr<Communicator> comm =
      subgroup ? (world->rank() == 0 ? nullptr : world->new_group({1, 2, 3})) : world->world_group();
  world->world_group()->barrier();
  if (comm == nullptr) return;  // rank 0 is outside the sub-group
  const auto start = std::chrono::steady_clock::now();
  try {
    if (kind.rfind("fsdp_", 0) == 0) {
      run_fsdp(*world, kind == "fsdp_backward");
    } else {
      if (world->rank() == kVictim) {
        // Not a timed assertion: a delay so that peers are (very likely) inside the collective.
        std::this_thread::sleep_for(milliseconds(500));
        std::fflush(nullptr);
        raise(SIGKILL);
      }
      issue(kind, *comm);
    }
    ADD_FAILURE() << kind << " completed although rank " << kVictim << " was killed";
  } catch (const c10::Error& e) {
    // Elapsed time is printed for the report, never asserted.
    const auto ms = std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - start);
    std::printf("SURVIVOR_ERROR after %lld ms: %s\n", static_cast<long long>(ms.count()),
                e.what_without_backtrace());
    std::fflush(stdout);
  }
}

struct KillCase {
  std::string kind;
  bool subgroup;
};

class GlooKillTest : public ::testing::TestWithParam<KillCase> {};

TEST_P(GlooKillTest, SurvivorsErrorOutNamingTheCollectiveAndNobodyIsLeft) {
  if (has_launch_environment()) GTEST_SKIP() << "parent test; this process is a rank";
  const KillCase c = GetParam();
  launch::LaunchSpec spec;
  spec.nproc = kRanks;
  spec.argv = {self_path(), "--gtest_filter=GlooKillWorker.KilledWhilePeersWait"};
  // Far above the collective timeout: a survivor that hangs past its own
  // timeout makes the job time out, which fails this test.
  spec.timeout = milliseconds(90000);
  spec.kill_on_failure = false;
  spec.env = {{"DTENSOR_TEST_KIND", c.kind}, {"DTENSOR_TEST_SUBGROUP", c.subgroup ? "1" : "0"}};
  spec.unset_env = {"XML_OUTPUT_FILE", "GTEST_OUTPUT", "TEST_PREMATURE_EXIT_FILE", "GTEST_SHARD_INDEX",
                    "GTEST_TOTAL_SHARDS", "TEST_SHARD_STATUS_FILE", "GTEST_SHARD_STATUS_FILE",
                    "TEST_WARNINGS_OUTPUT_FILE"};
  launch::LaunchResult result;
  for (int attempt = 0; attempt < 4; ++attempt) {  // a port taken between probe and bind
    spec.master_port = launch::find_free_port();
    result = launch::launch_local(spec);
    bool clash = false;
    for (const auto& r : result.ranks) clash = clash || r.output.find("ddress already in use") != std::string::npos;
    if (!clash) break;
  }
  ASSERT_EQ(result.ranks.size(), static_cast<size_t>(kRanks)) << result.report();
  EXPECT_FALSE(result.timed_out) << "a survivor hung:\n" << result.report();
  const std::string group = c.subgroup ? "[1, 2, 3]" : "[0, 1, 2, 3]";
  for (const auto& rank : result.ranks) {
    SCOPED_TRACE("rank " + std::to_string(rank.rank));
    if (rank.rank == kVictim) {
      EXPECT_EQ(rank.signal, SIGKILL) << result.report();
      continue;
    }
    EXPECT_TRUE(rank.ok()) << result.report();
    if (c.subgroup && rank.rank == 0) continue;
    const auto at = rank.output.find("SURVIVOR_ERROR ");
    ASSERT_NE(at, std::string::npos) << result.report();
    const std::string message = rank.output.substr(at);
    if (c.kind == "fsdp_forward") {
      EXPECT_NE(message.find("in fully_shard(LinearStack.layer0)'s all_gather of its parameters"),
                std::string::npos) << message;
      continue;
    }
    if (c.kind == "fsdp_backward") {
      // Backward's first collective: the last layer's gradients, or the first
      // layer's parameters gathered ahead (prefetch).
      EXPECT_NE(message.find("in fully_shard(LinearStack.layer"), std::string::npos) << message;
      EXPECT_NE(message.find("(backward)"), std::string::npos) << message;
      continue;
    }
    EXPECT_NE(message.find(c.kind + " on gloo group " + group), std::string::npos) << message;
    EXPECT_NE(message.find("global rank " + std::to_string(rank.rank)), std::string::npos) << message;
  }
  for (const auto& rank : result.ranks) {
    errno = 0;
    EXPECT_FALSE(kill(rank.pid, 0) == 0 || errno != ESRCH) << "rank " << rank.rank << " left behind";
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, GlooKillTest,
                         ::testing::Values(KillCase{"all_reduce", false},
                                           KillCase{"all_gather_into_tensor", false},
                                           KillCase{"broadcast", false}, KillCase{"barrier", false},
                                           KillCase{"all_reduce", true}, KillCase{"fsdp_forward", false},
                                           KillCase{"fsdp_backward", false}),
                         [](const auto& info) {
                           return info.param.kind + (info.param.subgroup ? "_subgroup" : "_world");
                         });

}  // namespace
}  // namespace dtensor
