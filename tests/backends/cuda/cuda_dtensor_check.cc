// GPU checks of DTensor on the CUDA fake world (tools/gpu_check.sh runs it):
// DeviceMesh::init(kCUDA) inside a CUDA fake world, a DTensor forward and
// backward (matmul, Partial sum, redistributions) whose loss and gradients
// equal the CPU fake world's (float64 to 1e-10), and per-rank peak memory of
// that step. Built on tests/backends/nccl/mini_test.h (no GoogleTest).
//   cuda_dtensor_check                     # needs a GPU; exits 77 without one
//   cuda_dtensor_check --self-test-on-cpu  # the checks' logic on CPU ranks
#include <ATen/ATen.h>
#include <torch/cuda.h>
#include <torch/utils.h>

#include <cstring>
#include <map>
#include <mutex>
#include <utility>

#include "backends/fake/fake_world.h"
#include "core/dtensor.h"
#include "tests/backends/nccl/mini_test.h"

namespace dtensor {
namespace {

c10::Device g_device = c10::kCUDA;

struct RankResult {
  at::Tensor loss, grad;
  RankMemoryStats memory;
};

std::map<int64_t, RankResult> train_step(c10::Device device) {
  std::mutex mutex;
  std::map<int64_t, RankResult> by_rank;
  FakeWorldOptions options;
  options.device = device;
  run_fake_world(4, [&](World& world) {
    auto mesh = DeviceMesh::init(device.type(), {4});
    at::Generator gen = at::detail::createCPUGenerator(7);
    at::Tensor x = at::randn({16, 8}, gen, at::kDouble).to(device);
    at::Tensor w = at::randn({8, 12}, gen, at::kDouble).to(device);
    world.reset_peak_memory();
    world.set_memory_location("forward");
    DTensor dx = distribute_tensor(x, mesh, {Shard(0)});
    DTensor dw = distribute_tensor(w, mesh, {Replicate()});
    dw.requires_grad_(true);
    DTensor loss = torch::mm(dx, dw).tanh().sum();
    world.set_memory_location("backward");
    loss.backward();
    RankResult result;
    result.loss = loss.full_tensor().cpu();
    result.grad = DTensor(dw.grad()).full_tensor().cpu();
    result.memory = world.memory_stats().value_or(RankMemoryStats{});
    std::lock_guard<std::mutex> lock(mutex);
    by_rank[world.rank()] = result;
  }, options);
  return by_rank;
}

TEST(CudaDTensor, ForwardBackwardMatchesTheCpuFakeWorld) {
  auto cpu = train_step(c10::kCPU);
  auto dev = train_step(g_device);
  for (int64_t r = 0; r < 4; ++r) {
    EXPECT_TRUE(at::allclose(cpu[r].loss, dev[r].loss, 1e-10, 1e-10)) << "loss, rank " << r;
    EXPECT_TRUE(at::allclose(cpu[r].grad, dev[r].grad, 1e-10, 1e-10)) << "grad, rank " << r;
    EXPECT_TRUE(dev[r].memory.peak_bytes > 0) << "no peak on rank " << r;
    EXPECT_FALSE(dev[r].memory.peak_location.empty()) << "rank " << r;
  }
}

}  // namespace
}  // namespace dtensor

int main(int argc, char** argv) {
  if (argc > 1 && !std::strcmp(argv[1], "--self-test-on-cpu")) {
    dtensor::g_device = c10::kCPU;
    return mini_test::run_all();
  }
  if (!torch::cuda::is_available()) {
    std::printf("no GPU: the CUDA DTensor checks need one (built fine)\n");
    return 77;
  }
  return mini_test::run_all();
}
