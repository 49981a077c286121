// The Gloo world on loopback with 1, 2 and 4 processes: the shared collective
// suite and the Gloo-specific checks against serial references, on the world
// group and on subgroups. GlooJob* tests are the parents: each starts this
// binary N times, running one GlooWorker* test as a rank.
#include "backends/gloo/gloo_world.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "backends/launch/env.h"
#include "tests/backends/collective_suite.h"
#include "tests/backends/gloo/gloo_checks.h"
#include "tests/backends/gloo/multiprocess.h"
#include "backends/launch/launcher.h"

namespace dtensor::testing {
namespace {

#define SKIP_UNLESS_WORKER() \
  if (!is_worker()) GTEST_SKIP() << "runs as a rank of a GlooJob test"
#define SKIP_IN_WORKER() \
  if (is_worker()) GTEST_SKIP() << "parent test; this process is a rank"

// ---- worker side: one rank of the job --------------------------------------

// The shared suite: every collective on the world group and on the groups of
// suite_partitions (reversed, evens/odds, halves, pairs, singletons), with
// order-independent inputs (Gloo's rings sum in their own order).
TEST(GlooWorker, CollectiveSuite) {
  SKIP_UNLESS_WORKER();
  auto world = make_worker_world();
  ScopedCurrentWorld scope(*world);
  EXPECT_EQ(world->backend(), BackendKind::kGloo);
  EXPECT_TRUE(world->device().is_cpu());
  CollectiveSuiteOptions options;
  options.bit_exact = false;
  check_all_collectives(*world, options);
}

// What Gloo 1.13 lacks, composed: on the world group and, on 4 ranks, on the
// rows and columns of a 2x2 mesh and on a group whose order is not the
// global order (group rank = index in the list).
TEST(GlooWorker, GlooSpecifics) {
  SKIP_UNLESS_WORKER();
  auto world = make_worker_world();
  gloo_checks::check_all(*world->world_group(), world->observers());
  if (world->size() != 4) return;
  const int64_t r = world->rank();
  auto row = world->new_group(r < 2 ? std::vector<int64_t>{0, 1} : std::vector<int64_t>{2, 3});
  auto column =
      world->new_group(r % 2 == 0 ? std::vector<int64_t>{0, 2} : std::vector<int64_t>{1, 3});
  EXPECT_EQ(row->rank(), r % 2);
  EXPECT_EQ(column->rank(), r / 2);
  EXPECT_EQ(world->new_group(row->group_ranks()), row) << "same ranks, same communicator";
  gloo_checks::check_all(*row, world->observers());
  gloo_checks::check_all(*column, world->observers());
  if (r == 1 || r == 3) {
    auto reversed = world->new_group({3, 1});
    EXPECT_EQ(reversed->rank(), r == 3 ? 0 : 1);
    gloo_checks::check_all(*reversed, world->observers());
  }
  world->world_group()->barrier();
}

// ---- parent side ------------------------------------------------------------

TEST(GlooJob, CollectiveSuiteOnTwoRanks) {
  SKIP_IN_WORKER();
  EXPECT_WORKERS_OK(run_worker_test(2, "GlooWorker.CollectiveSuite"));
}

TEST(GlooJob, CollectiveSuiteOnFourRanks) {
  SKIP_IN_WORKER();
  EXPECT_WORKERS_OK(run_worker_test(4, "GlooWorker.CollectiveSuite"));
}

TEST(GlooJob, GlooSpecificsOnTwoRanks) {
  SKIP_IN_WORKER();
  EXPECT_WORKERS_OK(run_worker_test(2, "GlooWorker.GlooSpecifics"));
}

TEST(GlooJob, GlooSpecificsAndMeshGroupsOnFourRanks) {
  SKIP_IN_WORKER();
  EXPECT_WORKERS_OK(run_worker_test(4, "GlooWorker.GlooSpecifics"));
}

// ---- a world of one, in this process ----------------------------------------

LaunchEnv single_rank_env() {
  LaunchEnv env;
  env.port = launch::find_free_port();
  return env;
}

TEST(GlooSingleRank, CollectivesWithoutPeers) {
  SKIP_IN_WORKER();
  auto world = gloo_world(single_rank_env());
  EXPECT_EQ(world->size(), 1);
  CollectiveSuiteOptions options;
  options.bit_exact = false;
  check_all_collectives(*world, options);
  gloo_checks::check_all(*world->world_group(), world->observers());
}

TEST(GlooSingleRank, ErrorsNameCollectiveGroupAndRank) {
  SKIP_IN_WORKER();
  auto world = gloo_world(single_rank_env());
  auto group = world->world_group();
  at::Tensor z = at::ones({2}, at::kComplexFloat);
  try {
    group->all_reduce(z, {ReduceOp::kMax});
    FAIL() << "complex max must be rejected";
  } catch (const c10::Error& e) {
    const std::string message = e.what_without_backtrace();
    EXPECT_NE(message.find("all_reduce on gloo group [0] (group rank 0 of 1, global rank 0)"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("complex"), std::string::npos) << message;
  }
}

TEST(GlooSingleRank, BadDeviceInterfaceIsAClearError) {
  SKIP_IN_WORKER();
  GlooWorldOptions options;
  options.interface = "no_such_interface0";
  try {
    gloo_world(single_rank_env(), options);
    FAIL() << "a missing interface must be rejected";
  } catch (const c10::Error& e) {
    const std::string message = e.what_without_backtrace();
    EXPECT_NE(message.find("no_such_interface0"), std::string::npos) << message;
    EXPECT_NE(message.find("GLOO_SOCKET_IFNAME"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace dtensor::testing
