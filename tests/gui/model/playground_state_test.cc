// Tests of the playground: text parsing with error strings, per-field errors,
// the redistribute plan steps and the layouts around each step.
#include "gui/model/playground_state.h"

#include <gtest/gtest.h>

#include "gui/model/shape_text.h"

namespace dtensor::gui {
namespace {

TEST(ShapeTextTest, AcceptsCommonSpellings) {
  for (const char* text : {"8, 6", "[8, 6]", "(8,6)", "8x6", " 8 6 "}) {
    SCOPED_TRACE(text);
    Parsed<std::vector<int64_t>> parsed = parse_shape_text(text);
    ASSERT_TRUE(parsed.ok()) << parsed.error;
    EXPECT_EQ(*parsed.value, (std::vector<int64_t>{8, 6}));
  }
  EXPECT_EQ(*parse_shape_text("0").value, std::vector<int64_t>{0});
}

TEST(ShapeTextTest, RejectsWithAMessage) {
  const std::pair<const char*, const char*> table[] = {
      {"", "no sizes"},
      {"8, x", "'x' is not a size"},
      {"-1", "'-1' is not a size"},
      {"1,1,1,1,1,1,1", "at most"},
      {"99999999999999, 99999999999999", "too many elements"}};
  for (auto [text, want] : table) {
    SCOPED_TRACE(text);
    Parsed<std::vector<int64_t>> parsed = parse_shape_text(text);
    EXPECT_FALSE(parsed.ok());
    EXPECT_NE(parsed.error.find(want), std::string::npos) << parsed.error;
  }
}

TEST(ShapeTextTest, MeshNamedAndUnnamed) {
  const std::pair<const char*, MeshShape> good[] = {
      {"dp=2, tp=4", MeshShape::create({2, 4}, {"dp", "tp"})},
      {"dp: 2", MeshShape::create({2}, {"dp"})},
      {"dp = 2 tp =4", MeshShape::create({2, 4}, {"dp", "tp"})},
      {"2x2x2", MeshShape::create({2, 2, 2})},
  };
  for (const auto& [text, want] : good) {
    SCOPED_TRACE(text);
    Parsed<MeshShape> parsed = parse_mesh_text(text);
    ASSERT_TRUE(parsed.ok()) << parsed.error;
    EXPECT_EQ(*parsed.value, want);
  }
  const std::pair<const char*, const char*> table[] = {{"dp=2, 4", "name every dim"},
                                                       {"0", "not a mesh dim size"},
                                                       {"2,2,2,2,2,2", "1 to 5"},
                                                       {"64, 64", "at most 1024 ranks"},
                                                       {"a=2, a=2", "mesh:"}};
  for (auto [text, want] : table) {
    SCOPED_TRACE(text);
    Parsed<MeshShape> parsed = parse_mesh_text(text);
    EXPECT_FALSE(parsed.ok());
    EXPECT_NE(parsed.error.find(want), std::string::npos) << parsed.error;
  }
}

TEST(ShapeTextTest, PlacementsAreValidatedAgainstMeshAndTensor) {
  MeshShape mesh = MeshShape::create({2, 2});
  Parsed<Placements> ok = parse_placements_text("S(-1), R", mesh, 2, "placements");
  ASSERT_TRUE(ok.ok()) << ok.error;
  EXPECT_EQ(*ok.value, (Placements{Shard(1), Replicate()}));
  Parsed<Placements> count = parse_placements_text("S(0)", mesh, 2, "target");
  EXPECT_EQ(count.error, "target: expected 2 placements (one per mesh dim), got 1");
  Parsed<Placements> syntax = parse_placements_text("S(0), Q", mesh, 2, "placements");
  EXPECT_EQ(syntax.error.rfind("placements: ", 0), 0u) << syntax.error;
}

TEST(ShapeTextTest, PyTorchTuplesBecomeLists) {
  EXPECT_EQ(normalize_placements_text("(Shard(dim=0),)"), "[Shard(dim=0)]");
  EXPECT_EQ(normalize_placements_text(" (Shard(dim=0), Replicate()) "),
            "[Shard(dim=0), Replicate()]");
  EXPECT_EQ(normalize_placements_text("[S(0), R]"), "[S(0), R]");
  EXPECT_EQ(parse_placements(normalize_placements_text("(Shard(dim=1), Partial(avg))")),
            (Placements{Shard(1), Partial(ReduceOp::kAvg)}));
}

TEST(PlaygroundStateTest, DefaultsAreValidAndPlanned) {
  PlaygroundState state;
  EXPECT_TRUE(state.mesh_error().empty());
  EXPECT_TRUE(state.placements_error().empty());
  ASSERT_TRUE(state.layout().view);
  EXPECT_EQ(state.layout().view->blocks.size(), 4u);
  ASSERT_TRUE(state.plan());
  EXPECT_EQ(state.step_layouts().size(), state.plan()->steps.size());
  EXPECT_EQ(state.palette().size(), 4);
}

TEST(PlaygroundStateTest, EachFieldReportsItsOwnError) {
  PlaygroundState state;
  state.inputs().placements = "S(3), R";
  state.inputs().target = "R";
  state.refresh();
  EXPECT_TRUE(state.mesh_error().empty());
  EXPECT_NE(state.placements_error().find("S(3)"), std::string::npos) << state.placements_error();
  EXPECT_NE(state.target_error().find("expected 2"), std::string::npos) << state.target_error();
  EXPECT_FALSE(state.layout().view);
  EXPECT_FALSE(state.plan());

  state.inputs().mesh = "two by two";
  state.refresh();
  EXPECT_FALSE(state.mesh_error().empty());
  EXPECT_TRUE(state.placements_error().empty()) << "not checked without a mesh";
  EXPECT_FALSE(state.layout().error.empty());
}

TEST(PlaygroundStateTest, ShardToShardIsOneAllToAll) {
  PlaygroundState state;
  state.inputs().mesh = "2, 2";
  state.inputs().tensor = "8, 8";
  state.inputs().placements = "S(0), S(1)";
  state.inputs().target = "S(0), S(0)";
  state.refresh();
  ASSERT_TRUE(state.plan()) << state.plan_error();
  const RedistributePlan& plan = *state.plan();
  ASSERT_EQ(plan.steps.size(), 1u);
  EXPECT_EQ(plan.steps[0].kind, StepKind::kAllToAll);
  EXPECT_EQ(plan.steps[0].mesh_dim, 1);
  EXPECT_EQ(plan.steps[0].bytes_per_rank, all_to_all_bytes_per_rank(4 * 4 * 4, 2));
  EXPECT_GT(plan.steps[0].estimated_us, 0.0);
  const StepLayouts& layouts = state.step_layouts()[0];
  ASSERT_TRUE(layouts.before.view && layouts.after.view);
  EXPECT_EQ(layouts.before.view->placements, plan.steps[0].before);
  EXPECT_EQ(layouts.after.view->placements, (Placements{Shard(0), Shard(0)}));
  EXPECT_EQ(layouts.after.view->blocks.size(), 4u);
}

TEST(PlaygroundStateTest, EveryStepChangesOneMeshDimAndEndsAtTheTarget) {
  PlaygroundState state;
  state.inputs().mesh = "2, 2";
  state.inputs().tensor = "8, 8";
  state.inputs().placements = "S(0), S(1)";
  state.inputs().target = "S(1), S(0)";
  state.refresh();
  ASSERT_TRUE(state.plan()) << state.plan_error();
  const RedistributePlan& plan = *state.plan();
  EXPECT_EQ(plan.num_collectives(), 2);
  Placements current = plan.from;
  for (const RedistributeStep& step : plan.steps) {
    EXPECT_EQ(step.before, current);
    current = step.after;
  }
  EXPECT_EQ(current, plan.to);
}

TEST(PlaygroundStateTest, RefusedTransitionIsAPlanError) {
  PlaygroundState state;
  state.inputs().placements = "R, R";
  state.inputs().target = "P(product), R";  // no plan creates a P(product)
  state.refresh();
  EXPECT_TRUE(state.placements_error().empty());
  EXPECT_FALSE(state.plan());
  EXPECT_FALSE(state.plan_error().empty());
}

TEST(PlaygroundStateTest, DtypeAndCostModelChangeBytesAndTime) {
  PlaygroundState state;
  ASSERT_TRUE(state.plan());
  int64_t float_bytes = state.plan()->total_bytes_per_rank();
  double float_us = state.plan()->estimated_us();
  state.inputs().dtype_index = 1;  // bfloat16
  state.inputs().latency_us = 50.0;
  state.refresh();
  EXPECT_EQ(state.element_size(), 2);
  EXPECT_EQ(state.plan()->total_bytes_per_rank() * 2, float_bytes);
  EXPECT_GT(state.plan()->estimated_us(), float_us);
  // The default plan's step is one collective over 2 ranks: one ring step.
  const double before_steps = state.plan()->estimated_us();
  state.inputs().step_latency_us = 10.5;
  state.refresh();
  EXPECT_DOUBLE_EQ(state.plan()->estimated_us(), before_steps + 10.0 * state.plan()->num_collectives());
}

TEST(PlaygroundStateTest, SelectionResetsForANewTensorAndIsKeptOtherwise) {
  PlaygroundState state;
  state.inputs().tensor = "4, 8, 16";
  state.inputs().placements = "S(0), S(2)";
  state.refresh();
  EXPECT_EQ(state.selection().row_dim, 0);
  EXPECT_EQ(state.selection().col_dim, 2);
  state.selection().row_dim = 1;
  state.selection().slice_index[0] = 3;
  state.refresh();
  ASSERT_TRUE(state.layout().view);
  EXPECT_EQ(state.layout().view->selection.row_dim, 1);
  EXPECT_EQ(state.layout().view->selection.slice_index[0], 3);
  state.inputs().tensor = "8, 6";
  state.inputs().placements = "S(0), S(1)";
  state.refresh();
  EXPECT_EQ(state.selection().row_dim, 0);
  EXPECT_EQ(state.selection().col_dim, 1);
}

}  // namespace
}  // namespace dtensor::gui
