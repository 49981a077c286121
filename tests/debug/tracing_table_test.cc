// Snapshots of the comm tracing table at each noise level, and its colours.
#include "debug/tracing_table.h"

#include <gtest/gtest.h>

#include "tests/trace/trace_fixture.h"

namespace dtensor::debug {
namespace {

using trace::testing::mlp_like_trace;

TEST(TracingTableTest, NoiseLevelZeroSnapshot) {
  const std::string expected =
      "Global\n"
      "  FORWARD PASS\n"
      "    *all_reduce: 1 (320 B)\n"
      "  BACKWARD PASS\n"
      "    *all_gather_into_tensor: 1 (64 B)\n"
      "    MLPModule\n"
      "      FORWARD PASS\n"
      "        *all_reduce: 1 (320 B)\n"
      "      BACKWARD PASS\n"
      "        *all_gather_into_tensor: 1 (64 B)\n"
      "        MLPModule.net1\n"
      "        MLPModule.relu\n"
      "        MLPModule.net2\n"
      "          FORWARD PASS\n"
      "            *all_reduce: 1 (320 B)\n";
  EXPECT_EQ(comm_debug_tracing_table(mlp_like_trace(), /*noise_level=*/0, /*color=*/false), expected);
}

TEST(TracingTableTest, NoiseLevelOneSnapshot) {
  const std::string expected =
      "Global\n"
      "  FORWARD PASS\n"
      "    *all_reduce: 1 (320 B)\n"
      "  BACKWARD PASS\n"
      "    *all_gather_into_tensor: 1 (64 B)\n"
      "    MLPModule\n"
      "    *module type: dtensor::debug::MLPModule\n"
      "      FORWARD PASS\n"
      "        *all_reduce: 1 (320 B)\n"
      "      BACKWARD PASS\n"
      "        *all_gather_into_tensor: 1 (64 B)\n"
      "        *all_gather_into_tensor x1 from implicit aten::mm input 1, S(0) -> R\n"
      "        MLPModule.net1\n"
      "        *module type: torch::nn::Linear\n"
      "        *Parameter List\n"
      "         *weight: [S(0)]\n"
      "         *bias: [S(0)]\n"
      "          FORWARD PASS\n"
      "            **aten::addmm\n"
      "              shape: [[8, 10], [16, 10]]\n"
      "              sharding: [[R], [S(0)]]\n"
      "              device mesh: DeviceMesh(cpu, (tp=4))\n"
      "          BACKWARD PASS\n"
      "            **aten::mm\n"
      "              shape: [[8, 10], [16, 10]]\n"
      "              sharding: [[R], [S(0)]]\n"
      "              device mesh: DeviceMesh(cpu, (tp=4))\n"
      "        MLPModule.relu\n"
      "        *module type: torch::nn::ReLU\n"
      "          FORWARD PASS\n"
      "            **aten::relu\n"
      "              shape: [[8, 10], [16, 10]]\n"
      "              sharding: [[R], [S(0)]]\n"
      "              device mesh: DeviceMesh(cpu, (tp=4))\n"
      "        MLPModule.net2\n"
      "        *module type: torch::nn::Linear\n"
      "        *Parameter List\n"
      "         *weight: [S(1)]\n"
      "         *bias: [R]\n"
      "          FORWARD PASS\n"
      "            *all_reduce: 1 (320 B)\n"
      "            *all_reduce x1 from explicit parallel_style (RowwiseParallel output), P(sum) -> R\n";
  EXPECT_EQ(comm_debug_tracing_table(mlp_like_trace(), /*noise_level=*/1, /*color=*/false), expected);
}

TEST(TracingTableTest, LevelTwoAddsLocalOpsLevelThreeTrivialOps) {
  const std::string l1 = comm_debug_tracing_table(mlp_like_trace(), 1, false);
  const std::string l2 = comm_debug_tracing_table(mlp_like_trace(), 2, false);
  const std::string l3 = comm_debug_tracing_table(mlp_like_trace(), 3, false);
  const std::string local_mm =
      "(RowwiseParallel output), P(sum) -> R\n            **aten::mm\n              shape: [[8, 10], [16, "
      "10]]\n";
  // Level 2 adds the strategy comparison behind implicit collectives.
  const std::string strategy =
      "        *all_gather_into_tensor x1 from implicit aten::mm input 1, S(0) -> R\n"
      "          strategy: S(0), R -> S(0) (cost 250048); rejected: R, S(1) -> S(1) (cost 250320)\n";
  EXPECT_EQ(l1.find(strategy), std::string::npos);
  EXPECT_NE(l2.find(strategy), std::string::npos) << l2;
  EXPECT_EQ(l1.find(local_mm), std::string::npos);
  EXPECT_NE(l2.find(local_mm), std::string::npos) << l2;
  EXPECT_EQ(l2.find("**aten::t\n"), std::string::npos);
  EXPECT_NE(l3.find("          FORWARD PASS\n            **aten::t\n"), std::string::npos) << l3;
}

TEST(TracingTableTest, ColourOnlyWhenAsked) {
  const std::string plain = comm_debug_tracing_table(mlp_like_trace(), 1, /*color=*/false);
  const std::string colour = comm_debug_tracing_table(mlp_like_trace(), 1, /*color=*/true);
  EXPECT_EQ(plain.find('\033'), std::string::npos);
  EXPECT_NE(colour.find("\033[1;33m    *all_reduce: 1 (320 B)\033[0m\n"), std::string::npos);
  EXPECT_NE(colour.find("\033[1;31m              device mesh: "), std::string::npos);
  EXPECT_EQ(strip_ansi(colour), plain);
}

TEST(TracingTableTest, StripAnsiRemovesEscapesOnly) {
  EXPECT_EQ(strip_ansi("a\033[1;33mb\033[0mc\033[2Kd"), "abcd");
  EXPECT_EQ(strip_ansi("no escapes [1;33m"), "no escapes [1;33m");
}

TEST(TracingTableTest, MergedTraceNamesReferenceRankAndDifferences) {
  trace::CommTrace merged = mlp_like_trace(0);
  merged.rank = -1;
  trace::CommTrace r3 = mlp_like_trace(3);
  merged.collectives.insert(merged.collectives.end(), r3.collectives.begin(), r3.collectives.end());
  merged.differing_ranks = {3};
  merged.rank_differences = {"rank 3: Global forward all_reduce: 2 (rank 0: 1)"};
  const std::string table = comm_debug_tracing_table(merged, 0, false);
  EXPECT_EQ(table.rfind("(fake world: 2 ranks traced, showing rank 0)\nGlobal\n", 0), 0u) << table;
  EXPECT_NE(
      table.find("ranks differing from rank 0: 3\n  rank 3: Global forward all_reduce: 2 (rank 0: 1)\n"),
      std::string::npos)
      << table;
}

}  // namespace
}  // namespace dtensor::debug
