// Comm reports: the example MLP program (examples/report) on the fake world
// and in solo mode,
// user programs, golden files, markdown.
#include "debug/report/comm_report.h"

#include <gtest/gtest.h>
#include <torch/nn/modules/linear.h>
#include <torch/utils.h>

#include <nlohmann/json.hpp>

#include "core/dtensor.h"
#include "core/nn/module_call.h"
#include "core/parallel/module_params.h"
#include "examples/report/report_programs.h"
#include "testing/dtensor_test.h"

namespace dtensor::debug {
namespace {

using Json = nlohmann::json;

class CommReportTest : public ::testing::Test {
 protected:
  void SetUp() override { examples::register_report_programs(); }
};

ReportOptions mlp_options(int64_t world_size) {
  ReportOptions o;
  o.program = "mlp";
  o.world_size = world_size;
  return o;
}

TEST_F(CommReportTest, MlpOnTheFakeWorld) {
  CommReport report = run_comm_report(mlp_options(4));
  EXPECT_COMM_COUNTS(report, {{"all_reduce", 1}});
  EXPECT_COMM_MODULE_COUNTS(report, "Global", "forward", {{"all_reduce", 1}});
  EXPECT_COMM_MODULE_COUNTS(report, "MLPModule", "forward", {{"all_reduce", 1}});
  EXPECT_COMM_MODULE_COUNTS(report, "MLPModule.net2", "forward", {{"all_reduce", 1}});
  EXPECT_TRUE(report.trace.differing_ranks.empty());
  EXPECT_EQ(report.trace.per_rank_counts.size(), 4u);
}

TEST_F(CommReportTest, MlpMatchesGolden) {
  EXPECT_MATCHES_GOLDEN(run_comm_report(mlp_options(4)), "tests/debug/testdata/mlp_fake4.golden.json");
}

// 4096 ranks in solo mode, each holding 4 hidden units as in a fake world of
// 4 ranks with hidden 16: the same per-rank layout, so the same counts and bytes.
TEST_F(CommReportTest, SoloLargeWorldMatchesSmallFakeWorld) {
  ReportOptions solo = mlp_options(4096);
  solo.backend = BackendKind::kSolo;
  solo.rank = 4095;
  solo.args["hidden"] = std::to_string(4 * 4096);
  CommReport large = run_comm_report(solo);
  CommReport small = run_comm_report(mlp_options(4));
  EXPECT_EQ(large.trace.rank, 4095);
  EXPECT_EQ(large.get_comm_counts(), small.get_comm_counts());
  EXPECT_EQ(large.get_comm_module_counts(), small.get_comm_module_counts());
  Json l = Json::parse(report_json(large));
  Json s = Json::parse(report_json(small));
  EXPECT_EQ(l["bytes"], s["bytes"]);
  EXPECT_EQ(l["bytes"], Json::parse(R"({"all_reduce": {"0": 320}})"));
  // Solo mode carries the same origins (issue #21 item 5): the 4096-rank
  // report explains itself as the 4-rank one does.
  EXPECT_EQ(l["origins"], s["origins"]);
  ASSERT_EQ(l["origins"].size(), 1u);
  EXPECT_EQ(l["origins"][0]["explicit"], true);
  ASSERT_TRUE(large.trace.collectives[0].origin.has_value());
  EXPECT_EQ(large.trace.collectives[0].origin->cause, "parallel_style");
  EXPECT_EQ(l["world_size"], 4096);
  ASSERT_EQ(large.trace.collectives.size(), 1u);
  EXPECT_EQ(large.trace.collectives[0].group.size(), 4096u);
  // Ring estimate grows with the group: 2 * 4095/4096 * 320 B vs 2 * 3/4 * 320 B.
  EXPECT_GT(l["estimated_us"]["total"].get<double>(), s["estimated_us"]["total"].get<double>());
}

TEST_F(CommReportTest, ReportJsonIsDeterministicAndComplete) {
  CommReport report = run_comm_report(mlp_options(2));
  const std::string text = report_json(report);
  EXPECT_EQ(report_json(run_comm_report(mlp_options(2))), text);
  Json j = Json::parse(text);
  EXPECT_EQ(j["dtensor_report_version"], 1);
  EXPECT_EQ(j["program"], "mlp");
  EXPECT_EQ(j["backend"], "fake");
  EXPECT_EQ(j["rank"], 0);
  EXPECT_EQ(j["total_collectives"], 1);
  EXPECT_EQ(j["module_counts"]["MLPModule.net2"]["forward"]["all_reduce"], 1);
  EXPECT_EQ(j["mesh"]["shape"], Json::parse("[2]"));
  // 5 us, 2 ring steps of 0.5 us (an all_reduce on 2 ranks), 320 ring bytes at 50 GB/s.
  EXPECT_NEAR(j["estimated_us"]["all_reduce"].get<double>(), 5.0 + 2 * 0.5 + 320.0 / 50e3, 1e-9);
}

TEST_F(CommReportTest, MarkdownHasTables) {
  const std::string md = report_markdown(run_comm_report(mlp_options(4)));
  EXPECT_EQ(md.rfind("# Comm report: mlp\n", 0), 0u);
  EXPECT_NE(md.find("- backend: fake, world size 4, counts of rank 0 (every rank agrees)"), std::string::npos)
      << md;
  EXPECT_NE(md.find("| MLPModule.net2 | forward | all_reduce | 1 | 320 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| all_reduce | 0 | 1 | 320 | 480 | 8.010 |"), std::string::npos) << md;
  // The fake world counts memory: every rank's peak and where (#20).
  EXPECT_NE(md.find("## Memory per rank (traced part)"), std::string::npos) << md;
  EXPECT_NE(md.find("| 3 | "), std::string::npos) << md;
  EXPECT_NE(md.find(" | MLPModule"), std::string::npos) << md;
}

TEST_F(CommReportTest, GoldenDiffIsReadable) {
  const std::string actual = report_json(run_comm_report(mlp_options(4)));
  Json golden = Json::parse(actual);
  golden["module_counts"]["MLPModule.net2"]["forward"]["all_reduce"] = 2;
  golden["bytes"]["all_reduce"]["0"] = 640;
  golden["estimated_us"]["total"] = 123.0;  // not compared
  GoldenComparison cmp = compare_report_json(golden.dump(), actual);
  EXPECT_FALSE(cmp.matches);
  EXPECT_EQ(cmp.diff,
            "module_counts[\"MLPModule.net2\"][\"forward\"][\"all_reduce\"]: expected 2, got 1\n"
            "bytes[\"all_reduce\"][\"0\"]: expected 640, got 320\n");
  EXPECT_TRUE(compare_report_json(actual, actual).matches);
  EXPECT_THROW(compare_report_json("{}", actual), c10::Error);
}

// Issue #21: a golden diff of two runs says what changed and why. Run A
// feeds a column-wise Linear a replicated input; run B a batch-sharded one,
// so sharding propagation gathers it: the diff names the op, the input and
// the placements, not only "all_gather_into_tensor: expected 0, got 1".
TEST_F(CommReportTest, GoldenDiffNamesTheOriginOfTheDifference) {
  register_report_program("colwise_linear", "x @ W^T with W column-wise", [](World& world, ReportContext& ctx) {
    auto mesh = DeviceMesh::init(ctx.device_type(), {world.size()});
    torch::manual_seed(0);
    torch::nn::Linear lin(16, 32);
    for (const char* name : {"weight", "bias"}) {
      set_parameter(*lin, name, distribute_tensor(param(*lin, name).detach(), mesh, {Shard(0)}).requires_grad_(true));
    }
    const Placement input = ctx.int_arg("shard_input", 0) != 0 ? Placement(Shard(0)) : Placement(Replicate());
    DTensor x = distribute_tensor(torch::randn({8, 16}), mesh, {input});
    auto guard = ctx.trace(*lin, "Lin");
    nn::call(lin, x);
  });
  ReportOptions o;
  o.program = "colwise_linear";
  o.world_size = 4;
  const std::string before = report_json(run_comm_report(o));
  o.args["shard_input"] = "1";
  CommReport after_report = run_comm_report(o);
  const std::string after = report_json(after_report);
  Json origins = Json::parse(after)["origins"];
  ASSERT_EQ(origins.size(), 1u) << origins.dump();
  EXPECT_EQ(origins[0]["explicit"], false);
  EXPECT_EQ(origins[0]["module"], "Lin");
  GoldenComparison cmp = compare_report_json(before, after);
  EXPECT_FALSE(cmp.matches);
  const std::string why = "new implicit all_gather_into_tensor in Lin from aten::addmm input 1, S(0) -> R (forward, 0 -> 1)\n";
  EXPECT_EQ(cmp.diff.rfind(why, 0), 0u) << cmp.diff;  // the why comes first, then the counts
  EXPECT_NE(cmp.diff.find("counts[\"all_gather_into_tensor\"]: expected (missing), got 1"), std::string::npos) << cmp.diff;
  // Same counts, different origin: still a difference (an explicit gather became implicit).
  Json edited = Json::parse(after);
  edited["origins"][0]["explicit"] = true;
  edited["origins"][0]["origin"] = "redistribute (DTensor::redistribute), S(0) -> R";
  GoldenComparison swapped = compare_report_json(edited.dump(), after);
  EXPECT_FALSE(swapped.matches);
  EXPECT_NE(swapped.diff.find("gone: explicit all_gather_into_tensor in Lin from redistribute"), std::string::npos)
      << swapped.diff;
  EXPECT_NE(swapped.diff.find("new implicit all_gather_into_tensor in Lin from aten::addmm input 1"), std::string::npos)
      << swapped.diff;
  // A golden written before origins existed compares counts and bytes only.
  Json old_golden = Json::parse(after);
  old_golden.erase("origins");
  EXPECT_TRUE(compare_report_json(old_golden.dump(), after).matches);
  // The markdown says why too.
  const std::string md = report_markdown(after_report);
  EXPECT_NE(md.find("| Lin | forward | all_gather_into_tensor | no | aten::addmm input 1, S(0) -> R | 1 |"),
            std::string::npos)
      << md;
}

TEST_F(CommReportTest, UserProgramsRegisterByName) {
  register_report_program("two_gathers", "all_gather twice", [](World& world, ReportContext& ctx) {
    auto mesh = DeviceMesh::init(ctx.device_type(), {world.size()});
    DTensor x = distribute_tensor(at::ones({world.size() * 2}, at::TensorOptions().device(mesh.device())),
                                  mesh, {Shard(0)});
    auto guard = ctx.trace();
    for (int64_t i = 0; i < ctx.int_arg("times", 1); ++i) x.full_tensor();
  });
  bool listed = false;
  for (const ReportProgramInfo& p : report_programs()) listed |= p.name == "two_gathers";
  EXPECT_TRUE(listed);
  ReportOptions o;
  o.program = "two_gathers";
  o.world_size = 8;
  o.backend = BackendKind::kSolo;
  o.rank = 5;
  o.meta = true;  // shape-only: nothing allocated
  o.args["times"] = "2";
  EXPECT_COMM_COUNTS(run_comm_report(o), {{"all_gather_into_tensor", 2}});
  o.args["times"] = "two";
  EXPECT_THROW(run_comm_report(o), c10::Error);
}

// Linear layers trace on meta tensors in solo mode (relu has no meta kernel
// in LibTorch 1.13, so the MLP itself refuses meta with a clear message).
TEST_F(CommReportTest, MetaTensorsInSoloMode) {
  register_report_program("colwise_linear_meta", "", [](World& world, ReportContext& ctx) {
    auto mesh = DeviceMesh::init(ctx.device_type(), {world.size()});
    // 8,192 output features, at least one row per rank of the 4,096: a dim
    // split over more ranks than it has rows is gathered before t and mm
    // (Note [Matrix products split no dim smaller than the group]).
    torch::nn::Linear lin(16, 8192);
    for (const char* name : {"weight", "bias"}) {  // moved to meta first: Module::to(meta) refuses
      const at::Tensor local = param(*lin, name).detach().to(mesh.device());
      set_parameter(*lin, name, distribute_tensor(local, mesh, {Shard(0)}).detach().requires_grad_(true));
    }
    DTensor x =
        distribute_tensor(at::empty({8, 16}, at::TensorOptions().device(c10::kMeta)), mesh, {Replicate()});
    auto guard = ctx.trace(*lin, "Lin");
    DTensor y = nn::call(lin, x);
    y.redistribute({Replicate()});
  });
  ReportOptions o;
  o.program = "colwise_linear_meta";
  o.world_size = 4096;
  o.backend = BackendKind::kSolo;
  o.rank = 17;
  o.meta = true;
  CommReport r = run_comm_report(o);
  EXPECT_COMM_COUNTS(r, {{"all_gather_into_tensor", 1}});
  ReportOptions mlp = mlp_options(4);
  mlp.backend = BackendKind::kSolo;
  mlp.meta = true;
  try {
    run_comm_report(mlp);
    FAIL() << "expected an error";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("no meta kernel for relu"), std::string::npos) << e.what();
  }
}

TEST_F(CommReportTest, MistakesAreExplained) {
  ReportOptions o = mlp_options(2);
  o.program = "nope";
  try {
    run_comm_report(o);
    FAIL() << "expected an error";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown program 'nope'; registered: "), std::string::npos)
        << e.what();
  }
  register_report_program("forgets_to_trace", "", [](World&, ReportContext&) {});
  o.program = "forgets_to_trace";
  EXPECT_THROW(run_comm_report(o), c10::Error);
  o = mlp_options(2);
  o.backend = BackendKind::kGloo;
  EXPECT_THROW(run_comm_report(o), c10::Error);
}

}  // namespace
}  // namespace dtensor::debug
