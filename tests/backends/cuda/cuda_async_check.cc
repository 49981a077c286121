// GPU checks of redistribute(async_op = true) on the CUDA fake world (Note
// [Async redistribution]): the result equals the synchronous one for every
// placement pair on a 2x2 mesh, is pending until its first read (and only on
// CUDA), gradients agree; and --bench measures the overlap it buys: an
// all_gather of a large shard next to an independent matmul, synchronous
// against async, as wall time per step and ratio (JSON line appended to
// --json PATH). Built on tests/backends/nccl/mini_test.h (no GoogleTest).
//   cuda_async_check                       # needs a GPU; exits 77 without one
//   cuda_async_check --bench --json PATH   # the overlap figures
//   cuda_async_check --self-test-on-cpu    # the checks' logic on CPU ranks
#include <ATen/ATen.h>
#include <torch/cuda.h>
#include <torch/utils.h>

#ifdef DTENSOR_TORCH_HAS_CUDA
#include <c10/cuda/CUDAFunctions.h>
#endif

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "backends/fake/fake_world.h"
#include "core/dtensor.h"
#include "core/dtensor_impl.h"
#include "tests/backends/nccl/mini_test.h"

namespace dtensor {
namespace {

c10::Device g_device = c10::kCUDA;

std::vector<Placements> placement_lists() {
  const Placements alphabet = {Replicate(), Shard(0), Shard(1)};
  std::vector<Placements> out;
  for (const Placement& a : alphabet) {
    for (const Placement& b : alphabet) out.push_back({a, b});
  }
  return out;
}

TEST(CudaAsyncRedistribute, EqualsSynchronousAndWaitsAtFirstRead) {
  FakeWorldOptions options;
  options.device = g_device;
  const bool on_cuda = g_device.is_cuda();
  run_fake_world(4, [&](World& world) {
    auto mesh = DeviceMesh::init(world.device().type(), {2, 2});
    at::Generator gen = at::detail::createCPUGenerator(3);
    const at::Tensor global = at::randn({7, 10}, gen, at::kDouble).to(world.device());
    const at::Tensor weights = at::randn({7, 10}, gen, at::kDouble).to(world.device());
    for (const Placements& from : placement_lists()) {
      for (const Placements& to : placement_lists()) {
        std::vector<at::Tensor> locals, grads;
        for (bool async_op : {false, true}) {
          DTensor x = distribute_tensor(global, mesh, from);
          x.requires_grad_(true);
          RedistributeOptions redistribute;
          redistribute.async_op = async_op;
          DTensor y = x.redistribute(to, redistribute);
          if (async_op) {
            EXPECT_EQ(dtensor_impl(y)->has_pending(), on_cuda) << "pending only where there are streams";
          }
          locals.push_back(y.to_local().detach().cpu());
          EXPECT_FALSE(dtensor_impl(y)->has_pending()) << "to_local waits";
          y.full_tensor().mul(weights).sum().backward();
          grads.push_back(DTensor(x.grad()).full_tensor().cpu());
        }
        EXPECT_TRUE(at::equal(locals[0], locals[1]))
            << "rank " << world.rank() << " " << to_string(from) << " -> " << to_string(to);
        EXPECT_TRUE(at::equal(grads[0], grads[1]))
            << "rank " << world.rank() << " " << to_string(from) << " -> " << to_string(to);
      }
    }
  }, options);
}

// ---- --bench -----------------------------------------------------------------

using Clock = std::chrono::steady_clock;

// Seconds per step of: redistribute a [rows, 1024] float S(0) shard to
// Replicate (one all_gather), an independent [n, n] matmul chain, then a read
// of the gathered tensor; on `ranks` CUDA fake ranks.
double step_seconds(int64_t ranks, int64_t rows, int64_t n, bool async_op, int iters) {
  FakeWorldOptions options;
  options.device = g_device;
  double seconds = 0;
  std::mutex mutex;
  run_fake_world(ranks, [&](World& world) {
    auto mesh = DeviceMesh::init(world.device().type(), {ranks});
    const auto f32 = at::TensorOptions().dtype(at::kFloat).device(world.device());
    DTensor x = DTensor::from_local(at::ones({rows, 1024}, f32), mesh, {Shard(0)});
    at::Tensor a = at::randn({n, n}, f32), b = at::randn({n, n}, f32);
    RedistributeOptions redistribute;
    redistribute.async_op = async_op;
    auto step = [&] {
      DTensor full = x.redistribute({Replicate()}, redistribute);
      at::Tensor c = at::mm(a, b);
      for (int k = 0; k < 3; ++k) c = at::mm(c, b);
      (void)full.to_local().sum().add_(c.sum());
    };
    step();
#ifdef DTENSOR_TORCH_HAS_CUDA
    c10::cuda::device_synchronize();
#endif
    world.world_group()->barrier();
    const auto start = Clock::now();
    for (int i = 0; i < iters; ++i) step();
#ifdef DTENSOR_TORCH_HAS_CUDA
    c10::cuda::device_synchronize();
#endif
    world.world_group()->barrier();
    const double s = std::chrono::duration<double>(Clock::now() - start).count() / iters;
    std::lock_guard<std::mutex> lock(mutex);
    if (world.rank() == 0) seconds = s;
  }, options);
  return seconds;
}

int run_bench(const std::string& json_path, bool quick) {
  std::ofstream json(json_path.empty() ? "/dev/null" : json_path, std::ios::app);
  std::printf("%-6s %12s %8s %12s %12s %8s\n", "ranks", "gather MiB", "mm n", "sync us", "async us", "ratio");
  for (int64_t ranks : {2, 4}) {
    for (int64_t rows : quick ? std::vector<int64_t>{4096} : std::vector<int64_t>{4096, 32768}) {
      const int64_t n = 2048;
      const int iters = quick ? 5 : 20;
      const double sync = step_seconds(ranks, rows, n, false, iters);
      const double async = step_seconds(ranks, rows, n, true, iters);
      const double mib = static_cast<double>(rows * ranks * 1024 * 4) / (1 << 20);
      std::printf("%-6lld %12.1f %8lld %12.1f %12.1f %8.2f\n", static_cast<long long>(ranks), mib,
                  static_cast<long long>(n), sync * 1e6, async * 1e6, sync / async);
      json << "{\"bench\": \"async_redistribute_overlap\", \"ranks\": " << ranks << ", \"gathered_mib\": " << mib
           << ", \"matmul_n\": " << n << ", \"sync_us\": " << sync * 1e6 << ", \"async_us\": " << async * 1e6
           << ", \"sync_over_async\": " << sync / async << "}\n";
    }
  }
  return 0;
}

}  // namespace
}  // namespace dtensor

int main(int argc, char** argv) {
  bool bench = false, quick = false;
  std::string json;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--self-test-on-cpu")) {
      dtensor::g_device = c10::kCPU;
      return mini_test::run_all();
    }
    if (!std::strcmp(argv[i], "--bench")) bench = true;
    else if (!std::strcmp(argv[i], "--quick")) quick = true;
    else if (!std::strcmp(argv[i], "--json") && i + 1 < argc) json = argv[++i];
  }
  if (!torch::cuda::is_available()) {
    std::printf("no GPU: the CUDA async redistribution checks need one (built fine)\n");
    return 77;
  }
  if (bench) return dtensor::run_bench(json, quick);
  return mini_test::run_all();
}
