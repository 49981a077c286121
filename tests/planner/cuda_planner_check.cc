// The capacity planner against CUDA ranks (tools/gpu_check.sh runs it, issue
// #37): the planner's per-rank peak for the example Transformer (a solo-mode
// trace on the CPU, exact bytes) within 10% of what every rank of a CUDA fake
// world running the same step peaks at in LibTorch's caching allocator, for
// tensor parallelism, FSDP and FSDP + TP + SP, without and with activation
// checkpointing (full, selective op), and HSDP. transformer_plan_test.cc
// checks the same against CPU ranks (the same counting, so exact there).
// Built with DTENSOR_CUDA_ALLOCATOR_CHECK (CMake's CUDA build, Bazel's
// --config=cuda), it also replays a solo trace's allocation log through
// LibTorch's CUDACachingAllocator and the planner's model of it
// (planner/caching_allocator_model.h), in both allocator modes.
// Built on tests/backends/nccl/mini_test.h.
//   cuda_planner_check                     # needs a GPU; exits 77 without one
//   cuda_planner_check --self-test-on-cpu  # the same on CPU ranks
#include <torch/cuda.h>
#ifdef DTENSOR_CUDA_ALLOCATOR_CHECK
#include <c10/core/AllocatorConfig.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAStream.h>
#endif

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include "examples/plan/transformer_step.h"
#include "planner/estimate.h"
#include "planner/llama_step.h"
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
                        Case{"dp=4", "nosp,adam,fsdp,ac=full"}, Case{"dp=2,tp=2", "sp,adam,fsdp,ac=op"},
                        Case{"rep=2,dp=2", "nosp,adam,fsdp"}}) {
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

// The allocator model against the allocator: the allocation log of one
// rank of the planner's Llama step (8B's layer and vocabulary shapes at 2
// layers, FSDP over 8 ranks, mixed precision, as torchtitan's runs; a solo
// trace on meta tensors) replayed through CUDACachingAllocator, each
// allocation on the stream the log names (FSDP's all-gather and
// reduce-scatter buffers on streams of their own), and through
// CachingAllocatorModel. The model's allocated peak must equal the
// allocator's (the same 512-byte rounding) and its reserved peak
// (torch.cuda.max_memory_reserved()) be within 10% of it, with expandable
// segments and with PyTorch's default segments.
TEST(CudaPlanner, TheAllocatorModelReservesWhatTheCachingAllocatorDoes) {
#ifndef DTENSOR_CUDA_ALLOCATOR_CHECK
  GTEST_SKIP() << "built without CUDA (DTENSOR_CUDA_ALLOCATOR_CHECK)";
#else
  if (!g_device.is_cuda()) GTEST_SKIP() << "CPU ranks: no caching allocator to compare with";
  namespace cca = c10::cuda::CUDACachingAllocator;
  constexpr auto kAll = static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE);
  const c10::DeviceIndex device = 0;
  const ModelConfig model = parse_model("llama-8b:layers=2,seq=4096,batch=8");
  for (const char* text : {"fsdp,ac=op,adam,micro=1,mp=bf16", "fsdp,ac=full,adam,micro=1,mp=bf16",
                           "fsdp,ac=none,adam,micro=1,mp=bf16"}) {
    SCOPED_TRACE(text);
    const PlanConfig plan = parse_plan(parse_mesh("dp=8"), text);
    const StepMeasure m = trace_solo_step(llama_step_program(), model, plan);
    ASSERT_TRUE(m.allocations.has_value());
    for (bool expandable : {true, false}) {
      const AllocatorPeaks model_peaks = replay_allocations(*m.allocations, expandable);
      cca::emptyCache();
      c10::CachingAllocator::setAllocatorSettings(expandable ? "expandable_segments:True" : "expandable_segments:False");
      const c10::CachingDeviceAllocator::DeviceStats before = cca::getDeviceStats(device);
      cca::resetPeakStats(device);
      const c10::cuda::CUDAStream compute = c10::cuda::getCurrentCUDAStream(device);
      const c10::cuda::CUDAStream streams[] = {compute, c10::cuda::getStreamFromPool(false, device),
                                               c10::cuda::getStreamFromPool(false, device)};
      std::unordered_map<int64_t, void*> live;
      for (const AllocationEvent& e : *m.allocations) {
        if (e.is_free) {
          auto it = live.find(e.id);
          if (it == live.end()) continue;  // a zero-byte allocation
          cca::raw_delete(it->second);
          live.erase(it);
        } else if (e.bytes > 0) {
          live[e.id] = cca::raw_alloc_with_stream(static_cast<size_t>(e.bytes), streams[e.stream % 3].stream());
        }
      }
      for (const auto& [id, ptr] : live) cca::raw_delete(ptr);
      const c10::CachingDeviceAllocator::DeviceStats after = cca::getDeviceStats(device);
      cca::emptyCache();
      const int64_t reserved = after.reserved_bytes[kAll].peak - before.reserved_bytes[kAll].current;
      const int64_t allocated = after.allocated_bytes[kAll].peak - before.allocated_bytes[kAll].current;
      const double error = std::fabs(static_cast<double>(model_peaks.reserved - reserved)) / static_cast<double>(reserved);
      std::printf("[planner] allocator %s, llama-8b:layers=2 dp=8 %s: %zu events; reserved: model %lld B, CUDA %lld B "
                  "(error %.2f%%); allocated: model %lld B, CUDA %lld B\n",
                  expandable ? "expandable" : "segments", text, m.allocations->size(),
                  static_cast<long long>(model_peaks.reserved), static_cast<long long>(reserved), 100 * error,
                  static_cast<long long>(model_peaks.allocated), static_cast<long long>(allocated));
      EXPECT_EQ(model_peaks.allocated, allocated);
      EXPECT_TRUE(error <= 0.10);
    }
  }
  c10::CachingAllocator::setAllocatorSettings("expandable_segments:False");
#endif
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
