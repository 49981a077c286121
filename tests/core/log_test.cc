// DTENSOR_LOG (core/log.h): one line per DTensor op with its placements and
// plan, one per redistribution with each step's collective, per rank; debug
// adds the sharding cache and the strategy comparison; off prints nothing.
#include "core/log.h"

#include <gtest/gtest.h>
#include <torch/utils.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "backends/fake/fake_world.h"
#include "core/dtensor.h"

namespace dtensor {
namespace {

// Captures the lines while alive and restores level and sink after.
class LogCapture {
 public:
  explicit LogCapture(LogLevel level) : previous_(log_level()) {
    set_log_sink([this](std::string_view line) { lines_.emplace_back(line); });  // sink calls are serialised
    set_log_level(level);
  }
  ~LogCapture() {
    set_log_level(previous_);
    set_log_sink(nullptr);
  }
  std::vector<std::string> with(const std::string& part) const {
    std::vector<std::string> out;
    for (const auto& line : lines_) {
      if (line.find(part) != std::string::npos) out.push_back(line);
    }
    return out;
  }
  const std::vector<std::string>& lines() const { return lines_; }

 private:
  LogLevel previous_;
  std::vector<std::string> lines_;
};

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

TEST(LogTest, ParsesLevelsAndRejectsOthersNamingTheChoices) {
  EXPECT_EQ(parse_log_level(""), LogLevel::kOff);
  EXPECT_EQ(parse_log_level("off"), LogLevel::kOff);
  EXPECT_EQ(parse_log_level("info"), LogLevel::kInfo);
  EXPECT_EQ(parse_log_level("debug"), LogLevel::kDebug);
  try {
    parse_log_level("verbose");
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("DTENSOR_LOG=verbose is not a log level: use off, info or debug"),
              std::string::npos)
        << e.what();
  }
}

TEST(LogTest, InfoLogsEachOpAndEachRedistributionPerRank) {
  LogCapture capture(LogLevel::kInfo);
  run_fake_world(2, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    DTensor x = distribute_tensor(torch::ones({4, 6}, torch::kDouble), mesh, {Shard(0)});
    DTensor w = distribute_tensor(torch::ones({6, 2}, torch::kDouble), mesh, {Shard(0)});
    at::Tensor y = torch::mm(x, w);  // w must be gathered: an implicit all_gather
    DTensor(y).full_tensor();        // an explicit one
  });
  const std::string all = joined(capture.lines());
  for (int rank : {0, 1}) {
    const std::string r = "[dtensor rank " + std::to_string(rank) + "] ";
    EXPECT_EQ(capture.with(r + "aten::mm: [S(0)] Double[4, 6], [S(0)] Double[6, 2] -> [S(0)] Double[4, 2]; "
                               "plan [S(0)], [R] -> [S(0)]").size(), 1u) << all;
    EXPECT_EQ(capture.with(r + "redistribute Double[6, 2] [S(0)] -> [R] (implicit, aten::mm input 1): "
                               "mesh dim 0 S(0) -> R all_gather_into_tensor").size(), 1u) << all;
    EXPECT_EQ(capture.with(r + "redistribute Double[4, 2] [S(0)] -> [R] (explicit full_tensor").size(), 1u)
        << all;
  }
  EXPECT_TRUE(capture.with("sharding cache").empty()) << "debug detail at info level:\n" << all;
}

TEST(LogTest, DebugAddsCacheHitsAndTheStrategyComparison) {
  LogCapture capture(LogLevel::kDebug);
  run_fake_world(2, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    DTensor a = distribute_tensor(torch::ones({4, 6}, torch::kDouble), mesh, {Shard(0)});
    DTensor b = distribute_tensor(torch::ones({4, 6}, torch::kDouble), mesh, {Replicate()});
    for (int i = 0; i < 2; ++i) torch::add(a, b);
  });
  const std::string all = joined(capture.lines());
  const auto adds = capture.with("] aten::add.Tensor: ");
  ASSERT_EQ(adds.size(), 4u) << all;
  // The replicated operand is chunked locally (no collective) rather than the other gathered.
  EXPECT_EQ(capture.with("aten::add.Tensor: [S(0)] Double[4, 6], [R] Double[4, 6] -> [S(0)] Double[4, 6]; "
                         "plan [S(0)], [S(0)] -> [S(0)]; sharding cache miss; mesh dim 0 chose "
                         "S(0), S(0) -> S(0) (cost ").size(), 2u) << all;
  EXPECT_EQ(capture.with("(implicit, aten::add.Tensor input 1): mesh dim 0 R -> S(0) local_chunk").size(), 4u)
      << all;
  EXPECT_EQ(capture.with("; sharding cache hit; mesh dim 0 chose ").size(), 2u) << all;
  EXPECT_FALSE(capture.with(" over ").empty()) << "no rejected strategy named:\n" << all;
}

TEST(LogTest, OffPrintsNothing) {
  LogCapture capture(LogLevel::kOff);
  run_fake_world(2, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    DTensor x = distribute_tensor(torch::ones({4, 6}), mesh, {Shard(0)});
    torch::relu(x).sum();
    x.full_tensor();
  });
  EXPECT_TRUE(capture.lines().empty()) << joined(capture.lines());
}

// The BUILD file runs this test with DTENSOR_LOG=debug in its environment.
TEST(LogTest, StartsAtTheLevelTheEnvironmentNames) {
  const char* env = std::getenv("DTENSOR_LOG");
  ASSERT_NE(env, nullptr) << "run through bazel test (the target sets DTENSOR_LOG)";
  EXPECT_EQ(log_level(), parse_log_level(env));
}

}  // namespace
}  // namespace dtensor
