// The capacity planner against CUDA ranks (tools/gpu_check.sh runs it, issue
// #37): the planner's per-rank peak for the example Transformer (a solo-mode
// trace on the CPU, exact bytes) within 10% of what every rank of a CUDA fake
// world running the same step peaks at in LibTorch's caching allocator, for
// tensor parallelism, FSDP and FSDP + TP + SP, without and with activation
// checkpointing (full, selective op). transformer_plan_test.cc
// checks the same against CPU ranks (the same counting, so exact there).
// Built on tests/backends/nccl/mini_test.h.
//   cuda_planner_check                     # needs a GPU; exits 77 without one
//   cuda_planner_check --self-test-on-cpu  # the same on CPU ranks
#include <torch/cuda.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "examples/plan/transformer_step.h"
#include "planner/estimate.h"
#include "tests/backends/nccl/mini_test.h"

namespace dtensor::planner {
namespace {

c10::Device g_device = c10::kCUDA;

TEST(CudaPlanner, EachRanksPeakMatchesTheEstimate) {
  // Tensors of tens of KiB to MiBs: the caching allocator's 512-byte blocks
  // round them by little.
  const ModelConfig model = parse_model("transformer:layers=2,dim=256,heads=8,vocab=512,seq=64,batch=8");
  struct Case {
    const char* mesh;
    const char* plan;
  };
  for (const Case& c : {Case{"tp=4", "sp,adam"}, Case{"dp=4", "nosp,adam,fsdp"}, Case{"dp=2,tp=2", "sp,adam,fsdp"},
                        Case{"dp=4", "nosp,adam,fsdp,ac=full"}, Case{"dp=2,tp=2", "sp,adam,fsdp,ac=op"}}) {
    SCOPED_TRACE(std::string(c.mesh) + " " + c.plan);
    const PlanConfig plan = parse_plan(parse_mesh(c.mesh), c.plan);
    EstimateOptions options;
    options.max_traced_layers = 0;
    options.solo_device = c10::kCPU;
    const PlanEstimate e = estimate_plan(examples::transformer_step_program(), model, plan, default_topology(), options);
    const std::vector<StepMeasure> measured = trace_fake_step(examples::transformer_step_program(), model, plan, g_device);
    double worst = 0;
    for (const StepMeasure& m : measured) {
      ASSERT_TRUE(m.peak_bytes.has_value());
      const double error =
          std::fabs(static_cast<double>(e.total_bytes - *m.peak_bytes)) / static_cast<double>(*m.peak_bytes);
      worst = std::max(worst, error);
      EXPECT_TRUE(error <= 0.10);
    }
    std::printf("[planner] %s %s on %s ranks: estimate %lld B, measured %lld B (rank 0, at %s), worst error %.2f%%\n",
                c.mesh, c.plan, g_device.str().c_str(), static_cast<long long>(e.total_bytes),
                static_cast<long long>(*measured[0].peak_bytes), measured[0].peak_location.c_str(), 100 * worst);
  }
}

}  // namespace
}  // namespace dtensor::planner

int main(int argc, char** argv) {
  if (argc > 1 && !std::strcmp(argv[1], "--self-test-on-cpu")) {
    dtensor::planner::g_device = c10::kCPU;
    return mini_test::run_all();
  }
  if (!torch::cuda::is_available()) {
    std::printf("no GPU: the planner's CUDA check needs one (built fine)\n");
    return 77;
  }
  return mini_test::run_all();
}
