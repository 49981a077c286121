// The module tree derived from a trace's records: counts include
// descendants', one rank's view of a merged trace, cycles are cut.
#include "trace/module_tree.h"

#include <gtest/gtest.h>

#include "tests/trace/trace_fixture.h"

namespace dtensor::trace {
namespace {

using testing::mlp_like_trace;

TEST(ModuleTreeTest, CountsIncludeDescendantsAsInPyTorch) {
  const ModuleNode root = module_tree(mlp_like_trace());
  EXPECT_EQ(root.fqn, kGlobalFqn);
  EXPECT_EQ(module_count(root), 5);
  EXPECT_EQ(root.total_forward(), 1);
  EXPECT_EQ(root.total_backward(), 1);
  ASSERT_EQ(root.children.size(), 1u);
  const ModuleNode& mlp = root.children[0];
  EXPECT_EQ(mlp.backward_counts.at("all_gather_into_tensor"), 1);
  ASSERT_EQ(mlp.children.size(), 3u);
  const ModuleNode& net2 = mlp.children[2];
  EXPECT_EQ(net2.short_name(), "net2");
  EXPECT_EQ(net2.forward_counts.at("all_reduce"), 1);
  EXPECT_EQ(net2.total_bytes(), 320);
  EXPECT_EQ(mlp.total_bytes(), 320 + 64);
  EXPECT_EQ(mlp.children[0].parameters.size(), 2u);
  EXPECT_EQ(mlp.children[0].forward_operations.size(), 2u) << "aten::t and aten::addmm, unfiltered";
}

TEST(ModuleTreeTest, MergedTraceShowsItsLowestRank) {
  CommTrace merged = mlp_like_trace(1);
  merged.rank = -1;
  CommTrace r2 = mlp_like_trace(2);
  r2.collectives.push_back(r2.collectives[0]);  // rank 2 issues one all_reduce more
  merged.collectives.insert(merged.collectives.end(), r2.collectives.begin(), r2.collectives.end());
  EXPECT_EQ(reference_rank(merged), 1);
  EXPECT_EQ(module_tree(merged).forward_counts.at("all_reduce"), 1);
  merged.rank = 2;
  EXPECT_EQ(module_tree(merged).forward_counts.at("all_reduce"), 2);
  EXPECT_EQ(reference_rank(CommTrace{}), 0);
}

TEST(ModuleTreeTest, ACycleInTheRecordsIsCut) {
  CommTrace t;
  t.modules = {{"a", "", kGlobalFqn, {}}, {"b", "", "a", {}}, {"a", "", "b", {}}};
  const ModuleNode root = module_tree(t);
  ASSERT_EQ(root.children.size(), 1u);
  ASSERT_EQ(root.children[0].children.size(), 1u);
  EXPECT_TRUE(root.children[0].children[0].children.empty());
}

}  // namespace
}  // namespace dtensor::trace
