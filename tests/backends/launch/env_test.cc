// The torchrun environment parser: values, and errors that name the variable
// and say how to launch.
#include "backends/launch/env.h"

#include <c10/util/Exception.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace dtensor {
namespace {

// Sets the launch variables for one test and restores "unset" afterwards.
class LaunchEnvTest : public ::testing::Test {
 protected:
  void SetUp() override { clear(); }
  void TearDown() override { clear(); }

  static void clear() {
    for (const char* name : {kRankVar, kWorldSizeVar, kLocalRankVar, kMasterAddrVar, kMasterPortVar,
                             "TORCHELASTIC_USE_AGENT_STORE", "TORCHELASTIC_RESTART_COUNT"}) {
      unsetenv(name);
    }
  }
  static void set_all() {
    setenv(kRankVar, "2", 1);
    setenv(kWorldSizeVar, "4", 1);
    setenv(kLocalRankVar, "1", 1);
    setenv(kMasterAddrVar, "10.0.0.7", 1);
    setenv(kMasterPortVar, "29511", 1);
  }
  static std::string error_of_parse() {
    try {
      launch_env_from_environment();
    } catch (const c10::Error& e) {
      return e.what_without_backtrace();
    }
    return "";
  }
};

TEST_F(LaunchEnvTest, ParsesTorchrunVariables) {
  set_all();
  const LaunchEnv env = launch_env_from_environment();
  EXPECT_EQ(env.rank, 2);
  EXPECT_EQ(env.world_size, 4);
  EXPECT_EQ(env.local_rank, 1);
  EXPECT_EQ(env.master_addr, "10.0.0.7");
  EXPECT_EQ(env.port, 29511);
  EXPECT_FALSE(env.use_agent_store);
  EXPECT_EQ(env.to_string(), "rank 2 of 4 (local rank 1), store at 10.0.0.7:29511");
  EXPECT_TRUE(has_launch_environment());
}

TEST_F(LaunchEnvTest, ReadsTorchelasticAgentStore) {
  set_all();
  setenv("TORCHELASTIC_USE_AGENT_STORE", "True", 1);
  setenv("TORCHELASTIC_RESTART_COUNT", "3", 1);
  const LaunchEnv env = launch_env_from_environment();
  EXPECT_TRUE(env.use_agent_store);
  EXPECT_EQ(env.restart_count, 3);
}

TEST_F(LaunchEnvTest, MissingVariableIsNamedWithHowToLaunch) {
  EXPECT_FALSE(has_launch_environment());
  const std::string message = error_of_parse();
  EXPECT_NE(message.find("RANK is not set"), std::string::npos) << message;
  EXPECT_NE(message.find("torchrun --no_python --nproc_per_node N ./binary"), std::string::npos)
      << message;
  EXPECT_NE(message.find("dtensor-launch --nproc N -- ./binary"), std::string::npos) << message;
  for (const char* name : {kWorldSizeVar, kLocalRankVar, kMasterAddrVar, kMasterPortVar}) {
    set_all();
    unsetenv(name);
    EXPECT_NE(error_of_parse().find(std::string(name) + " is not set"), std::string::npos) << name;
  }
}

TEST_F(LaunchEnvTest, InvalidValuesAreNamed) {
  struct Case {
    const char* name;
    const char* value;
    const char* expected;
  };
  const Case cases[] = {
      {kRankVar, "two", "RANK='two' is not an integer"},
      {kRankVar, "4", "RANK=4 is outside 0..3"},
      {kRankVar, "-1", "RANK=-1 is outside 0..3"},
      {kWorldSizeVar, "0", "WORLD_SIZE=0 must be at least 1"},
      {kLocalRankVar, "-2", "LOCAL_RANK=-2 must be >= 0"},
      {kMasterAddrVar, "", "MASTER_ADDR is set but empty"},
      {kMasterPortVar, "70000", "MASTER_PORT=70000 is not a TCP port"},
      {kMasterPortVar, "0", "MASTER_PORT=0 is not a TCP port"},
      {kMasterPortVar, "29500x", "MASTER_PORT='29500x' is not an integer"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.name) + "=" + c.value);
    set_all();
    setenv(c.name, c.value, 1);
    const std::string message = error_of_parse();
    EXPECT_NE(message.find(c.expected), std::string::npos) << message;
  }
}

TEST(ValidateLaunchEnvTest, AcceptsDefaultsAndRejectsBadRank) {
  LaunchEnv env;
  EXPECT_NO_THROW(validate_launch_env(env));
  env.rank = 1;
  EXPECT_THROW(validate_launch_env(env), c10::Error);
}

}  // namespace
}  // namespace dtensor
