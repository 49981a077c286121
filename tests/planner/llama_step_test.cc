// The planner's Llama-style step in solo mode (meta tensors): the bytes it
// reads off the tensors, the collectives CommDebugMode records, and the
// per-layer extrapolation against a full trace.
#include "planner/llama_step.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <memory>
#include <sstream>

#include "layout/collective_origin.h"
#include "layout/text.h"
#include "planner/estimate.h"
#include "planner/report.h"
#include "trace/comm_estimate.h"

namespace dtensor::planner {
namespace {

const char* kSmall = "llama:layers=3,dim=64,ffn=128,heads=8,kv_heads=4,vocab=96,seq=16,batch=8,dtype=float32";

// The same collectives, counts and bytes, row by row.
void expect_same_comm(const StepTotals& scaled, const StepTotals& traced) {
  ASSERT_EQ(scaled.comm.size(), traced.comm.size());
  for (size_t i = 0; i < traced.comm.size(); ++i) {
    SCOPED_TRACE(traced.comm[i].kind + " " + traced.comm[i].mesh_dim);
    EXPECT_EQ(scaled.comm[i].kind, traced.comm[i].kind);
    EXPECT_EQ(scaled.comm[i].count, traced.comm[i].count);
    EXPECT_EQ(scaled.comm[i].bytes, traced.comm[i].bytes);
  }
}

TEST(LlamaStepTest, StaticBytesAreTheLocalShards) {
  const ModelConfig m = parse_model(kSmall);
  const PlanConfig p = parse_plan(parse_mesh("dp=2,tp=4"), "sp,adam,micro=2");
  const StepMeasure s = trace_solo_step(llama_step_program(), m, p);
  // Every weight matrix is split over tp = 4; the 2 * layers + 1 norm weights are replicated.
  const int64_t norms = (2 * m.layers + 1) * m.dim;
  EXPECT_EQ(s.parameter_bytes, ((m.parameter_count() - norms) / 4 + norms) * 4);
  EXPECT_EQ(s.gradient_bytes, s.parameter_bytes);
  EXPECT_EQ(s.optimizer_bytes, 2 * s.parameter_bytes);  // Adam: exp_avg, exp_avg_sq
}

TEST(LlamaStepTest, SequenceParallelTradesAllReduceForGatherAndScatter) {
  const ModelConfig m = parse_model(kSmall);
  const Topology topo = default_topology();
  for (bool sp : {false, true}) {
    SCOPED_TRACE(sp ? "sp" : "nosp");
    const PlanConfig p = parse_plan(parse_mesh("dp=2,tp=4"), sp ? "sp" : "nosp");
    const StepTotals t = step_totals(trace_solo_step(llama_step_program(), m, p), m, p, topo);
    std::map<std::string, int64_t> counts;
    for (const CommRow& r : t.comm) counts[r.phase + " " + r.kind + " " + r.mesh_dim] += r.count;
    const int64_t micro = m.batch / 2;  // micro_batch 1 over dp = 2
    // Megatron's count: forward, the embedding and each region's output
    // (2 per layer); backward, each region's input gradient (2 per layer and
    // the output projection's). Sequence parallelism makes each of these a
    // reduce_scatter with an all_gather before the region, and adds the
    // all_reduce of the replicated norm weights' gradients (2 per layer + 1).
    const int64_t regions = (2 * m.layers + 1) + (2 * m.layers + 1);
    if (sp) {
      EXPECT_EQ(counts["micro-step reduce_scatter_tensor tp"], micro * regions);
      EXPECT_EQ(counts["micro-step all_gather_into_tensor tp"], micro * regions);
      EXPECT_EQ(counts["micro-step all_reduce tp"], micro * (2 * m.layers + 1));
    } else {
      EXPECT_EQ(counts["micro-step all_reduce tp"], micro * regions);
      EXPECT_EQ(counts["micro-step all_gather_into_tensor tp"], micro);  // the logits
    }
    EXPECT_EQ(counts["update all_reduce dp"], 1);
  }
}

// fsdp (fully_shard on each layer and the root over dp, with tp: FSDP + TP):
// parameters, gradients and optimizer state are 1/dp of the tp-only plan's;
// each micro-step gathers every layer's parameters over dp twice (forward and
// backward; the root's once: it is not resharded after forward) and
// reduce-scatters every group's gradients once; the update communicates
// nothing; and the 70B plan that does not fit in 80 GiB without it does.
TEST(LlamaStepTest, FullyShardedPlans) {
  const ModelConfig m = parse_model(kSmall);
  const Topology topo = default_topology();
  const PlanConfig ddp = parse_plan(parse_mesh("dp=2,tp=4"), "sp,adam");
  const PlanConfig fsdp = parse_plan(parse_mesh("dp=2,tp=4"), "sp,adam,fsdp");
  const StepMeasure a = trace_solo_step(llama_step_program(), m, ddp);
  const StepMeasure b = trace_solo_step(llama_step_program(), m, fsdp);
  // Every local tensor's rows split over dp = 2 (all even here).
  EXPECT_EQ(b.parameter_bytes, a.parameter_bytes / 2);
  EXPECT_EQ(b.gradient_bytes, a.gradient_bytes / 2);
  EXPECT_EQ(b.optimizer_bytes, a.optimizer_bytes / 2);
  std::map<std::string, int64_t> counts;
  for (const CommRow& r : step_totals(b, m, fsdp, topo).comm) counts[r.phase + " " + r.kind + " " + r.mesh_dim] += r.count;
  const int64_t micro = m.batch / 2;
  EXPECT_EQ(counts["micro-step all_gather_into_tensor dp"], micro * (2 * m.layers + 1));
  EXPECT_EQ(counts["micro-step reduce_scatter_tensor dp"], micro * (m.layers + 1));
  EXPECT_EQ(counts["update all_reduce dp"], 0);
  const ModelConfig big = parse_model("llama-70b");
  const PlanEstimate without = estimate_plan(llama_step_program(), big, parse_plan(parse_mesh("dp=512,tp=8"), "sp,adam"), topo);
  const PlanEstimate with = estimate_plan(llama_step_program(), big, parse_plan(parse_mesh("dp=512,tp=8"), "sp,adam,fsdp"), topo);
  std::cout << "70B dp=512,tp=8: " << format_bytes(without.total_bytes, 2) << " per rank without fsdp, "
            << format_bytes(with.total_bytes, 2) << " with\n";
  EXPECT_FALSE(without.fits());
  EXPECT_TRUE(with.fits());
  // FSDP's dp collectives hide behind the micro-steps' compute up to its
  // length but for their ends, and slow the compute they hide behind (Note
  // [Step time estimate]); the rest of the comm does not move.
  EXPECT_GT(with.prefetched_comm_us, 0);
  EXPECT_EQ(without.prefetched_comm_us, 0);
  const double micro_compute = with.compute_us - with.totals.update_compute_us;
  const double exposed = std::min(with.prefetched_comm_us,
                                  std::max(static_cast<double>(with.micro_steps) * with.totals.fsdp_ends_us,
                                           with.prefetched_comm_us - micro_compute));
  EXPECT_NEAR(with.exposed_fsdp_comm_us, exposed, 1e-6 * exposed);
  const double s = topo.overlap_slowdown;
  EXPECT_NEAR(with.step_us_overlap,
              with.compute_us + with.blocking_comm_us + exposed + (with.prefetched_comm_us - exposed) * s / (1 + s),
              1e-6 * with.step_us_overlap);
  EXPECT_NEAR(with.step_us_serial, with.compute_us + with.blocking_comm_us + with.prefetched_comm_us, 1e-6 * with.step_us_serial);
}

// What no compute can hide of FSDP's collectives, each micro-step: the
// forward's first all-gather (the root's parameters: embedding, final norm,
// output) and the backward's last reduction on each mesh dim (the root's
// reduce-scatter over dp; with HSDP, its all_reduce over rep too).
TEST(LlamaStepTest, FsdpEndsAreTheRootsGatherAndReductions) {
  const ModelConfig m = parse_model(kSmall);
  const Topology topo = default_topology();
  const int64_t root_bytes = (2 * m.vocab * m.dim + m.dim) * m.element_size();
  for (const char* mesh : {"dp=4", "rep=2,dp=2"}) {
    SCOPED_TRACE(mesh);
    const PlanConfig p = parse_plan(parse_mesh(mesh), "adam,fsdp");
    const StepMeasure measure = trace_solo_step(llama_step_program(), m, p);
    std::vector<const trace::CollectiveRecord*> gathers;
    std::map<std::string, const trace::CollectiveRecord*> last;
    for (const trace::CollectiveRecord& r : measure.forward_backward.collectives) {
      ASSERT_TRUE(r.origin.has_value()) << r.kind;
      if (r.phase == trace::Phase::kForward && r.origin->cause == origin_cause::kFsdpUnshard) gathers.push_back(&r);
      if (r.phase == trace::Phase::kBackward && r.origin->cause == origin_cause::kFsdpReduceGrad) last[r.mesh_dim_name] = &r;
    }
    ASSERT_FALSE(gathers.empty());
    EXPECT_EQ(gathers.front()->output_bytes, root_bytes);
    EXPECT_EQ(gathers.front()->mesh_dim_name, "dp");
    ASSERT_EQ(last.count("dp"), 1u);
    EXPECT_EQ(last["dp"]->kind, "reduce_scatter_tensor");
    EXPECT_EQ(last["dp"]->bytes, root_bytes);
    EXPECT_EQ(last.size(), p.mesh.size_of("rep") > 1 ? 2u : 1u);
    double ends = trace::estimate_collective_us(*gathers.front(), topo.link("dp"));
    for (const auto& [dim, r] : last) ends += trace::estimate_collective_us(*r, topo.link(dim));
    const StepTotals totals = step_totals(measure, m, p, topo);
    EXPECT_NEAR(totals.fsdp_ends_us, ends, 1e-9 * ends);
    // A small model: the ends and more are exposed; without the overlap
    // slowdown the step is compute plus what is exposed.
    Topology plain = topo;
    plain.overlap_slowdown = 0;
    const PlanEstimate e = estimate_from_totals(step_totals(measure, m, p, plain), m.layers, m, p, plain);
    EXPECT_GE(e.exposed_fsdp_comm_us, static_cast<double>(e.micro_steps) * ends * (1 - 1e-9));
    EXPECT_EQ(e.overlap_slowdown_us, 0);
    EXPECT_NEAR(e.step_us_overlap, e.compute_us + e.blocking_comm_us + e.exposed_fsdp_comm_us, 1e-9 * e.step_us_overlap);
  }
  const StepTotals tp_only = step_totals(trace_solo_step(llama_step_program(), m, parse_plan(parse_mesh("dp=2,tp=4"), "sp")),
                                         m, parse_plan(parse_mesh("dp=2,tp=4"), "sp"), topo);
  EXPECT_EQ(tp_only.fsdp_ends_us, 0);
}

// The rotary embedding (ModelConfig::rope, on by default) is memory-bound
// traffic on q and k: the same matmul FLOPs and collectives without it, less
// pointwise traffic, and "rope=0" in the model's spec.
TEST(LlamaStepTest, RotaryEmbeddingIsTrafficOnQueriesAndKeys) {
  const ModelConfig with = parse_model(kSmall);
  const ModelConfig without = parse_model(std::string(kSmall) + ",rope=0");
  EXPECT_TRUE(with.rope);
  EXPECT_FALSE(without.rope);
  EXPECT_EQ(with.to_string().find("rope"), std::string::npos);
  EXPECT_EQ(parse_model(without.to_string()).to_string(), without.to_string());
  EXPECT_NE(without.to_string().find(",rope=0"), std::string::npos);
  const PlanConfig p = parse_plan(parse_mesh("dp=2,tp=4"), "sp,adam");
  const Topology topo = default_topology();
  const StepTotals a = step_totals(trace_solo_step(llama_step_program(), with, p), with, p, topo);
  const StepTotals b = step_totals(trace_solo_step(llama_step_program(), without, p), without, p, topo);
  EXPECT_EQ(a.forward_flops, b.forward_flops);
  EXPECT_EQ(a.backward_flops, b.backward_flops);
  expect_same_comm(a, b);
  // q and k cast to float32, multiplied and cast back, forward and backward.
  EXPECT_GT(a.forward_pointwise_bytes, b.forward_pointwise_bytes);
  EXPECT_GT(a.backward_pointwise_bytes, b.backward_pointwise_bytes);
  try {
    parse_model(std::string(kSmall) + ",rope=2");
    FAIL() << "expected a throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("rope=2: expected 0 or 1"), std::string::npos) << e.what();
  }
}

// mp=bf16 (torchtitan's mixed precision): float32 parameters, gradients and
// Adam state (twice the bf16 plan's bytes), all-gathered in bf16 (the same
// all_gather bytes) and reduce-scattered in float32 (twice the
// reduce_scatter bytes); the loss in float32 makes the step's peak larger.
TEST(LlamaStepTest, MixedPrecisionKeepsFloat32MastersAndReducesInFloat32) {
  const ModelConfig m = parse_model("llama:layers=3,dim=64,ffn=128,heads=8,kv_heads=4,vocab=96,seq=16,batch=8,dtype=bfloat16");
  const Topology topo = default_topology();
  const PlanConfig bf16 = parse_plan(parse_mesh("dp=4,tp=2"), "fsdp,adam");
  const PlanConfig mp = parse_plan(parse_mesh("dp=4,tp=2"), "fsdp,adam,mp=bf16");
  EXPECT_EQ(mp.to_string(), "dp=4,tp=2,nosp,micro=1,adam,fsdp,mp=bf16");
  const StepMeasure a = trace_solo_step(llama_step_program(), m, bf16);
  const StepMeasure b = trace_solo_step(llama_step_program(), m, mp);
  EXPECT_EQ(b.parameter_bytes, 2 * a.parameter_bytes);
  EXPECT_EQ(b.gradient_bytes, 2 * a.gradient_bytes);
  EXPECT_EQ(b.optimizer_bytes, 2 * a.optimizer_bytes);
  auto bytes_of = [&](const StepMeasure& s, const PlanConfig& p, const std::string& kind) {
    int64_t bytes = 0;
    for (const CommRow& r : step_totals(s, m, p, topo).comm) {
      if (r.kind == kind && r.mesh_dim == "dp") bytes += r.bytes;
    }
    return bytes;
  };
  EXPECT_GT(bytes_of(a, bf16, "all_gather_into_tensor"), 0);
  EXPECT_EQ(bytes_of(b, mp, "all_gather_into_tensor"), bytes_of(a, bf16, "all_gather_into_tensor"));
  EXPECT_EQ(bytes_of(b, mp, "reduce_scatter_tensor"), 2 * bytes_of(a, bf16, "reduce_scatter_tensor"));
  ASSERT_TRUE(a.peak_bytes && b.peak_bytes);
  EXPECT_GT(*b.peak_bytes - (b.parameter_bytes + b.gradient_bytes + b.optimizer_bytes),
            *a.peak_bytes - (a.parameter_bytes + a.gradient_bytes + a.optimizer_bytes))
      << "float32 logits and loss hold more than bf16 ones";
  // Refused: without fsdp, and naming another dtype than the model's.
  EXPECT_THROW(trace_solo_step(llama_step_program(), m, parse_plan(parse_mesh("dp=4,tp=2"), "mp=bf16")),
               std::invalid_argument);
  EXPECT_NE(plan_problem(m, parse_plan(parse_mesh("dp=4,tp=2"), "fsdp,mp=fp16")).find("set dtype=float16"),
            std::string::npos);
  EXPECT_THROW(parse_plan(parse_mesh("dp=4"), "mp=fp8"), std::invalid_argument);
}

TEST(LlamaStepTest, ExtrapolationFromTwoAndThreeLayersEqualsTheFullTrace) {
  ModelConfig m = parse_model(kSmall);
  m.layers = 5;
  const PlanConfig p = parse_plan(parse_mesh("dp=2,tp=4"), "sp,adam");
  const Topology topo = default_topology();
  const PlanEstimate full = estimate_plan(llama_step_program(), m, p, topo, {/*max_traced_layers=*/0});
  const PlanEstimate scaled = estimate_plan(llama_step_program(), m, p, topo, {/*max_traced_layers=*/3});
  EXPECT_EQ(full.traced_layers, 5);
  EXPECT_EQ(scaled.traced_layers, 3);
  EXPECT_EQ(scaled.totals.parameter_bytes, full.totals.parameter_bytes);
  EXPECT_EQ(scaled.totals.optimizer_bytes, full.totals.optimizer_bytes);
  expect_same_comm(scaled.totals, full.totals);
  EXPECT_NEAR(scaled.totals.forward_flops, full.totals.forward_flops, 1e-9 * full.totals.forward_flops);
  EXPECT_NEAR(scaled.totals.backward_flops, full.totals.backward_flops, 1e-9 * full.totals.backward_flops);
  EXPECT_GT(full.totals.forward_flops, 0);
  // The peak lands in a different layer's backward: within 2%.
  EXPECT_NEAR(static_cast<double>(*scaled.activation_bytes), static_cast<double>(*full.activation_bytes),
              0.02 * static_cast<double>(*full.activation_bytes));
}

// Under fully_shard with every layer checkpointed, a layer keeps its input
// and nothing else: its parameters are resharded and its gradients reduced
// right after its backward (the block's hooked inputs carry fully_shard's
// post-backward hook). The activations at the peak grow by one layer input
// per layer, and the extrapolated estimate equals the full trace.
TEST(LlamaStepTest, FullyShardedCheckpointedLayersKeepOnlyTheirInputs) {
  const Topology topo = default_topology();
  const PlanConfig p = parse_plan(parse_mesh("dp=4"), "nosp,adam,fsdp,ac=full");
  std::map<int64_t, PlanEstimate> by_layers;
  for (int64_t layers : {4, 6}) {
    ModelConfig m = parse_model(kSmall);
    m.layers = layers;
    by_layers.emplace(layers, estimate_plan(llama_step_program(), m, p, topo, {/*max_traced_layers=*/0}));
    const PlanEstimate scaled = estimate_plan(llama_step_program(), m, p, topo, {/*max_traced_layers=*/3});
    EXPECT_NEAR(static_cast<double>(*scaled.activation_bytes),
                static_cast<double>(*by_layers.at(layers).activation_bytes),
                0.02 * static_cast<double>(*by_layers.at(layers).activation_bytes)) << layers << " layers";
  }
  // Per layer: its input (and the norms' small saved tensors), far below its
  // parameters and gradients (9 times the input here), which it kept before.
  const ModelConfig m = parse_model(kSmall);
  const int64_t layer_input = m.batch / 4 * m.seq * m.dim * m.element_size();
  const int64_t per_layer = (*by_layers.at(6).activation_bytes - *by_layers.at(4).activation_bytes) / 2;
  EXPECT_GE(per_layer, layer_input);
  EXPECT_LE(per_layer, layer_input * 5 / 4);
}

// Activation checkpointing plans (PlanConfig::checkpoint_every / _ops): the
// activations kept at the peak shrink (full < op < none), the recomputed
// forward adds FLOPs (full adds a whole forward of the layers, op less: its
// kept matmuls are not recomputed) and tensor-parallel collectives in
// backward (op keeps the reduce_scatters, as torchtitan's policy); every n-th
// layer, extrapolated from 2- and 3-layer traces of both kinds of layer,
// equals the full trace in counts and FLOPs.
TEST(LlamaStepTest, ActivationCheckpointingPlans) {
  const ModelConfig m = parse_model("llama:layers=4,dim=64,ffn=256,heads=8,kv_heads=4,vocab=32,seq=256,batch=8,dtype=float32");
  const Topology topo = default_topology();
  std::map<std::string, PlanEstimate> e;
  std::map<std::string, std::map<std::string, int64_t>> counts;
  for (const char* ac : {"none", "full", "op", "2"}) {
    const PlanConfig p = parse_plan(parse_mesh("dp=2,tp=4"), std::string("sp,adam,ac=") + ac);
    EXPECT_EQ(p.checkpointing(), std::string(ac) == "2" ? "every 2" : ac);
    e[ac] = estimate_plan(llama_step_program(), m, p, topo, {/*max_traced_layers=*/0});
    for (const CommRow& r : e[ac].totals.comm) counts[ac][r.kind + " " + r.mesh_dim] += r.count;
  }
  const auto activations = [&](const char* ac) { return e[ac].activation_bytes.value_or(-1); };
  EXPECT_LT(activations("full"), activations("op"));
  EXPECT_LT(activations("op"), activations("none"));
  EXPECT_LT(activations("2"), activations("none"));
  EXPECT_GT(activations("2"), activations("full"));
  const auto& none = e["none"].totals;
  const auto& full = e["full"].totals;
  const auto& op = e["op"].totals;
  // Full AC recomputes every layer's forward: backward gains the layers' share of the forward FLOPs.
  EXPECT_GT(full.backward_flops, none.backward_flops + 0.8 * none.forward_flops * m.layers / (m.layers + 1));
  EXPECT_LT(full.backward_flops, none.backward_flops + none.forward_flops);
  EXPECT_GT(op.backward_flops, none.backward_flops);
  EXPECT_LT(op.backward_flops, full.backward_flops);
  EXPECT_EQ(full.forward_flops, none.forward_flops);
  // Per micro-step and layer the recomputation re-issues the two sequence-parallel
  // all_gathers, and, without a policy, the two reduce_scatters.
  const int64_t micro = m.batch / 2, per_layer = 2 * m.layers * micro;
  EXPECT_EQ(counts["full"]["all_gather_into_tensor tp"], counts["none"]["all_gather_into_tensor tp"] + per_layer);
  EXPECT_EQ(counts["full"]["reduce_scatter_tensor tp"], counts["none"]["reduce_scatter_tensor tp"] + per_layer);
  EXPECT_EQ(counts["op"]["all_gather_into_tensor tp"], counts["none"]["all_gather_into_tensor tp"] + per_layer);
  EXPECT_EQ(counts["op"]["reduce_scatter_tensor tp"], counts["none"]["reduce_scatter_tensor tp"]);
  EXPECT_EQ(counts["2"]["reduce_scatter_tensor tp"], counts["none"]["reduce_scatter_tensor tp"] + per_layer / 2);
  // Every 2nd layer of 8, extrapolated, against the full trace.
  const ModelConfig deep = parse_model("llama:layers=8,dim=64,ffn=256,heads=8,kv_heads=4,vocab=32,seq=256,batch=8,dtype=float32");
  const PlanConfig every2 = parse_plan(parse_mesh("dp=2,tp=4"), "sp,adam,ac=2");
  const PlanEstimate traced = estimate_plan(llama_step_program(), deep, every2, topo, {/*max_traced_layers=*/0});
  const PlanEstimate scaled = estimate_plan(llama_step_program(), deep, every2, topo, {/*max_traced_layers=*/3});
  expect_same_comm(scaled.totals, traced.totals);
  EXPECT_NEAR(scaled.totals.backward_flops, traced.totals.backward_flops, 1e-9 * traced.totals.backward_flops);
  EXPECT_NEAR(static_cast<double>(*scaled.activation_bytes), static_cast<double>(*traced.activation_bytes),
              0.15 * static_cast<double>(*traced.activation_bytes));
  std::cout << "activations at the peak (4 layers): none " << activations("none") << ", every 2nd "
            << activations("2") << ", op " << activations("op") << ", full " << activations("full")
            << " bytes; 8 layers every 2nd: traced " << *traced.activation_bytes << ", extrapolated "
            << *scaled.activation_bytes << "\n";
}

// Note [Step time estimate]: with a calibration, matmuls run at the measured
// rate of their nearest shape and memory-bound ops at the measured bandwidth.
// The calibrations measured on lent GPUs (planner/calibration/): each parses,
// names its GPU, and every rate lies below the datasheet peak the default
// topology carries (dense bf16 989 TFLOP/s, fp32 without tensor cores 67, for
// the H100 SXM and H200 alike; HBM 3.35 TB/s for the H100, 4.8 TB/s for the
// H200) and above a tenth of it.
TEST(LlamaStepTest, CheckedInCalibrationsAreBelowTheDatasheetPeaks) {
  struct File {
    const char* path;
    const char* gpu;
    double hbm_peak_gbps;
  };
  for (const File& f : {File{"planner/calibration/h100-sxm-80gb.calib", "NVIDIA H100 80GB HBM3", 3350},
                        File{"planner/calibration/h200-141gb.calib", "NVIDIA H200", 4800}}) {
    SCOPED_TRACE(f.path);
    std::ifstream in(f.path);
    ASSERT_TRUE(in.good());
    const Calibration c = parse_calibration(std::string(std::istreambuf_iterator<char>(in), {}));
    EXPECT_EQ(c.gpu, f.gpu);
    EXPECT_GT(c.hbm_gbps, 0.5 * f.hbm_peak_gbps);
    EXPECT_LT(c.hbm_gbps, f.hbm_peak_gbps);
    EXPECT_GE(c.matmuls.size(), 66u);  // 33 shapes in bf16 and fp32
    for (const MatmulRate& r : c.matmuls) {
      const double peak = r.dtype == "bf16" ? default_topology().peak_tflops : 67.0;
      EXPECT_LT(r.tflops, peak) << r.dtype << " " << r.m << " x " << r.n << " x " << r.k;
      EXPECT_GT(r.tflops, peak / 10) << r.dtype << " " << r.m << " x " << r.n << " x " << r.k;
    }
  }
}

// The A100 calibration no A100 measured (planner/calibration/
// a100-sxm-80gb-derived.calib, tools/calibrate/derive_calibration.py): the
// H100's measured profile scaled to the A100's best published bf16 rate
// (271.2 TFLOP/s), so its best shape runs at that rate, every shape at the
// H100's fraction of its best, and nothing above the A100's 312 peak.
TEST(LlamaStepTest, DerivedA100CalibrationIsTheH100ProfileAtTheA100sBest) {
  auto read = [](const char* path) {
    std::ifstream in(path);
    EXPECT_TRUE(in.good()) << path;
    return parse_calibration(std::string(std::istreambuf_iterator<char>(in), {}));
  };
  const Calibration h100 = read("planner/calibration/h100-sxm-80gb.calib");
  const Calibration a100 = read("planner/calibration/a100-sxm-80gb-derived.calib");
  ASSERT_EQ(a100.matmuls.size(), h100.matmuls.size());
  double best_h100 = 0, best_a100 = 0;
  for (const MatmulRate& r : h100.matmuls) best_h100 = r.dtype == "bf16" ? std::max(best_h100, r.tflops) : best_h100;
  for (const MatmulRate& r : a100.matmuls) best_a100 = r.dtype == "bf16" ? std::max(best_a100, r.tflops) : best_a100;
  EXPECT_NEAR(best_a100, 271.2, 0.1);
  for (size_t i = 0; i < a100.matmuls.size(); ++i) {
    const MatmulRate &a = a100.matmuls[i], &h = h100.matmuls[i];
    if (a.dtype != "bf16") continue;
    EXPECT_NEAR(a.tflops / best_a100, h.tflops / best_h100, 1e-3) << a.m << " x " << a.n << " x " << a.k;
    EXPECT_LT(a.tflops, 312);
  }
  const std::optional<double> forward = a100.attention_tflops("bf16", 8192, 128, true);
  ASSERT_TRUE(forward);
  EXPECT_NEAR(*forward / best_a100, *h100.attention_tflops("bf16", 8192, 128, true) / best_h100, 1e-3);
  EXPECT_NEAR(a100.pointwise_gbps / 2039, h100.pointwise_gbps / 3350, 1e-3);
}

TEST(LlamaStepTest, CalibrationSetsTheComputeRates) {
  const ModelConfig m = parse_model(kSmall);
  const PlanConfig p = parse_plan(parse_mesh("dp=2,tp=4"), "sp,adam");
  Topology topo = default_topology();
  const PlanEstimate peak = estimate_plan(llama_step_program(), m, p, topo);
  // Every rate at half the peaks: the compute time doubles, nothing else moves.
  std::ostringstream half;
  half << "gpu half an H100\nsource test\npointwise_gbps " << topo.hbm_gbps / 2 << "\n"
       << "matmul bf16 1 1 1 " << topo.peak_tflops / 2 << "\nmatmul fp32 1 1 1 " << topo.peak_tflops / 2 << "\n";
  topo.calibration = std::make_shared<const Calibration>(parse_calibration(half.str()));
  const PlanEstimate slow = estimate_plan(llama_step_program(), m, p, topo);
  EXPECT_NEAR(slow.compute_us, 2 * peak.compute_us, 1e-9 * peak.compute_us);
  EXPECT_EQ(slow.totals.forward_flops, peak.totals.forward_flops);
  EXPECT_EQ(slow.blocking_comm_us, peak.blocking_comm_us);
  EXPECT_NE(plan_report_text(slow).find("at the rates measured on half an H100 (test)"), std::string::npos);
  // Small matmuls slower than large ones: only the time of the small ones grows.
  std::ostringstream by_size;
  by_size << "pointwise_gbps " << topo.hbm_gbps << "\nmatmul " << (m.element_size() == 2 ? "bf16" : "fp32")
          << " 1 1 1 " << topo.peak_tflops / 10 << "\nmatmul " << (m.element_size() == 2 ? "bf16" : "fp32")
          << " 100000 100000 100000 " << topo.peak_tflops << "\n";
  topo.calibration = std::make_shared<const Calibration>(parse_calibration(by_size.str()));
  const PlanEstimate mixed = estimate_plan(llama_step_program(), m, p, topo);
  EXPECT_GT(mixed.compute_us, peak.compute_us);
  EXPECT_LT(mixed.compute_us, 10 * peak.compute_us);
}

TEST(LlamaStepTest, SeventyBAtFourThousandRanksTracesQuickly) {
  const ModelConfig m = parse_model("llama-70b");
  const PlanConfig p = parse_plan(parse_mesh("dp=512,tp=8"), "sp,adam,micro=1");
  const PlanEstimate e = estimate_plan(llama_step_program(), m, p, default_topology());
  std::cout << "70B: trace " << e.trace_seconds << " s, params " << format_bytes(e.totals.parameter_bytes, 2)
            << ", step " << e.step_us_overlap / 1e6 << " s, fwd flops " << e.totals.forward_flops << "\n";
  // 70.6 B parameters over tp = 8 in bf16: ~17.6 GB per rank.
  EXPECT_NEAR(static_cast<double>(e.totals.parameter_bytes), m.parameter_count() * 2.0 / 8, 0.01 * m.parameter_count());
}

}  // namespace
}  // namespace dtensor::planner
