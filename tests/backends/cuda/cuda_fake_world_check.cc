// GPU checks of the CUDA fake world (needs a CUDA GPU; tools/gpu_check.sh
// runs it): every collective on 2, 4 and 8 CUDA fake ranks and the suite's
// dtypes gives bit for bit what the CPU fake world gives; reruns are
// bit-identical; per-rank CUDA memory and its cap; a rank that throws
// or returns early fails the world fast. With --bench, the bandwidth of the
// fake all_reduce / all_gather / reduce_scatter against a device-to-device
// copy of the same bytes (ratio), written as JSON lines to --json PATH.
//   cuda_fake_world_check [--bench] [--json PATH] [--quick]
//   cuda_fake_world_check --self-test-on-cpu   # the checks' own logic, CPU ranks
//                                              # standing in for CUDA ones (no GPU)
// Built on tests/backends/nccl/mini_test.h (GPU hosts have no GoogleTest).
// Backends only (no DTensor core), so that CI's CUDA configuration builds it
// cheaply; DTensor on CUDA ranks is cuda_dtensor_check.cc.
#include <ATen/ATen.h>
#include <torch/cuda.h>
#include <torch/utils.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#ifdef DTENSOR_TORCH_HAS_CUDA
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAStream.h>
#endif

#include "backends/fake/fake_world.h"
#include "tests/backends/nccl/mini_test.h"

namespace dtensor {
namespace {

using Clock = std::chrono::steady_clock;
using Outputs = std::map<std::string, at::Tensor>;  // "rank r: what" -> CPU result

// The device under test: CUDA, or the CPU for --self-test-on-cpu.
c10::Device g_device = c10::kCUDA;

const std::vector<c10::ScalarType> kDtypes = {at::kFloat, at::kDouble, at::kInt, at::kLong,
                                              at::kBFloat16};

at::Tensor input_of(int64_t rank, int64_t numel, c10::ScalarType dtype, uint64_t salt,
                    bool for_product) {
  at::Generator gen = at::detail::createCPUGenerator(1000 * rank + salt);
  at::Tensor t;
  if (at::isIntegralType(dtype, false)) {
    t = for_product ? at::randint(1, 3, {numel}, gen, at::kLong) : at::randint(-50, 50, {numel}, gen, at::kLong);
  } else {
    t = for_product ? 1.0 + 0.01 * at::randn({numel}, gen, at::kDouble) : at::randn({numel}, gen, at::kDouble);
  }
  return t.to(dtype);
}

// The same collectives on any fake world; every result copied to the CPU.
void run_script(World& world, c10::ScalarType dtype, std::mutex& mutex, Outputs& outputs) {
  const c10::Device dev = world.device();
  const int64_t n = world.size();
  const int64_t r = world.rank();
  auto comm = world.world_group();
  auto keep = [&](const std::string& what, const at::Tensor& t) {
    std::lock_guard<std::mutex> lock(mutex);
    outputs["rank " + std::to_string(r) + ": " + what] = t.cpu();
  };
  const bool integral = at::isIntegralType(dtype, false);
  uint64_t salt = 0;
  for (int64_t numel : {int64_t{37}, int64_t{70000}}) {  // small (staged) and large paths
    const std::string tag = std::to_string(numel) + " ";
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax, ReduceOp::kMin,
                        ReduceOp::kProduct}) {
      if (integral && op == ReduceOp::kAvg) continue;
      at::Tensor t = input_of(r, numel, dtype, ++salt, op == ReduceOp::kProduct).to(dev);
      comm->all_reduce(t, {op});
      keep(tag + "all_reduce " + std::to_string(static_cast<int>(op)), t);
    }
    at::Tensor in = input_of(r, numel, dtype, ++salt, false).to(dev);
    at::Tensor gathered = at::empty({n * numel}, in.options());
    comm->all_gather_into_tensor(gathered, in);
    keep(tag + "all_gather", gathered);
    at::Tensor big = input_of(r, n * numel, dtype, ++salt, false).to(dev);
    at::Tensor part = at::empty({numel}, big.options());
    comm->reduce_scatter_tensor(part, big);
    keep(tag + "reduce_scatter", part);
    at::Tensor a2a = at::empty_like(big);
    comm->all_to_all_single(a2a, big);
    keep(tag + "all_to_all", a2a);
    at::Tensor b = input_of(r, numel, dtype, ++salt, false).to(dev);
    comm->broadcast(b, {n - 1});
    keep(tag + "broadcast", b);
    std::vector<at::Tensor> pieces;
    if (r == 0) {
      for (int64_t j = 0; j < n; ++j) pieces.push_back(input_of(j, numel, dtype, ++salt, false).to(dev));
    }
    at::Tensor got = at::empty({numel}, in.options());
    comm->scatter(got, pieces, {0});
    keep(tag + "scatter", got);
  }
  comm->barrier();
}

Outputs collectives_on(c10::Device device, int64_t ranks, c10::ScalarType dtype) {
  std::mutex mutex;
  Outputs outputs;
  FakeWorldOptions options;
  options.device = device;
  run_fake_world(ranks, [&](World& w) { run_script(w, dtype, mutex, outputs); }, options);
  return outputs;
}

int compare(const Outputs& want, const Outputs& got, const std::string& context) {
  int bad = 0;
  EXPECT_EQ(want.size(), got.size()) << context;
  for (const auto& [key, expected] : want) {
    auto it = got.find(key);
    if (it == got.end() || !at::equal(expected, it->second)) {
      if (++bad <= 3) {
        ADD_FAILURE() << context << ": " << key << " differs from the CPU fake world";
      }
    }
  }
  return bad;
}

TEST(CudaFakeWorld, EveryCollectiveEqualsTheCpuFakeWorldBitForBit) {
  for (int64_t ranks : {2, 4, 8}) {
    for (c10::ScalarType dtype : kDtypes) {
      const std::string context =
          std::to_string(ranks) + " ranks, " + std::string(c10::toString(dtype));
      const Outputs cpu = collectives_on(c10::kCPU, ranks, dtype);
      const Outputs cuda = collectives_on(g_device, ranks, dtype);
      compare(cpu, cuda, context);
    }
  }
}

TEST(CudaFakeWorld, RerunsAreBitIdentical) {
  const Outputs first = collectives_on(g_device, 4, at::kFloat);
  const Outputs second = collectives_on(g_device, 4, at::kFloat);
  compare(first, second, "rerun");
}

TEST(CudaFakeWorld, RoundRobinPlacementGivesTheSameResults) {
  FakeWorldOptions options;
  options.device = g_device;
  if (g_device.is_cuda()) options.placement = FakeDevicePlacement::kRoundRobin;
  std::mutex mutex;
  Outputs outputs;
  run_fake_world(4, [&](World& w) { run_script(w, at::kFloat, mutex, outputs); }, options);
  compare(collectives_on(c10::kCPU, 4, at::kFloat), outputs, "round robin");
}

TEST(CudaFakeWorld, MemoryStatsCountEachRanksCudaAllocations) {
  std::mutex mutex;
  std::map<int64_t, RankMemoryStats> during, after;
  FakeWorldOptions options;
  options.device = g_device;
  run_fake_world(4, [&](World& world) {
    const int64_t base = world.memory_stats()->current_bytes;
    {
      at::Tensor t = at::empty({(world.rank() + 1) << 20}, at::TensorOptions().dtype(at::kByte).device(world.device()));
      world.world_group()->barrier();
      RankMemoryStats s = *world.memory_stats();
      s.current_bytes -= base;
      std::lock_guard<std::mutex> lock(mutex);
      during[world.rank()] = s;
    }
    RankMemoryStats s = *world.memory_stats();
    s.current_bytes -= base;
    std::lock_guard<std::mutex> lock(mutex);
    after[world.rank()] = s;
  }, options);
  for (int64_t r = 0; r < 4; ++r) {
    // Block sizes: at least the request, rounded up by the caching allocator.
    EXPECT_TRUE(during[r].current_bytes >= ((r + 1) << 20)) << "rank " << r << ": " << during[r].current_bytes;
    EXPECT_TRUE(during[r].current_bytes < ((r + 1) << 20) + (2 << 20)) << "rank " << r;
    EXPECT_EQ(after[r].current_bytes, 0) << "rank " << r;
  }
}

std::string failure_of(int64_t n, const std::function<void(World&)>& fn, FakeWorldOptions options) {
  try {
    run_fake_world(n, fn, options);
  } catch (const c10::Error& e) {
    return e.what_without_backtrace();
  }
  return "";
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

TEST(CudaFakeWorld, MemoryCapFailsTheRankAtItsNextCollective) {
  FakeWorldOptions options;
  options.device = g_device;
  options.memory_cap_bytes = 4 << 20;
  const auto start = Clock::now();
  const std::string message = failure_of(4, [](World& world) {
    at::Tensor t = at::ones({world.rank() == 1 ? (8 << 20) : 1024},
                            at::TensorOptions().dtype(at::kByte).device(world.device()));
    world.world_group()->all_reduce(t);
  }, options);
  EXPECT_TRUE(message.rfind("[rank 1] ", 0) == 0) << message;
  EXPECT_TRUE(message.find("out of its simulated memory") != std::string::npos) << message;
  EXPECT_TRUE(seconds_since(start) < 10) << "not fast";
}

TEST(CudaFakeWorld, ThrowingRankFailsTheWorldFast) {
  FakeWorldOptions options;
  options.device = g_device;
  const auto start = Clock::now();
  const std::string message = failure_of(8, [](World& world) {
    at::Tensor t = at::ones({1 << 20}, at::TensorOptions().device(world.device()));
    world.world_group()->all_reduce(t);
    if (world.rank() == 5) throw std::runtime_error("injected failure");
    world.world_group()->all_reduce(t);
  }, options);
  EXPECT_TRUE(message.rfind("[rank 5] injected failure", 0) == 0) << message;
  EXPECT_TRUE(seconds_since(start) < 10) << "not fast";
}

TEST(CudaFakeWorld, RankReturningEarlyFailsTheWorldFast) {
  FakeWorldOptions options;
  options.device = g_device;
  const auto start = Clock::now();
  const std::string message = failure_of(4, [](World& world) {
    if (world.rank() == 2) return;
    at::Tensor t = at::ones({4096}, at::TensorOptions().device(world.device()));
    world.world_group()->all_reduce(t);
  }, options);
  EXPECT_TRUE(message.find("2") != std::string::npos && !message.empty()) << message;
  EXPECT_TRUE(seconds_since(start) < 10) << "not fast";
}

// ---- --bench -----------------------------------------------------------------

#ifdef DTENSOR_TORCH_HAS_CUDA
double seconds_of(int iters, const std::function<void()>& body) {
  body();
  c10::cuda::device_synchronize();
  const auto start = Clock::now();
  for (int i = 0; i < iters; ++i) body();
  c10::cuda::device_synchronize();
  return seconds_since(start) / iters;
}
#endif

int run_bench(const std::string& json_path, bool quick) {
#ifdef DTENSOR_TORCH_HAS_CUDA
  std::ofstream json(json_path.empty() ? "/dev/null" : json_path);
  std::printf("%-16s %6s %10s %12s %12s %8s\n", "collective", "ranks", "bytes", "fake us",
              "d2d copy us", "ratio");
  const int64_t max_bytes = quick ? (int64_t{4} << 20) : (int64_t{256} << 20);
  for (int64_t ranks : {2, 4, 8}) {
    for (int64_t bytes = 1024; bytes <= max_bytes; bytes *= 4) {
      const int iters = bytes >= (int64_t{16} << 20) ? 5 : 50;
      at::Tensor src = at::empty({bytes}, at::TensorOptions().dtype(at::kByte).device(at::kCUDA));
      at::Tensor dst = at::empty_like(src);
      const double copy = seconds_of(iters, [&] { dst.copy_(src); });
      for (const char* kind : {"all_reduce", "all_gather", "reduce_scatter"}) {
        const std::string name = kind;
        double fake = 0;
        FakeWorldOptions options;
        options.device = c10::kCUDA;
        // Per-rank payload of `bytes` (floats); times measured by rank 0.
        run_fake_world(ranks, [&](World& world) {
          auto comm = world.world_group();
          const int64_t numel = bytes / 4;
          at::Tensor t = at::ones({numel}, at::TensorOptions().device(world.device()));
          at::Tensor out = at::empty({name == "all_gather" ? numel * ranks : numel / ranks},
                                     t.options());
          auto step = [&] {
            if (name == "all_reduce") comm->all_reduce(t);
            if (name == "all_gather") comm->all_gather_into_tensor(out, t);
            if (name == "reduce_scatter") comm->reduce_scatter_tensor(out, t);
          };
          if (name == "reduce_scatter" && numel % ranks != 0) return;
          step();
          c10::cuda::getCurrentCUDAStream().synchronize();
          comm->barrier();
          const auto start = Clock::now();
          for (int i = 0; i < iters; ++i) step();
          c10::cuda::getCurrentCUDAStream().synchronize();
          comm->barrier();
          if (world.rank() == 0) fake = seconds_since(start) / iters;
        }, options);
        if (fake == 0) continue;
        std::printf("%-16s %6lld %10lld %12.1f %12.1f %8.2f\n", kind,
                    static_cast<long long>(ranks), static_cast<long long>(bytes), fake * 1e6,
                    copy * 1e6, fake / copy);
        json << "{\"bench\": \"cuda_fake_collective\", \"collective\": \"" << kind
             << "\", \"ranks\": " << ranks << ", \"bytes\": " << bytes << ", \"fake_us\": "
             << fake * 1e6 << ", \"d2d_copy_us\": " << copy * 1e6 << ", \"ratio\": "
             << fake / copy << "}\n";
      }
    }
  }
  return 0;
#else
  (void)json_path;
  (void)quick;
  std::printf("built without CUDA: no benchmark\n");
  return 1;
#endif
}

}  // namespace
}  // namespace dtensor

int main(int argc, char** argv) {
  bool bench = false;
  bool quick = false;
  std::string json;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--bench")) bench = true;
    else if (!std::strcmp(argv[i], "--quick")) quick = true;
    else if (!std::strcmp(argv[i], "--json") && i + 1 < argc) json = argv[++i];
  }
  if (argc > 1 && !std::strcmp(argv[1], "--self-test-on-cpu")) {
    dtensor::g_device = c10::kCPU;
    return mini_test::run_all();
  }
  if (!torch::cuda::is_available()) {
    std::printf("no GPU: the CUDA fake world checks need one (built fine)\n");
    return 77;
  }
  if (bench) return dtensor::run_bench(json, quick);
  return mini_test::run_all();
}
