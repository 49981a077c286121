// CI's gate on operator coverage (issue #33): every overload PyTorch 2.15's
// DTensor shards (pytorch-2.15-ops.txt) that reaches DTensor here has a rule
// (kMaxMissing is 0), so a lost registration fails the build. It is checked
// against the LibTorch the test was built with, and the list is 2.15's, so
// other LibTorch versions skip it.
#include <gtest/gtest.h>
#include <torch/version.h>

#include <cstdlib>
#include <string>

#include "testing/run_command.h"

namespace {

constexpr int kMaxMissing = 0;

std::string runfile(const std::string& rel) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  return std::string(srcdir ? srcdir : ".") + "/dtensor/" + rel;
}

TEST(OpCoverageGateTest, PyTorch215OverloadsWithoutARuleStayWithinTheBound) {
  if (std::string(TORCH_VERSION).rfind("2.15", 0) != 0) GTEST_SKIP() << "LibTorch " << TORCH_VERSION;
  const dtensor::testing::CommandRun run =
      dtensor::testing::run_command(runfile("tools/op_coverage/op_coverage") + " --against " +
                                    runfile("tools/op_coverage/pytorch-2.15-ops.txt") + " --max-missing " +
                                    std::to_string(kMaxMissing));
  EXPECT_EQ(run.status, 0) << run.output;
  EXPECT_NE(run.output.find("overloads PyTorch shards: 1199"), std::string::npos) << run.output;
}

}  // namespace
