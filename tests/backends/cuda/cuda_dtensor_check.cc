// GPU checks of DTensor on the CUDA fake world (tools/gpu_check.sh runs it):
// DeviceMesh::init(kCUDA) inside a CUDA fake world, a DTensor forward and
// backward (matmul, Partial sum, redistributions) whose loss and gradients
// equal the CPU fake world's (float64 to 1e-10), per-rank peak memory of
// that step, and scaled_dot_product_attention on heads- and batch-sharded
// DTensors running the fused kernel LibTorch picks for one GPU (Note [Fused
// attention on CUDA ranks]), forward and backward equal to one GPU's, with
// no collective. Built on tests/backends/nccl/mini_test.h (no GoogleTest).
//   cuda_dtensor_check                     # needs a GPU; exits 77 without one
//   cuda_dtensor_check --self-test-on-cpu  # the checks' logic on CPU ranks
#include <ATen/ATen.h>
#include <torch/cuda.h>
#include <torch/utils.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "backends/collective_event.h"
#include "backends/fake/fake_world.h"
#include "core/compat/torch_compat.h"
#include "core/dispatch/op_observer.h"
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

#if DTENSOR_TORCH_AT_LEAST(2, 5)  // the fused attention kernels (Debian's 1.13 has none)
// The DTensor ops this rank's thread dispatches whose name holds "attention".
struct AttentionOps : OpObserver {
  std::vector<std::string> names;
  void on_dtensor_op(const OpCall& call) override {
    if (std::string(call.name).find("attention") != std::string::npos) names.emplace_back(call.name);
  }
};

struct CollectiveCount : CollectiveObserver {
  std::mutex mutex;
  int count = 0;
  void on_collective(const CollectiveEvent&) override {
    std::lock_guard<std::mutex> lock(mutex);
    ++count;
  }
};

const char* backend_name(int64_t backend) {
  switch (backend) {
    case 0: return "math";
    case 1: return "flash";
    case 2: return "efficient";
    case 3: return "cudnn";
    default: return "other";
  }
}

// Causal attention of [4, 8, 128, 64] q, k, v on 4 ranks, sharded on the batch
// or on the heads, against one device: output and the gradients of q, k and
// v (backward of a fixed random cotangent). On a GPU the DTensor op must be
// the fused kernel LibTorch picks for the plain tensors (flash for 16-bit
// types, memory-efficient for float32 on an H100); on CPU ranks (the self-
// test) the math path.
TEST(CudaDTensor, AttentionRunsTheFusedKernelOfOneDevice) {
  for (at::ScalarType dtype : {at::kFloat, at::kBFloat16, at::kHalf}) {
    at::Generator gen = at::detail::createCPUGenerator(11);
    auto make = [&] { return at::randn({4, 8, 128, 64}, gen, at::kFloat).to(g_device).to(dtype); };
    const at::Tensor q = make(), k = make(), v = make(), cotangent = make();
    const int64_t backend = at::_fused_sdp_choice(q, k, v, {}, 0.0, /*is_causal=*/true);
    at::Tensor rq = q.clone().requires_grad_(true), rk = k.clone().requires_grad_(true),
               rv = v.clone().requires_grad_(true);
    const at::Tensor ref = at::scaled_dot_product_attention(rq, rk, rv, {}, 0.0, /*is_causal=*/true);
    (ref * cotangent).sum().backward();
    const double tol = dtype == at::kFloat ? 2e-5 : 2e-2;
    for (int64_t dim : {0, 1}) {
      SCOPED_TRACE(std::string(c10::toString(dtype)) + " Shard(" + std::to_string(dim) + ")");
      std::mutex mutex;
      std::map<int64_t, std::vector<std::string>> ops;
      int collectives = 0;
      at::Tensor out, gq, gk, gv;
      FakeWorldOptions options;
      options.device = g_device;
      run_fake_world(4, [&](World& world) {
        auto mesh = DeviceMesh::init(g_device.type(), {4});
        auto shard = [&](const at::Tensor& t) {
          DTensor d = distribute_tensor(t, mesh, {Shard(dim)});
          d.requires_grad_(true);
          return d;
        };
        DTensor dq = shard(q), dk = shard(k), dv = shard(v);
        DTensor dc = distribute_tensor(cotangent, mesh, {Shard(dim)});
        CollectiveCount count;  // from here on: attention and its backward only
        auto registration = world.observers().add(&count);
        AttentionOps seen;
        at::Tensor o;
        {
          ScopedOpObserver observe(&seen);
          o = at::scaled_dot_product_attention(dq, dk, dv, {}, 0.0, /*is_causal=*/true);
        }
        (o * dc).sum().backward();
        const int before_reads = count.count;  // full_tensor below gathers on purpose
        at::Tensor full_out = DTensor(o).full_tensor(), full_gq = DTensor(dq.grad()).full_tensor(),
                   full_gk = DTensor(dk.grad()).full_tensor(), full_gv = DTensor(dv.grad()).full_tensor();
        std::lock_guard<std::mutex> lock(mutex);
        ops[world.rank()] = seen.names;
        collectives += before_reads;
        if (world.rank() == 0) {
          out = full_out;
          gq = full_gq;
          gk = full_gk;
          gv = full_gv;
        }
      }, options);
      const bool fused = g_device.is_cuda() && backend >= 1 && backend <= 3;
      const std::string ran = ops[0].empty() ? std::string("the math path") : ops[0].back();
      std::printf("  attention %s Shard(%lld): LibTorch picks %s for one device; the DTensor ran %s\n",
                  c10::toString(dtype), static_cast<long long>(dim), backend_name(backend), ran.c_str());
      // The math path decomposes before the DTensor kernel: no attention op is seen.
      const std::string expected =
          fused ? std::string("aten::_scaled_dot_product_") + backend_name(backend) + "_attention" : std::string();
      for (const auto& [rank, names] : ops) {
        EXPECT_TRUE(fused ? !names.empty() && names.back().rfind(expected, 0) == 0 : names.empty());
      }
      EXPECT_EQ(collectives, 0);
      EXPECT_TRUE(at::allclose(out.to(at::kFloat), ref.to(at::kFloat), tol, tol));
      EXPECT_TRUE(at::allclose(gq.to(at::kFloat), rq.grad().to(at::kFloat), tol, tol));
      EXPECT_TRUE(at::allclose(gk.to(at::kFloat), rk.grad().to(at::kFloat), tol, tol));
      EXPECT_TRUE(at::allclose(gv.to(at::kFloat), rv.grad().to(at::kFloat), tol, tol));
    }
    if (!g_device.is_cuda()) break;  // CPU ranks: half and bfloat16 math differ from one device's fused kernel
  }
}

#endif

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
