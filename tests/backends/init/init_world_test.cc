// init_world_from_env: a gloo world of one from a hand-set environment, and
// clear errors for backends it does not start.
#include "backends/init/init_world.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "backends/launch/launcher.h"
#include "testing/error_of.h"

namespace dtensor {
namespace {

TEST(InitWorldTest, GlooWorldOfOneFromEnvironment) {
  setenv("RANK", "0", 1);
  setenv("WORLD_SIZE", "1", 1);
  setenv("LOCAL_RANK", "0", 1);
  setenv("MASTER_ADDR", "127.0.0.1", 1);
  setenv("MASTER_PORT", std::to_string(launch::find_free_port()).c_str(), 1);
  InitOptions options;
  options.timeout = std::chrono::seconds(20);
  auto world = init_world_from_env(BackendKind::kGloo, options);
  EXPECT_EQ(world->backend(), BackendKind::kGloo);
  EXPECT_EQ(world->rank(), 0);
  EXPECT_EQ(world->size(), 1);
  EXPECT_EQ(world->timeout(), std::chrono::seconds(20));
  at::Tensor t = at::arange(4.0);
  world->world_group()->all_reduce(t, {ReduceOp::kAvg});
  EXPECT_TRUE(at::equal(t, at::arange(4.0)));
  for (const char* name : {"RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"}) {
    unsetenv(name);
  }
}

TEST(InitWorldTest, InProcessBackendsPointToTheirEntryPoints) {
  EXPECT_NE(
      testing::error_of([&] { init_world_from_env(BackendKind::kFake); }).find("run_fake_world"),
      std::string::npos);
  EXPECT_NE(testing::error_of([&] { init_world_from_env(BackendKind::kSolo); }).find("solo_world"),
            std::string::npos);
}

TEST(InitWorldTest, NcclNeedsALaunchEnvironmentOrSaysItIsMissing) {
  unsetenv("RANK");
  const std::string message = testing::error_of([&] { init_world_from_env(BackendKind::kNccl); });
  if (nccl_available()) {
    EXPECT_NE(message.find("RANK is not set"), std::string::npos) << message;
  } else {
    EXPECT_NE(message.find("this build has no NCCL backend"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace dtensor
