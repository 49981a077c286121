// Headless rendering tests of dtensor-viewer: the binary renders each panel
// with --screenshot under an Xvfb started by the test, and the PNG's pixels
// are checked (rank colours present, block boxes where the layout puts them,
// hover dimming, error text, difference highlights), never a whole-image hash.
// Skips when Xvfb is not installed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>

#include "gui/model/rank_colors.h"
#include "tests/gui/render_test_util.h"

namespace dtensor::gui {
namespace {

using testing::Box;
using testing::Image;

std::string runfile(const std::string& rel) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  std::string full = std::string(srcdir ? srcdir : ".") + "/dtensor/" + rel;
  return access(full.c_str(), F_OK) == 0 ? full : rel;
}

std::string out_dir() {
  const char* dir = std::getenv("TEST_UNDECLARED_OUTPUTS_DIR");
  if (dir == nullptr) dir = std::getenv("TEST_TMPDIR");
  return dir ? dir : "/tmp";
}

class ViewerScreenshotTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    xvfb_ = std::make_unique<testing::XvfbServer>();
    if (!xvfb_->start(&skip_reason_)) xvfb_.reset();
  }
  static void TearDownTestSuite() { xvfb_.reset(); }
  void SetUp() override {
    if (!xvfb_) GTEST_SKIP() << skip_reason_;
  }

  // Renders `panel` at 1000x700 with extra viewer arguments; returns the image.
  Image render(const std::string& name, const std::string& panel, std::vector<std::string> extra) {
    std::string png = out_dir() + "/" + name + ".png";
    std::vector<std::string> argv = {
        runfile("gui/dtensor_viewer"), "--screenshot", png, "--panel", panel, "--size", "1000x700"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    testing::ProcessResult run = testing::run_process(argv, xvfb_->display());
    EXPECT_EQ(run.exit_code, 0) << run.output;
    std::optional<Image> image = testing::load_png(png);
    EXPECT_TRUE(image) << "no PNG at " << png << "\n" << run.output;
    if (image) {
      EXPECT_EQ(image->width, 1000);
      EXPECT_EQ(image->height, 700);
    }
    return image.value_or(Image{});
  }

  static std::unique_ptr<testing::XvfbServer> xvfb_;
  static std::string skip_reason_;
};

std::unique_ptr<testing::XvfbServer> ViewerScreenshotTest::xvfb_;
std::string ViewerScreenshotTest::skip_reason_;

// Fill boxes of every rank colour: rows with at least `min_row` pixels of it
// (blocks, stripes and cells; legend swatches and text are ignored).
std::vector<Box> rank_boxes(const Image& image, int64_t ranks, int min_row = 40) {
  RankPalette palette(ranks);
  std::vector<Box> boxes;
  for (int64_t r = 0; r < ranks; ++r)
    boxes.push_back(testing::find_fill(image, palette.color(r), min_row));
  return boxes;
}

TEST_F(ViewerScreenshotTest, LayoutDrawsFourBlocksOnTheGrid) {
  Image image = render("layout_2x2", "layout",
                       {"--mesh", "2, 2", "--tensor", "8, 6", "--placements", "S(0), S(1)"});
  std::vector<Box> b = rank_boxes(image, 4);
  for (int r = 0; r < 4; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    ASSERT_GT(b[r].count, 5000);
    // 4 rows x 3 columns of square cells: width / height = 3 / 4.
    EXPECT_NEAR(static_cast<double>(b[r].width()) / b[r].height(), 0.75, 0.05);
  }
  EXPECT_NEAR(b[0].y0, b[1].y0, 2);  // 0 | 1 on the top row
  EXPECT_NEAR(b[2].y0, b[3].y0, 2);  // 2 | 3 below
  EXPECT_NEAR(b[0].x0, b[2].x0, 2);
  EXPECT_NEAR(b[1].x0 - b[0].x1, 1, 4);  // adjacent, split by a thin border
  EXPECT_NEAR(b[2].y0 - b[0].y1, 1, 4);
  EXPECT_NEAR(b[0].width(), b[1].width(), 2);
  RankPalette eight(8);
  std::vector<Rgb> absent = {eight.color(4), eight.color(5), eight.color(6), eight.color(7)};
  EXPECT_EQ(testing::count_present(image, absent, 50), 0)
      << "no colours of ranks that do not exist";
}

TEST_F(ViewerScreenshotTest, UnevenThirteenRowsOnFourRanks) {
  Image image = render("layout_uneven", "layout",
                       {"--mesh", "tp=4", "--tensor", "13, 4", "--placements", "S(0)"});
  std::vector<Box> b = rank_boxes(image, 4);
  for (int r = 0; r < 4; ++r) ASSERT_GT(b[r].count, 300) << "rank " << r;
  // torch.chunk: 4, 4, 4, 1 rows.
  EXPECT_NEAR(b[0].height(), b[1].height(), 2);
  EXPECT_NEAR(b[1].height(), b[2].height(), 2);
  double ratio = static_cast<double>(b[3].height() + 2) / (b[0].height() + 2);
  EXPECT_NEAR(ratio, 0.25, 0.03);
  EXPECT_LT(b[0].y1, b[1].y0);
  EXPECT_LT(b[2].y1, b[3].y0);
}

TEST_F(ViewerScreenshotTest, ReplicasShareTheirBlockAsStripes) {
  Image image = render("layout_replicas", "layout",
                       {"--mesh", "2, 2", "--tensor", "8, 6", "--placements", "S(0), R"});
  std::vector<Box> b = rank_boxes(image, 4);
  for (int r = 0; r < 4; ++r) ASSERT_GT(b[r].count, 3000) << "rank " << r;
  // Ranks 0 and 1 stripe the top half, 2 and 3 the bottom half.
  EXPECT_NEAR(b[0].y0, b[1].y0, 3);
  EXPECT_NEAR(b[0].y1, b[1].y1, 3);
  EXPECT_NEAR(b[0].x0, b[1].x0, 14);
  EXPECT_LT(b[0].y1, b[2].y0);
  EXPECT_NEAR(b[2].y0, b[3].y0, 3);
}

TEST_F(ViewerScreenshotTest, HoveredRankStaysBrightOthersDim) {
  Image image = render(
      "layout_hover", "layout",
      {"--mesh", "2, 2", "--tensor", "8, 6", "--placements", "S(0), S(1)", "--hover-rank", "1"});
  std::vector<Box> b = rank_boxes(image, 4);
  EXPECT_GT(b[1].count, 5000);
  for (int r : {0, 2, 3}) EXPECT_LT(b[r].count, 200) << "rank " << r << " should be dimmed";
  EXPECT_GT(testing::find_color(image, Rgb{255, 255, 255}, 0).count, 500) << "white outline";
}

TEST_F(ViewerScreenshotTest, MeshShowsEveryRankOfA3dMesh) {
  Image image = render(
      "mesh_3d", "mesh",
      {"--mesh", "pp=2, dp=2, tp=2", "--tensor", "4, 8, 16", "--placements", "R, S(0), S(2)"});
  std::vector<Box> b = rank_boxes(image, 8);
  for (int r = 0; r < 8; ++r) EXPECT_GT(b[r].count, 2000) << "rank " << r;
  // Two 2x2 slices side by side: ranks 0-3 left of ranks 4-7.
  EXPECT_LT(b[1].x1, b[4].x0);
  EXPECT_LT(b[0].y1, b[2].y0);
}

TEST_F(ViewerScreenshotTest, PlaygroundShowsInvalidInputInRed) {
  Image bad = render("playground_invalid", "playground", {"--placements", "S(5), R"});
  EXPECT_GT(testing::find_color(bad, kErrorColor, 3).count, 150) << "error text and frame";
  Image good = render("playground_valid", "playground",
                      {"--mesh", "2, 2", "--tensor", "8, 8", "--placements", "S(0), S(1)",
                       "--target", "S(0), S(0)"});
  EXPECT_LT(testing::find_color(good, kErrorColor, 3).count, 20);
  // Before and after layouts: every rank colour shows, twice (two canvases).
  std::vector<Box> b = rank_boxes(good, 4);
  for (int r = 0; r < 4; ++r) {
    EXPECT_GT(b[r].count, 2000) << "rank " << r;
    EXPECT_GT(b[r].width(), 300) << "rank " << r << " appears in both canvases";
  }
  EXPECT_GT(testing::find_color(good, collective_kind_color("all_to_all_single"), 12).count, 10)
      << "the plan table names the collective in its colour";
}

TEST_F(ViewerScreenshotTest, CommTableHighlightsTheDivergentRank) {
  Image divergent = render("comm_divergent", "comm_table",
                           {runfile("tests/gui/testdata/transformer_divergent_trace.json")});
  EXPECT_GT(testing::find_color(divergent, kDifferenceColor, 2).count, 300);
  EXPECT_GT(testing::find_color(divergent, kErrorColor, 3).count, 50);
  Image clean =
      render("comm_clean", "comm_table", {runfile("tests/gui/testdata/tp_mlp_trace.json")});
  EXPECT_EQ(testing::find_color(clean, kDifferenceColor, 2).count, 0);
  EXPECT_GT(testing::find_color(clean, collective_kind_color("all_reduce"), 3).count, 20);
}

TEST_F(ViewerScreenshotTest, TimelineColoursKindsAndMarksMismatches) {
  Image image = render("timeline", "timeline",
                       {runfile("tests/gui/testdata/transformer_divergent_trace.json")});
  for (const char* kind : {"all_gather_into_tensor", "all_reduce", "reduce_scatter_tensor"}) {
    EXPECT_GT(testing::find_color(image, collective_kind_color(kind), 2).count, 300) << kind;
  }
  EXPECT_GT(testing::find_color(image, Rgb{255, 80, 80}, 2).count, 100) << "mismatch marks";
  Image clean =
      render("timeline_clean", "timeline", {runfile("tests/gui/testdata/tp_mlp_trace.json")});
  EXPECT_EQ(testing::find_color(clean, Rgb{255, 80, 80}, 2).count, 0);
  // Lanes: one per rank, ordered top to bottom (rank swatches left of the lanes).
  std::vector<Box> swatch = rank_boxes(clean, 4, /*min_row=*/1);
  for (int r = 1; r < 4; ++r) EXPECT_LT(swatch[r - 1].y0, swatch[r].y0);
}

// Schema-2 trace on a 2x2x2 mesh: six calls per rank with origins, three
// implicit (amber tags) and three explicit (blue tags).
TEST_F(ViewerScreenshotTest, CommTableShowsOriginsAndFiltersImplicitOnes) {
  const std::string trace = runfile("tests/gui/testdata/origins_3d_trace.json");
  Image all = render("comm_origins", "comm_table", {trace});
  EXPECT_LT(testing::find_color(all, kErrorColor, 3).count, 20) << "no load error";
  int64_t implicit_px = testing::find_color(all, kImplicitColor, 3).count;
  int64_t explicit_px = testing::find_color(all, kExplicitColor, 3).count;
  EXPECT_GT(implicit_px, 60) << "implicit tags";
  EXPECT_GT(explicit_px, 60) << "explicit tags";
  Image only = render("comm_origins_implicit", "comm_table", {trace, "--implicit-only"});
  EXPECT_EQ(testing::find_color(only, kExplicitColor, 3).count, 0) << "explicit rows filtered out";
  EXPECT_NEAR(testing::find_color(only, kImplicitColor, 3).count, implicit_px, implicit_px / 5)
      << "the implicit rows stay";
}

TEST_F(ViewerScreenshotTest, TimelineMarksImplicitCallsAndFiltersThem) {
  const std::string trace = runfile("tests/gui/testdata/origins_3d_trace.json");
  Image all = render("timeline_origins", "timeline", {trace});
  EXPECT_GT(testing::find_color(all, kImplicitColor, 3).count, 8 * 3 * 10)
      << "an amber corner on each implicit call of every lane";
  const Rgb rs = collective_kind_color("reduce_scatter_tensor");  // call 5: explicit only
  const Rgb a2a = collective_kind_color("all_to_all_single");     // call 2: implicit
  // The legend swatch keeps its colour; the 8 cells of the explicit call fade.
  int64_t rs_all = testing::find_color(all, rs, 2).count;
  EXPECT_GT(rs_all, 1500);
  Image only = render("timeline_origins_implicit", "timeline", {trace, "--implicit-only"});
  EXPECT_LT(testing::find_color(only, rs, 2).count, rs_all / 4) << "explicit calls drawn faint";
  EXPECT_GT(testing::find_color(only, a2a, 2).count, 1500) << "implicit calls stay solid";
}

// A PyTorch program's trace (tools/pytorch_trace/dtensor_trace.py on 4 Gloo
// processes, testdata/make_pytorch_trace.py): a TP MLP, an implicit
// redistribution of a matmul and a full_tensor(). It opens with its
// timeline (one lane per rank, implicit calls marked) and the comm table's
// origins (implicit and explicit tags), with no load error.
TEST_F(ViewerScreenshotTest, PyTorchProgramTraceOpensWithTimelineAndOrigins) {
  const std::string trace = runfile("tests/gui/testdata/pytorch_trace.json");
  Image table = render("pytorch_comm_table", "comm_table", {trace});
  EXPECT_LT(testing::find_color(table, kErrorColor, 3).count, 20) << "no load error";
  EXPECT_GT(testing::find_color(table, kImplicitColor, 3).count, 60) << "implicit tags";
  EXPECT_GT(testing::find_color(table, kExplicitColor, 3).count, 60) << "explicit tags";
  Image timeline = render("pytorch_timeline", "timeline", {trace});
  EXPECT_GT(testing::find_color(timeline, collective_kind_color("all_gather_into_tensor"), 2).count, 300);
  EXPECT_GT(testing::find_color(timeline, collective_kind_color("all_reduce"), 2).count, 300);
  EXPECT_GT(testing::find_color(timeline, kImplicitColor, 3).count, 4 * 2 * 10)
      << "an amber corner on each implicit call of every lane";
  std::vector<Box> swatch = rank_boxes(timeline, 4, /*min_row=*/1);
  for (int r = 1; r < 4; ++r) EXPECT_LT(swatch[r - 1].y0, swatch[r].y0);
}

// --call 3 selects the implicit all_reduce over dp: the Mesh panel switches to
// the trace's 2x2x2 mesh and draws arrows between each dp pair in the
// all_reduce colour; without a selected call there are none.
TEST_F(ViewerScreenshotTest, MeshDrawsTheBytesOfACallOnA3dMesh) {
  const std::string trace = runfile("tests/gui/testdata/origins_3d_trace.json");
  Image call = render("mesh_3d_call", "mesh", {trace, "--call", "3"});
  std::vector<Box> b = rank_boxes(call, 8);
  for (int r = 0; r < 8; ++r) EXPECT_GT(b[r].count, 1500) << "rank " << r;
  Box arrows = testing::find_color(call, collective_kind_color("all_reduce"), 3);
  EXPECT_GT(arrows.count, 400) << "arrows between dp peers";
  EXPECT_GT(arrows.height(), b[0].height()) << "dp pairs sit in different rows";
  Image none = render("mesh_3d_no_call", "mesh",
                      {trace, "--mesh", "pp=2, dp=2, tp=2", "--placements", "R, R, R"});
  EXPECT_LT(testing::find_color(none, collective_kind_color("all_reduce"), 3).count, 20);
}

// --call 1 (implicit all_gather for aten::mm) presets the playground: its
// origin line in amber and an all_gather step in the plan.
TEST_F(ViewerScreenshotTest, SelectedCallOpensThePlaygroundAtItsTransition) {
  Image image = render("playground_call", "playground",
                       {runfile("tests/gui/testdata/origins_3d_trace.json"), "--call", "1"});
  EXPECT_LT(testing::find_color(image, kErrorColor, 3).count, 20) << "valid preset";
  EXPECT_GT(testing::find_color(image, kImplicitColor, 3).count, 60) << "the origin line";
  EXPECT_GT(testing::find_color(image, collective_kind_color("all_gather_into_tensor"), 12).count, 10)
      << "the plan's all_gather";
  std::vector<Box> b = rank_boxes(image, 8);
  for (int r = 0; r < 8; ++r) EXPECT_GT(b[r].count, 300) << "rank " << r << " in the layouts";
}

// The layout of a 4-D mesh: each 2x2 block of an 8x8 tensor is replicated
// over pp and cp, so all 16 rank colours show as stripes.
TEST_F(ViewerScreenshotTest, LayoutOfA4dMeshStripesItsReplicas) {
  Image image = render("layout_4d", "layout",
                       {"--mesh", "pp=2, dp=2, cp=2, tp=2", "--tensor", "8, 8", "--placements",
                        "R, S(0), R, S(1)"});
  std::vector<Box> b = rank_boxes(image, 16, /*min_row=*/30);  // not the legend
  for (int r = 0; r < 16; ++r) EXPECT_GT(b[r].count, 500) << "rank " << r;
  // rank = 8 pp + 4 dp + 2 cp + tp: ranks 0, 2, 8, 10 (dp 0, tp 0) stripe
  // the top-left block, rank 1 (tp 1) is right of it, rank 4 (dp 1) below.
  for (int r : {2, 8, 10}) {
    EXPECT_NEAR(b[r].y0, b[0].y0, 4) << "rank " << r;
    EXPECT_NEAR(b[r].x1, b[0].x1, 4) << "rank " << r;
  }
  EXPECT_LT(b[0].x1, b[1].x0 + 4);
  EXPECT_LT(b[0].y1, b[4].y0 + 4);
}

// A 4-D mesh: two dims as rows and columns, one as side-by-side grids, pp
// fixed at 0, so ranks 0-7 are drawn and 8-15 are not.
TEST_F(ViewerScreenshotTest, MeshOf4dShowsOneIndexOfTheFixedDim) {
  Image image = render("mesh_4d", "mesh",
                       {"--mesh", "pp=2, dp=2, cp=2, tp=2", "--tensor", "8, 8", "--placements",
                        "R, S(0), R, S(1)"});
  std::vector<Box> b = rank_boxes(image, 16);
  for (int r = 0; r < 8; ++r) EXPECT_GT(b[r].count, 1500) << "rank " << r;
  for (int r = 8; r < 16; ++r) EXPECT_LT(b[r].count, 200) << "rank " << r << " is in pp = 1";
  EXPECT_LT(b[1].x1, b[4].x0) << "cp = 0 left of cp = 1";
}

// The README's path: the quickstart writes every rank's trace of a real
// fake-world run (2x2 dp x tp, sequence parallel), and the viewer opens it
// without a load error, with the quickstart's collective kinds in the table
// and one timeline lane per rank.
// A capacity planner sweep (dtensor_plan --json): the selected plan's
// memory and time as stacked bars (parameters blue, activations red, compute
// blue, exposed comm orange) above the table of plans; in the overview the
// plan takes the trace's row.
TEST_F(ViewerScreenshotTest, PlanPanelDrawsBarsAndTheSweepTable) {
  Image image = render("plan", "plan", {runfile("tests/gui/testdata/plan_sweep.json")});
  EXPECT_GT(testing::find_color(image, Rgb{78, 121, 167}, 2).count, 2000) << "parameters / compute";
  EXPECT_GT(testing::find_color(image, Rgb{225, 87, 89}, 2).count, 1000) << "activations";
  EXPECT_GT(testing::find_color(image, Rgb{242, 142, 43}, 2).count, 300) << "gradients / exposed comm";
  Image overview = render("plan_overview", "all", {runfile("tests/gui/testdata/plan_llama70b_pp8.json")});
  EXPECT_GT(testing::find_color(overview, Rgb{89, 161, 79}, 2).count, 100) << "optimizer state / bubble";
}

TEST_F(ViewerScreenshotTest, QuickstartTraceOpens) {
  const std::string json = out_dir() + "/quickstart_trace.json";
  testing::ProcessResult quickstart =
      testing::run_process({runfile("examples/quickstart"), "--steps", "1", "--json", json}, "");
  ASSERT_EQ(quickstart.exit_code, 0) << quickstart.output;
  Image table = render("quickstart_comm_table", "comm_table", {json});
  EXPECT_LT(testing::find_color(table, kErrorColor, 3).count, 20) << "no load error";
  EXPECT_EQ(testing::find_color(table, kDifferenceColor, 2).count, 0) << "SPMD ranks agree";
  for (const char* kind : {"all_gather_into_tensor", "reduce_scatter_tensor"}) {
    EXPECT_GT(testing::find_color(table, collective_kind_color(kind), 3).count, 10) << kind;
  }
  Image timeline = render("quickstart_timeline", "timeline", {json});
  std::vector<Box> swatch = rank_boxes(timeline, 4, /*min_row=*/1);
  for (int r = 0; r < 4; ++r) EXPECT_GT(swatch[r].count, 0) << "lane of rank " << r;
}

TEST_F(ViewerScreenshotTest, OverviewAndMalformedTraceStillRender) {
  Image all = render("overview", "all", {runfile("tests/gui/testdata/malformed_bad_event.json")});
  EXPECT_GT(testing::find_color(all, kErrorColor, 3).count, 50) << "the load error is shown";
  EXPECT_EQ(testing::count_present(all, {RankPalette(4).color(0), RankPalette(4).color(1)}, 1000),
            2);
}

TEST_F(ViewerScreenshotTest, UnwritablePathFails) {
  testing::ProcessResult run = testing::run_process(
      {runfile("gui/dtensor_viewer"), "--screenshot", "/nonexistent/dir/x.png"}, xvfb_->display());
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.output.find("cannot write PNG"), std::string::npos) << run.output;
}

TEST(ViewerCommandLineTest, NoDisplayIsAClearNonZeroExit) {
  std::string viewer = runfile("gui/dtensor_viewer");
  testing::ProcessResult window = testing::run_process({viewer}, "");
  EXPECT_EQ(window.exit_code, 2);
  EXPECT_NE(window.output.find("cannot open a window"), std::string::npos) << window.output;
  EXPECT_NE(window.output.find("xvfb-run"), std::string::npos) << window.output;
  testing::ProcessResult shot =
      testing::run_process({viewer, "--screenshot", "/tmp/never.png"}, "");
  EXPECT_EQ(shot.exit_code, 2);
}

TEST(ViewerCommandLineTest, BadArgumentsPrintUsage) {
  testing::ProcessResult run =
      testing::run_process({runfile("gui/dtensor_viewer"), "--size", "huge"}, "");
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.output.find("--size: expected WxH"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("usage: dtensor-viewer"), std::string::npos) << run.output;
  EXPECT_EQ(testing::run_process({runfile("gui/dtensor_viewer"), "--help"}, "").exit_code, 0);
}

}  // namespace
}  // namespace dtensor::gui
