// Counts by kind, module and phase over plain trace values.
#include "trace/trace_model.h"

#include <gtest/gtest.h>

#include "tests/trace/trace_fixture.h"

namespace dtensor::trace {
namespace {

using testing::mlp_like_trace;

TEST(TraceModelTest, CountsByKind) {
  CommTrace t = mlp_like_trace();
  EXPECT_EQ(comm_counts(t), (KindCounts{{"all_gather_into_tensor", 1}, {"all_reduce", 1}}));
  EXPECT_EQ(total_counts(t), 2);
}

TEST(TraceModelTest, EveryAncestorIncludingGlobalReceivesTheCount) {
  ModuleCounts counts = comm_module_counts(mlp_like_trace());
  EXPECT_EQ(counts["Global"]["forward"], (KindCounts{{"all_reduce", 1}}));
  EXPECT_EQ(counts["Global"]["backward"], (KindCounts{{"all_gather_into_tensor", 1}}));
  EXPECT_EQ(counts["MLPModule"]["forward"], (KindCounts{{"all_reduce", 1}}));
  EXPECT_EQ(counts["MLPModule"]["backward"], (KindCounts{{"all_gather_into_tensor", 1}}));
  EXPECT_EQ(counts["MLPModule.net2"]["forward"], (KindCounts{{"all_reduce", 1}}));
  EXPECT_TRUE(counts["MLPModule.net2"]["backward"].empty());
  EXPECT_EQ(counts.count("MLPModule.net1"), 0u) << "modules without collectives are absent, as in PyTorch";
}

TEST(TraceModelTest, GlobalIsPresentWithoutCollectives) {
  CommTrace empty;
  ModuleCounts counts = comm_module_counts(empty);
  ASSERT_EQ(counts.size(), 1u);
  EXPECT_TRUE(counts["Global"]["forward"].empty());
  EXPECT_TRUE(counts["Global"]["backward"].empty());
}

TEST(TraceModelTest, BytesAggregateLikeCounts) {
  ModuleCounts bytes = comm_module_bytes(mlp_like_trace());
  EXPECT_EQ(bytes["Global"]["forward"]["all_reduce"], 320);
  EXPECT_EQ(bytes["MLPModule"]["backward"]["all_gather_into_tensor"], 64);
}

TEST(TraceModelTest, ModulePathsAndChildren) {
  CommTrace t = mlp_like_trace();
  EXPECT_EQ(module_path(t, "MLPModule.net2"),
            (std::vector<std::string>{"Global", "MLPModule", "MLPModule.net2"}));
  EXPECT_EQ(module_path(t, "Unknown"), (std::vector<std::string>{"Global", "Unknown"}));
  EXPECT_EQ(module_depth(t, "Global"), 0);
  EXPECT_EQ(module_depth(t, "MLPModule.relu"), 2);
  EXPECT_EQ(module_children(t, "MLPModule"),
            (std::vector<std::string>{"MLPModule.net1", "MLPModule.relu", "MLPModule.net2"}));
  EXPECT_EQ(module_children(t, "Global"), (std::vector<std::string>{"MLPModule"}));
}

TEST(TraceModelTest, CyclicTreeDoesNotLoop) {
  CommTrace t;
  t.modules = {{"A", "", "B", {}}, {"B", "", "A", {}}};
  EXPECT_EQ(module_path(t, "A").front(), "Global");
}

TEST(TraceModelTest, NoiseLevelsFollowPyTorch) {
  struct Case {
    int level;
    bool dtensor_op, trivial_op, local_op;
  };
  OpRecord dt{0, "aten::addmm", "Global", Phase::kForward, true, {}, {"[R]"}, "m"};
  OpRecord trivial{0, "aten::t", "Global", Phase::kForward, true, {}, {"[R]"}, "m"};
  OpRecord local{0, "aten::mm", "Global", Phase::kForward, false, {}, {}, ""};
  for (Case c : {Case{0, false, false, false}, Case{1, true, false, false}, Case{2, true, false, true},
                 Case{3, true, true, true}}) {
    SCOPED_TRACE("noise level " + std::to_string(c.level));
    NoiseFilter f(c.level);
    EXPECT_EQ(f.module_data, c.level >= 1);
    EXPECT_EQ(f.shows(dt), c.dtensor_op);
    EXPECT_EQ(f.shows(trivial), c.trivial_op);
    EXPECT_EQ(f.shows(local), c.local_op);
  }
  for (const char* name : {"aten::detach", "aten::t", "aten::view", "aten::_to_copy", "aten::as_strided",
                           "aten::transpose.int"}) {
    EXPECT_TRUE(is_trivial_op(name)) << name;
  }
  EXPECT_FALSE(is_trivial_op("aten::transpose"));
}

TEST(TraceModelTest, RankViewKeepsOneRank) {
  CommTrace a = mlp_like_trace(0);
  CommTrace b = mlp_like_trace(1);
  a.rank = -1;
  a.collectives.insert(a.collectives.end(), b.collectives.begin(), b.collectives.end());
  EXPECT_EQ(ranks_in(a), (std::vector<int64_t>{0, 1}));
  CommTrace one = rank_view(a, 1);
  EXPECT_EQ(one.rank, 1);
  EXPECT_EQ(one.collectives.size(), 2u);
  EXPECT_EQ(one.operations.size(), 0u);
  EXPECT_EQ(one.modules.size(), 4u);
}

TEST(TraceModelTest, DiffNamesModulePhaseKind) {
  ModuleCounts expected = comm_module_counts(mlp_like_trace());
  CommTrace changed = mlp_like_trace();
  changed.collectives.push_back(changed.collectives.front());
  std::vector<std::string> diff = diff_module_counts(expected, comm_module_counts(changed), "golden");
  EXPECT_EQ(diff, (std::vector<std::string>{"Global forward all_reduce: 2 (golden: 1)",
                                            "MLPModule forward all_reduce: 2 (golden: 1)",
                                            "MLPModule.net2 forward all_reduce: 2 (golden: 1)"}));
  EXPECT_TRUE(diff_module_counts(expected, expected, "golden").empty());
}

TEST(TraceModelTest, PhaseNamesRoundTrip) {
  EXPECT_EQ(parse_phase(phase_name(Phase::kForward)), Phase::kForward);
  EXPECT_EQ(parse_phase(phase_name(Phase::kBackward)), Phase::kBackward);
  EXPECT_FALSE(parse_phase("sideways").has_value());
}

}  // namespace
}  // namespace dtensor::trace
