// GPU checks of redistribute(async_op = true) on the CUDA fake world (Note
// [Async redistribution]): the result equals the synchronous one for every
// placement pair on a 2x2 mesh, is pending until its first read (and only on
// CUDA), gradients agree; fully_shard's all-gathers run on the rank's side
// stream, after the parameters' last writes only, not after the compute
// enqueued since (Note [FSDP streams]); and --bench measures the overlap async
// redistribution buys: an
// all_gather of a large shard next to an independent matmul, synchronous
// against async, as wall time per step and ratio (JSON line appended to
// --json PATH). Built on tests/backends/nccl/mini_test.h (no GoogleTest).
//   cuda_async_check                       # needs a GPU; exits 77 without one
//   cuda_async_check --bench --json PATH   # the overlap figures
//   cuda_async_check --self-test-on-cpu    # the checks' logic on CPU ranks
#include <ATen/ATen.h>
#include <torch/cuda.h>
#include <torch/utils.h>

#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#ifdef DTENSOR_TORCH_HAS_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/Sleep.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "backends/async_region.h"
#include "backends/fake/fake_world.h"
#include "core/dtensor.h"
#include "core/dtensor_impl.h"
#include "core/fsdp/fully_shard.h"
#include "core/nn/module_call.h"
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

// ---- fully_shard on CUDA ranks: its collectives beside the compute ----------

// A Linear whose forward then keeps its stream busy for `busy_cycles` (compute
// the host has already moved past, as a real layer's kernels).
struct BusyLinearImpl : torch::nn::Module {
  BusyLinearImpl(int64_t dim, int64_t busy_cycles) : busy_cycles(busy_cycles) {
    linear = register_module("linear", torch::nn::Linear(dim, dim));
  }
  at::Tensor forward(const at::Tensor& x) {
    if (on_enter) on_enter();
    at::Tensor y = linear(x);
#ifdef DTENSOR_TORCH_HAS_CUDA
    if (busy_cycles > 0) at::cuda::sleep(busy_cycles);
#endif
    return y;
  }
  torch::nn::Linear linear{nullptr};
  int64_t busy_cycles;
  std::function<void()> on_enter;  // the test's probe: the layer's parameters are gathered
};
TORCH_MODULE(BusyLinear);

struct TwoLayersImpl : torch::nn::Module {
  TwoLayersImpl(int64_t dim, int64_t first_busy_cycles) {
    first = register_module("first", BusyLinear(dim, first_busy_cycles));
    second = register_module("second", BusyLinear(dim, 0));
  }
  at::Tensor forward(const at::Tensor& x) { return nn::call(second, torch::relu(nn::call(first, x))); }
  BusyLinear first{nullptr}, second{nullptr};
};
TORCH_MODULE(TwoLayers);

// Float64 parameters from a private generator: the same on every rank and device.
TwoLayers make_two_layers(int64_t dim, int64_t first_busy_cycles, c10::Device device) {
  TwoLayers model(dim, first_busy_cycles);
  model->to(at::kDouble);
  at::Generator gen = at::detail::createCPUGenerator(11);
  at::NoGradGuard no_grad;
  for (at::Tensor& p : model->parameters()) p.copy_(at::randn(p.sizes(), gen, at::kDouble));
  model->to(device);
  return model;
}

#ifdef DTENSOR_TORCH_HAS_CUDA
// GPU clock cycles of at::cuda::sleep per millisecond, measured.
double sleep_cycles_per_ms() {
  at::cuda::CUDAEvent start(cudaEventDefault), end(cudaEventDefault);
  const auto stream = c10::cuda::getCurrentCUDAStream();
  at::cuda::sleep(1'000'000);  // clocks up
  constexpr int64_t kCycles = 50'000'000;
  start.record(stream);
  at::cuda::sleep(kCycles);
  end.record(stream);
  end.synchronize();
  return static_cast<double>(kCycles) / start.elapsed_time(end);
}
#endif

// Two fully_shard layers (and the root) on 2 ranks, after a first step. On
// CUDA ranks the test first keeps each rank's side stream busy for
// kSideBusyMs, and the first
// layer keeps the compute stream busy for kFirstBusyMs after its matmul. The
// first layer's all_gather then waits for the side stream's work, so the
// compute stream finishes no earlier than kSideBusyMs + kFirstBusyMs: the
// gathers are on the side stream. The second layer's all_gather, issued by
// the host while the first layer's kernels still run, does not wait for
// them, so the side stream's work up to the second layer's forward is done
// long before the compute stream's: it waits only for the mark the root took
// (Note [FSDP streams]). On every device
// the output and gradients equal one device's.
TEST(CudaFsdpStreams, AllGathersRunBesideTheCompute) {
  constexpr int64_t kDim = 64;
  [[maybe_unused]] constexpr double kSideBusyMs = 100;
  constexpr double kFirstBusyMs = 200;
  double cycles_per_ms = 0;
#ifdef DTENSOR_TORCH_HAS_CUDA
  if (g_device.is_cuda()) cycles_per_ms = sleep_cycles_per_ms();
#endif
  at::Generator gen = at::detail::createCPUGenerator(12);
  const at::Tensor x = at::randn({8, kDim}, gen, at::kDouble);
  TwoLayers reference = make_two_layers(kDim, 0, c10::kCPU);
  const at::Tensor expected = reference->forward(x);
  expected.sum().backward();

  FakeWorldOptions options;
  options.device = g_device;
  run_fake_world(2, [&](World& world) {
    auto mesh = DeviceMesh::init(world.device().type(), {2});
    TwoLayers model = make_two_layers(kDim, static_cast<int64_t>(cycles_per_ms * kFirstBusyMs), world.device());
    fully_shard(*model->first, mesh);
    fully_shard(*model->second, mesh);
    fully_shard(*model, mesh);
    const at::Tensor input = x.to(world.device());
    // A first step loads the kernels: CUDA loads a module at its first launch
    // (lazy loading, the default), which waits for the device to idle, so
    // the host of a first step would reach the second layer only after the
    // first layer's compute, whatever the streams.
    const int64_t busy_cycles = model->first->busy_cycles;
    model->first->busy_cycles = 0;
    nn::call(model, input).sum().backward();
    for (at::Tensor& p : model->parameters()) p.mutable_grad().reset();
    model->first->busy_cycles = busy_cycles;
#ifdef DTENSOR_TORCH_HAS_CUDA
    std::optional<at::cuda::CUDAEvent> start, compute_done, side_done, side_at_second;
    std::optional<c10::cuda::CUDAStream> compute, side;
    double host_second_ms = 0;
    if (world.device().is_cuda()) {
      compute = c10::cuda::getCurrentCUDAStream();
      side = c10::cuda::CUDAStream(c10::cuda::CUDAStream::UNCHECKED, thread_side_stream().value());
      start.emplace(cudaEventDefault);
      compute_done.emplace(cudaEventDefault);
      side_done.emplace(cudaEventDefault);
      side_at_second.emplace(cudaEventDefault);
      // Entering the second layer's forward, its all_gather is enqueued on
      // the side stream: the event marks where that gather ends.
      const auto host_start = std::chrono::steady_clock::now();
      model->second->on_enter = [&, host_start] {
        host_second_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - host_start).count();
        side_at_second->record(*side);
      };
      start->record(*compute);
      start->block(*side);
      c10::cuda::CUDAStreamGuard on_side(*side);
      at::cuda::sleep(static_cast<int64_t>(cycles_per_ms * kSideBusyMs));
    }
#endif
    const at::Tensor y = nn::call(model, input);
#ifdef DTENSOR_TORCH_HAS_CUDA
    if (world.device().is_cuda()) {
      compute_done->record(*compute);
      side_done->record(*side);
    }
#endif
    y.sum().backward();
    EXPECT_TRUE(at::allclose(y.cpu(), expected, 1e-10, 1e-10)) << "rank " << world.rank() << ": forward";
    const std::vector<at::Tensor> params = model->parameters(), ref_params = reference->parameters();
    for (size_t i = 0; i < params.size(); ++i) {
      const at::Tensor grad = DTensor(params[i].grad()).full_tensor().cpu();
      EXPECT_TRUE(at::allclose(grad, ref_params[i].grad(), 1e-10, 1e-10))
          << "rank " << world.rank() << ": gradient of parameter " << i;
    }
#ifdef DTENSOR_TORCH_HAS_CUDA
    if (world.device().is_cuda()) {
      compute_done->synchronize();
      side_done->synchronize();
      const double compute_ms = start->elapsed_time(*compute_done), side_ms = start->elapsed_time(*side_at_second),
                   side_end_ms = start->elapsed_time(*side_done);
      std::printf("rank %lld: compute stream %.1f ms, side stream %.1f ms after the start at the second layer's "
                  "forward (%.1f ms at the end of forward; side busy %.0f, first layer busy %.0f); the host "
                  "entered the second layer %.1f ms after the start\n",
                  static_cast<long long>(world.rank()), compute_ms, side_ms, side_end_ms, kSideBusyMs,
                  kFirstBusyMs, host_second_ms);
      EXPECT_TRUE(compute_ms >= 0.9 * (kSideBusyMs + kFirstBusyMs))
          << "rank " << world.rank() << ": the compute stream took " << compute_ms
          << " ms; it should have waited for the first layer's all_gather behind the side stream's "
          << kSideBusyMs << " ms";
      EXPECT_TRUE(side_ms <= compute_ms - kFirstBusyMs / 2)
          << "rank " << world.rank() << ": the side stream took " << side_ms << " ms of the compute stream's "
          << compute_ms << ": the second layer's all_gather waited for the first layer's compute";
    }
#endif
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
