// Pipeline-parallel plans (Note [Pipeline stages] in planner/estimate.cc):
// the stage traces split the model, the memory and the bubble follow the
// 1F1B and interleaved schedules, and the per-micro-batch activations a
// stage keeps are what the CPU fake world measures.
#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "planner/estimate.h"
#include "planner/llama_step.h"
#include "planner/sweep.h"

namespace dtensor::planner {
namespace {

// 8 layers, 16 sequences: with dp=2 and micro=1, 8 micro-batches per step.
const char* kModel = "llama:layers=8,dim=64,ffn=128,heads=8,kv_heads=4,vocab=96,seq=32,batch=16,dtype=float32";

PlanConfig stage_plan(const char* mesh, const char* options, PipelineStage stage) {
  PlanConfig p = parse_plan(parse_mesh(mesh), options);
  p.stage = stage;
  return p;
}

// The first and the last stage hold the whole model between them: their
// parameters and matmul FLOPs add up to an unsplit model's.
TEST(PipelinePlanTest, FirstAndLastStageSplitTheModel) {
  ModelConfig whole = parse_model(kModel), half = whole;
  half.layers = whole.layers / 2;
  const Topology topo = default_topology();
  const PlanConfig p = parse_plan(parse_mesh("dp=2,tp=2"), "sp,adam");
  const StepTotals all = step_totals(trace_solo_step(llama_step_program(), whole, p), whole, p, topo);
  const PlanConfig pf = stage_plan("dp=2,tp=2", "sp,adam", PipelineStage::kFirst);
  const PlanConfig pl = stage_plan("dp=2,tp=2", "sp,adam", PipelineStage::kLast);
  const StepTotals first = step_totals(trace_solo_step(llama_step_program(), half, pf), half, pf, topo);
  const StepTotals last = step_totals(trace_solo_step(llama_step_program(), half, pl), half, pl, topo);
  EXPECT_EQ(first.parameter_bytes + last.parameter_bytes, all.parameter_bytes);
  EXPECT_EQ(first.optimizer_bytes + last.optimizer_bytes, all.optimizer_bytes);
  EXPECT_NEAR(first.forward_flops + last.forward_flops, all.forward_flops, 1e-9 * all.forward_flops);
  EXPECT_NEAR(first.backward_flops + last.backward_flops, all.backward_flops, 1e-9 * all.backward_flops);
  // The embedding is the first stage's, the output projection the last's.
  EXPECT_GT(first.parameter_bytes, 0);
  EXPECT_GT(last.forward_flops, first.forward_flops);
  ASSERT_TRUE(first.kept_bytes && last.kept_bytes && first.peak_bytes);
  EXPECT_GT(*first.kept_bytes, 0);
  EXPECT_LT(*first.kept_bytes, *first.peak_bytes);
}

// What a stage's forward keeps for backward, read off the solo trace (meta
// tensors, counted), is what every rank of the CPU fake world keeps.
TEST(PipelinePlanTest, KeptActivationsMatchTheFakeWorld) {
  ModelConfig m = parse_model(kModel);
  m.layers = 2;
  for (PipelineStage stage : {PipelineStage::kFirst, PipelineStage::kLast}) {
    const PlanConfig p = stage_plan("dp=2,tp=2", "sp,adam", stage);
    const StepMeasure solo = trace_solo_step(llama_step_program(), m, p);
    const std::vector<StepMeasure> ranks = trace_fake_step(llama_step_program(), m, p);
    ASSERT_TRUE(solo.kept_bytes);
    for (const StepMeasure& r : ranks) {
      ASSERT_TRUE(r.kept_bytes);
      EXPECT_NEAR(static_cast<double>(*r.kept_bytes), static_cast<double>(*solo.kept_bytes), 0.1 * *solo.kept_bytes)
          << "rank " << r.rank;
    }
  }
}

// 1F1B: the first rank holds min(m, pp) micro-batches, the bubble is
// (pp - 1) of (m + pp - 1) micro-batch slots; interleaving halves the bubble
// and holds more on the first rank.
TEST(PipelinePlanTest, MemoryAndBubbleFollowTheSchedule) {
  const ModelConfig m = parse_model(kModel);
  const Topology topo = default_topology();
  const PlanEstimate one = estimate_plan(llama_step_program(), m, parse_plan(parse_mesh("pp=4,dp=2,tp=2"), "sp,adam"), topo);
  ASSERT_TRUE(one.pipeline);
  const PipelineEstimate& p = *one.pipeline;
  EXPECT_EQ(one.micro_steps, 8);
  EXPECT_EQ(p.in_flight_first, 4);
  EXPECT_EQ(p.in_flight_last, 1);
  // The first stage's own estimate: its peak, plus three more micro-batches' kept activations.
  ModelConfig quarter = m;
  quarter.layers = 2;
  const PlanEstimate first =
      estimate_plan(llama_step_program(), quarter, stage_plan("dp=2,tp=2", "sp,adam", PipelineStage::kFirst), topo);
  ASSERT_TRUE(first.totals.kept_bytes);
  EXPECT_EQ(p.first_bytes, first.total_bytes + 3 * *first.totals.kept_bytes);
  EXPECT_EQ(one.total_bytes, std::max(p.first_bytes, p.last_bytes));
  const double update = one.step_us_overlap - (8 + 3) * (p.bubble_us / 3);
  EXPECT_NEAR(p.bubble_us / (one.step_us_overlap - update), 3.0 / 11.0, 1e-9);
  EXPECT_GT(p.send_bytes, 0);

  const PlanEstimate two =
      estimate_plan(llama_step_program(), m, parse_plan(parse_mesh("pp=4,dp=2,tp=2"), "sp,adam,v=2"), topo);
  ASSERT_TRUE(two.pipeline);
  EXPECT_EQ(two.pipeline->in_flight_first, (2.0 * 4 + 3) / 2);
  EXPECT_EQ(two.pipeline->in_flight_last, (4.0 + 1) / 2);
  EXPECT_LT(two.pipeline->bubble_us, 0.6 * p.bubble_us);
  EXPECT_GT(two.pipeline->first_bytes, p.first_bytes);
  // (Not always a shorter step: each micro-batch crosses twice as many stage
  // boundaries, which on this small model costs more than the bubble saves.)

  // More micro-batches: a smaller share of the step in the bubble.
  ModelConfig more = m;
  more.batch = 64;
  const PlanEstimate longer =
      estimate_plan(llama_step_program(), more, parse_plan(parse_mesh("pp=4,dp=2,tp=2"), "sp,adam"), topo);
  EXPECT_LT(longer.pipeline->bubble_us / longer.step_us_overlap, p.bubble_us / one.step_us_overlap);
}

// Throughput and MFU (PaLM's model FLOPs: 6 N without the input embedding
// + 12 L H Q T per token) follow from the step time.
TEST(PipelinePlanTest, ThroughputAndMfuFollowTheStep) {
  const ModelConfig m = parse_model(kModel);
  const PlanEstimate e =
      estimate_plan(llama_step_program(), m, parse_plan(parse_mesh("pp=4,dp=2,tp=2"), "sp,adam"), default_topology());
  EXPECT_DOUBLE_EQ(e.tokens_per_second_per_gpu(), 16.0 * 32 / 16 / (e.step_us_overlap / 1e6));
  const double n = static_cast<double>(m.parameter_count() - m.vocab * m.dim);
  EXPECT_DOUBLE_EQ(model_flops_per_token(m), 6 * n + 12.0 * 8 * 64 * 32);
  EXPECT_DOUBLE_EQ(e.mfu(), e.tokens_per_second_per_gpu() * model_flops_per_token(m) / (989e12));
}

TEST(PipelinePlanTest, PlansThePipelineCannotRunAreRefused) {
  const ModelConfig m = parse_model(kModel);
  EXPECT_THROW(parse_mesh("dp=2,pp=4"), std::invalid_argument);
  EXPECT_NE(plan_problem(m, parse_plan(parse_mesh("dp=2,tp=2"), "v=2")).find("add a pp mesh dim"), std::string::npos);
  EXPECT_NE(plan_problem(m, parse_plan(parse_mesh("pp=3,dp=2"), "adam")).find("does not divide layers"),
            std::string::npos);
  // 16 sequences over dp=4 with micro=2: 2 micro-batches for 4 stages.
  EXPECT_NE(plan_problem(m, parse_plan(parse_mesh("pp=4,dp=4"), "micro=2")).find("at least 4 micro-batches"),
            std::string::npos);
  EXPECT_EQ(plan_problem(m, parse_plan(parse_mesh("pp=4,dp=2,tp=2"), "sp,v=2")), "");
}

TEST(PipelinePlanTest, SweepTriesPipelineSizes) {
  SweepOptions s;
  s.world_size = 8;
  s.pp_sizes = {1, 2};
  s.virtual_stages = {1, 2};
  s.micro_batches = {1};
  s.optimizers = {Optimizer::kAdam};
  s.activation_checkpointing = {"none"};
  const SweepResult r = sweep_plans(llama_step_program(), parse_model(kModel), default_topology(), s);
  int with_pp = 0, interleaved = 0;
  for (const PlanEstimate& e : r.ranked) {
    with_pp += e.plan.mesh.size_of("pp") == 2 ? 1 : 0;
    interleaved += e.plan.virtual_stages == 2 ? 1 : 0;
  }
  EXPECT_GT(with_pp, 0);
  EXPECT_GT(interleaved, 0);
  EXPECT_LT(with_pp, static_cast<int>(r.ranked.size()));
}

}  // namespace
}  // namespace dtensor::planner
