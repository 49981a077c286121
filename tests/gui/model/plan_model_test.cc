// The Plan panel's model: capacity planner reports (dtensor_plan --json,
// tests/gui/testdata/plan_*.json written by it) read into bars and tables,
// malformed ones refused with the JSON path, and the viewer's open box
// telling a plan from a trace.
#include "gui/model/plan_model.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "gui/model/viewer_state.h"
#include "tests/gui/model/testdata_files.h"

namespace dtensor::gui {
namespace {

// A report of tests/gui/testdata, read as the viewer reads a file.
PlanLoadResult load_testdata(const std::string& name) { return parse_plan_json(read_all(testdata(name)), name); }

double sum(const std::vector<PlanSlice>& slices) {
  double s = 0;
  for (const PlanSlice& x : slices) s += x.value;
  return s;
}

// A sweep of 60 plans on 4 ranks (31 fit a 2.5 MiB cap), with and without pp.
TEST(PlanModelTest, SweepReportHasEveryPlanFittingFirst) {
  const std::string text = read_all(testdata("plan_sweep.json"));
  ASSERT_TRUE(looks_like_plan_json(text));
  PlanLoadResult r = parse_plan_json(text, "plan_sweep.json");
  ASSERT_TRUE(r.report) << r.error;
  EXPECT_TRUE(r.report->sweep);
  EXPECT_EQ(r.report->plans.size(), 60u);
  EXPECT_EQ(r.report->fitting, 31);
  int pipelined = 0;
  for (size_t i = 0; i < r.report->plans.size(); ++i) {
    const PlanSummary& p = r.report->plans[i];
    SCOPED_TRACE(p.spec);
    EXPECT_EQ(p.fits, i < 31u);
    EXPECT_EQ(p.world_size, 4);
    ASSERT_EQ(p.memory.size(), 4u);  // parameters, gradients, optimizer state, activations
    EXPECT_LE(sum(p.memory), p.total_bytes * (1 + 1e-9));
    EXPECT_NEAR(sum(p.time), p.step_us, 1e-6 * p.step_us);
    EXPECT_GT(p.tokens_per_s_per_gpu, 0);
    pipelined += p.time.size() == 3 ? 1 : 0;  // a pipeline bubble slice
  }
  EXPECT_GT(pipelined, 0);
  EXPECT_EQ(r.report->plans[0].spec, "pp=2,dp=2,tp=1,nosp,micro=1,adam");
}

// One plan: Llama 3 70B on pp=8,dp=64,tp=8 with sp.
TEST(PlanModelTest, SinglePlanReportWithAPipeline) {
  PlanLoadResult r = load_testdata("plan_llama70b_pp8.json");
  ASSERT_TRUE(r.report) << r.error;
  EXPECT_FALSE(r.report->sweep);
  ASSERT_EQ(r.report->plans.size(), 1u);
  const PlanSummary& p = r.report->plans[0];
  EXPECT_EQ(p.spec, "pp=8,dp=64,tp=8,sp,micro=1,adam");
  EXPECT_TRUE(p.fits);
  ASSERT_EQ(p.time.size(), 3u);
  EXPECT_EQ(p.time[2].name, "pipeline bubble");
  EXPECT_GT(p.time[2].value, 0);
  EXPECT_GT(p.mfu, 0.1);
  EXPECT_LT(p.mfu, 1.0);
}

// A report with memory as the GPU sees it (dtensor_plan since 2026-12-01:
// Llama 3 8B, FSDP over 64 A100s, mp=bf16, ac=op): the allocator's cache,
// NCCL's buffers and the CUDA context are slices of the bar, and the total
// is the device's.
TEST(PlanModelTest, DeviceMemoryRowsAreSlices) {
  PlanLoadResult r = load_testdata("plan_llama8b_fsdp64.json");
  ASSERT_TRUE(r.report) << r.error;
  const PlanSummary& p = r.report->plans[0];
  ASSERT_EQ(p.memory.size(), 7u);
  EXPECT_EQ(p.memory[4].name, "allocator cache");
  EXPECT_EQ(p.memory[5].name, "NCCL buffers");
  EXPECT_EQ(p.memory[6].name, "CUDA context");
  EXPECT_DOUBLE_EQ(p.memory[5].value, 512.0 * (1 << 20));
  EXPECT_NEAR(sum(p.memory), p.total_bytes, 1.0) << "the slices add up to the device total";
  EXPECT_TRUE(p.fits);
}

// The same report's time (dtensor_plan since the second run of 2026-12-01):
// compute, the collectives it does not hide, and the compute slowed by those
// it hides, adding up to the step; older reports (plan_sweep.json) have no
// slowdown slice.
TEST(PlanModelTest, OverlapSlowdownIsASliceOfTheStep) {
  PlanLoadResult r = load_testdata("plan_llama8b_fsdp64.json");
  ASSERT_TRUE(r.report) << r.error;
  const PlanSummary& p = r.report->plans[0];
  ASSERT_EQ(p.time.size(), 3u);
  EXPECT_EQ(p.time[1].name, "exposed comm");
  EXPECT_EQ(p.time[2].name, "overlap slowdown");
  EXPECT_GT(p.time[1].value, 0) << "FSDP's first all-gather and last reduce-scatter";
  EXPECT_GT(p.time[2].value, 0);
  EXPECT_NEAR(sum(p.time), p.step_us, 1e-6 * p.step_us);
  PlanLoadResult old = load_testdata("plan_sweep.json");
  ASSERT_TRUE(old.report) << old.error;
  for (const PlanSlice& s : old.report->plans[0].time) EXPECT_NE(s.name, "overlap slowdown");
}

TEST(PlanModelTest, MalformedReportsNameThePath) {
  const std::string good = read_all(testdata("plan_llama70b_pp8.json"));
  std::string bad = good;
  bad.replace(bad.find("\"total\": "), 9, "\"total\": \"x\", \"was\": ");
  PlanLoadResult r = parse_plan_json(bad, "bad.json");
  EXPECT_FALSE(r.report);
  EXPECT_EQ(r.error, "bad.json: $.memory.total: expected a number, got string");
  std::string newer = good;
  newer.replace(newer.find("\"dtensor_plan_version\": 1"), 25, "\"dtensor_plan_version\": 9");
  EXPECT_NE(parse_plan_json(newer, "new.json").error.find("newer than this viewer reads"), std::string::npos);
  EXPECT_EQ(parse_plan_json("{", "cut.json").error, "cut.json: not JSON");
  EXPECT_FALSE(looks_like_plan_json(read_all(testdata("tp_mlp_trace.json"))));
}

// The open box loads a plan into state.plan and leaves the trace alone.
TEST(PlanModelTest, ViewerLoadsAPlanBesideATrace) {
  ViewerState state;
  ASSERT_TRUE(state.load_trace(testdata("tp_mlp_trace.json"))) << state.trace_error;
  ASSERT_TRUE(state.load_trace(testdata("plan_sweep.json"))) << state.trace_error;
  ASSERT_TRUE(state.plan);
  EXPECT_EQ(state.plan->plans.size(), 60u);
  EXPECT_TRUE(state.loaded) << "the trace loaded before stays";
  EXPECT_FALSE(state.load_trace(testdata("missing_plan.json")));
  EXPECT_NE(state.trace_error.find("cannot open"), std::string::npos);
  EXPECT_TRUE(state.plan);
}

}  // namespace
}  // namespace dtensor::gui
