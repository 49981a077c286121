// Tests of dtensor-viewer's command line and of the shared viewer state
// (options applied to the playground, trace loading, hover double-buffering).
#include "gui/model/viewer_options.h"

#include <gtest/gtest.h>

#include "gui/model/viewer_state.h"

namespace dtensor::gui {
namespace {

TEST(ViewerOptionsTest, ParsesEveryFlag) {
  ParsedOptions parsed = parse_viewer_options({"trace.json",
                                               "--screenshot",
                                               "out.png",
                                               "--panel=Layout",
                                               "--size",
                                               "1000x700",
                                               "--frames",
                                               "2",
                                               "--mesh",
                                               "tp=4",
                                               "--tensor",
                                               "13",
                                               "--placements",
                                               "S(0)",
                                               "--target=R",
                                               "--dtype",
                                               "int8",
                                               "--step",
                                               "1",
                                               "--hover-rank",
                                               "3"});
  ASSERT_TRUE(parsed.error.empty()) << parsed.error;
  const ViewerOptions& o = parsed.options;
  EXPECT_EQ(o.trace_path, "trace.json");
  EXPECT_EQ(o.screenshot_path, "out.png");
  EXPECT_EQ(o.panel, PanelId::kLayout);
  EXPECT_EQ(o.width, 1000);
  EXPECT_EQ(o.height, 700);
  EXPECT_EQ(o.frames, 2);
  EXPECT_EQ(*o.mesh, "tp=4");
  EXPECT_EQ(*o.target, "R");
  EXPECT_EQ(*o.dtype, "int8");
  EXPECT_EQ(o.step, 1);
  EXPECT_EQ(o.hover_rank, 3);
}

TEST(ViewerOptionsTest, ErrorsNameTheFlag) {
  const std::pair<std::vector<std::string>, const char*> table[] = {
      {{"--size", "big"}, "--size: expected WxH"},
      {{"--size", "10x10"}, "--size: expected WxH"},
      {{"--panel", "graph"}, "--panel: unknown panel 'graph'"},
      {{"--frames", "0"}, "--frames:"},
      {{"--screenshot"}, "--screenshot: missing value"},
      {{"--colour", "red"}, "unknown flag --colour"},
      {{"a.json", "b.json"}, "more than one trace file"},
  };
  for (const auto& [args, want] : table) {
    SCOPED_TRACE(want);
    ParsedOptions parsed = parse_viewer_options(args);
    EXPECT_NE(parsed.error.find(want), std::string::npos) << parsed.error;
  }
}

TEST(ViewerOptionsTest, PanelNamesRoundTrip) {
  for (PanelId id : {PanelId::kAll, PanelId::kMesh, PanelId::kLayout, PanelId::kPlayground,
                     PanelId::kCommTable, PanelId::kTimeline, PanelId::kPlan}) {
    EXPECT_EQ(parse_panel_name(panel_name(id)), id);
  }
  EXPECT_EQ(parse_panel_name("comm"), PanelId::kCommTable);
  EXPECT_NE(viewer_usage().find("--screenshot"), std::string::npos);
  EXPECT_TRUE(parse_viewer_options({"-h"}).options.show_help);
}

TEST(ViewerStateTest, AppliesPlaygroundOptions) {
  ViewerState state;
  ViewerOptions options;
  options.mesh = "tp=4";
  options.tensor = "13";
  options.placements = "S(0)";
  options.target = "R";
  options.dtype = "bfloat16";
  std::string error;
  EXPECT_TRUE(state.apply_options(options, &error)) << error;
  ASSERT_TRUE(state.playground.layout().view);
  EXPECT_EQ(state.playground.layout().view->blocks.size(), 4u);
  EXPECT_EQ(state.playground.element_size(), 2);
  options.dtype = "float128";
  EXPECT_FALSE(state.apply_options(options, &error));
  EXPECT_EQ(error, "--dtype: unknown dtype 'float128'");
}

TEST(ViewerStateTest, FailedLoadKeepsThePreviousTrace) {
  ViewerState state;
  ASSERT_TRUE(state.load_trace("tests/gui/testdata/tp_mlp_trace.json")) << state.trace_error;
  EXPECT_EQ(state.timeline.lanes.size(), 4u);
  EXPECT_FALSE(state.module_counts.empty());
  EXPECT_FALSE(state.load_trace("tests/gui/testdata/malformed_not_object.json"));
  ASSERT_TRUE(state.loaded);
  EXPECT_EQ(state.loaded->trace.world_size, 4);
  EXPECT_NE(state.trace_error.find("malformed_not_object.json"), std::string::npos);
  EXPECT_TRUE(state.use_trace_mesh());
  EXPECT_EQ(state.playground.inputs().mesh, "dp=2, tp=2");
}

TEST(ViewerStateTest, HoverShowsFromTheNextFrame) {
  ViewerState state;
  state.begin_frame();
  state.set_hover({3, 1});
  EXPECT_FALSE(state.hover().active());
  state.begin_frame();
  EXPECT_TRUE(state.hover().has(1));
  EXPECT_TRUE(state.hover().has(3));
  EXPECT_FALSE(state.hover().has(2));
  state.begin_frame();
  EXPECT_FALSE(state.hover().active());
  ViewerOptions options;
  options.hover_rank = 2;
  std::string error;
  state.apply_options(options, &error);
  state.begin_frame();
  EXPECT_EQ(state.hover().ranks, std::vector<int64_t>{2});
}

}  // namespace
}  // namespace dtensor::gui
