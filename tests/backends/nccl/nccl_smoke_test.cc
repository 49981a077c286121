// NCCL smoke test on a real GPU: every collective of an nccl world checked
// against a CPU reference. World size 1 on GPU 0 by default; started by
// torchrun / dtensor-launch it runs as N ranks, one GPU each. Skips without a
// GPU or without a CUDA LibTorch. Builds with GoogleTest, or with
// DTENSOR_NO_GTEST against tests/backends/nccl/mini_test.h (tools/gpu_build.sh).
#ifdef DTENSOR_NO_GTEST
#include "tests/backends/nccl/mini_test.h"
#else
#include <gtest/gtest.h>
#endif

#include <ATen/ATen.h>
#include <arpa/inet.h>
#include <cuda_runtime_api.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "backends/launch/env.h"
#include "backends/nccl/nccl_world.h"

#ifdef DTENSOR_TORCH_HAS_CUDA
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace dtensor {
namespace {

// Why this host cannot run the test, or "" when it can.
std::string skip_reason() {
#ifndef DTENSOR_TORCH_HAS_CUDA
  return "LibTorch was built without CUDA: no CUDA tensors (set LIBTORCH to a CUDA LibTorch)";
#else
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) return "no CUDA device visible";
  return "";
#endif
}

int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

// Under a launcher: its environment; alone: a world of one on GPU 0.
LaunchEnv smoke_env() {
  if (has_launch_environment()) return launch_env_from_environment();
  LaunchEnv env;
  env.port = free_port();
  return env;
}

// Small integers, exact in every dtype and in products over 8 ranks of 1..2.
at::Tensor rank_input(int64_t rank, at::IntArrayRef shape, c10::ScalarType dtype) {
  int64_t numel = 1;
  for (int64_t s : shape) numel *= s;
  at::Tensor index = at::arange(numel, at::kLong).reshape(shape);
  if (dtype == at::kBool) return ((index + rank) % 2).eq(0);
  at::Tensor values = ((index + 3 * rank) % 2 + 1).to(at::kDouble);
  if (at::isComplexType(dtype)) {
    return at::complex(values, at::full_like(values, static_cast<double>(rank))).to(dtype);
  }
  return values.to(dtype);
}

at::Tensor stacked(const Communicator& comm, at::IntArrayRef shape, c10::ScalarType dtype) {
  std::vector<at::Tensor> parts;
  for (int64_t r : comm.group_ranks()) parts.push_back(rank_input(r, shape, dtype));
  return at::stack(parts);
}

at::Tensor reference_reduce(const at::Tensor& all, ReduceOp op, c10::ScalarType dtype) {
  if (dtype == at::kBool) {
    return (op == ReduceOp::kSum || op == ReduceOp::kMax) ? all.any(0) : all.all(0);
  }
  at::Tensor wide = all.to(at::isComplexType(dtype) ? at::kComplexDouble : at::kDouble);
  switch (op) {
    case ReduceOp::kSum:
      return wide.sum(0).to(dtype);
    case ReduceOp::kAvg:
      return (wide.sum(0) / all.size(0)).to(dtype);
    case ReduceOp::kMax:
      return std::get<0>(wide.max(0)).to(dtype);
    case ReduceOp::kMin:
      return std::get<0>(wide.min(0)).to(dtype);
    case ReduceOp::kProduct:
      return wide.prod(0).to(dtype);
  }
  return wide;
}

void expect_same(const at::Tensor& gpu_result, const at::Tensor& expected) {
  at::Tensor actual = gpu_result.cpu();
  EXPECT_TRUE(actual.sizes() == expected.sizes() && at::equal(actual, expected))
      << "actual:\n"
      << actual << "\nexpected:\n"
      << expected;
}

void check_all_reduce(Communicator& comm, const at::TensorOptions& on_gpu) {
  const std::vector<ReduceOp> ops = {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax, ReduceOp::kMin,
                                     ReduceOp::kProduct};
  for (ReduceOp op : ops) {
    for (c10::ScalarType dtype :
         {at::kFloat, at::kBFloat16, at::kHalf, at::kLong, at::kBool, at::kComplexFloat}) {
      const bool floating = at::isFloatingType(dtype) || at::isComplexType(dtype);
      if (op == ReduceOp::kAvg && !floating) continue;
      if (at::isComplexType(dtype) && op != ReduceOp::kSum && op != ReduceOp::kAvg) continue;
      SCOPED_TRACE(std::string("all_reduce ") + reduce_op_name(op) + " " + c10::toString(dtype));
      at::Tensor t = rank_input(comm.global_rank(), {3, 5}, dtype).to(on_gpu.device());
      comm.all_reduce(t, {op});
      expect_same(t, reference_reduce(stacked(comm, {3, 5}, dtype), op, dtype));
    }
  }
}

void check_gather_and_scatter(Communicator& comm, const at::TensorOptions& on_gpu) {
  const int64_t n = comm.size();
  for (c10::ScalarType dtype : {at::kFloat, at::kBool, at::kComplexDouble}) {
    SCOPED_TRACE(std::string("all_gather_into_tensor ") + c10::toString(dtype));
    at::Tensor in = rank_input(comm.global_rank(), {2, 3}, dtype).to(on_gpu.device());
    at::Tensor out = at::zeros({2 * n, 3}, in.options());
    comm.all_gather_into_tensor(out, in);
    std::vector<at::Tensor> parts;
    for (int64_t r : comm.group_ranks()) parts.push_back(rank_input(r, {2, 3}, dtype));
    expect_same(out, at::cat(parts));
  }
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax}) {
    SCOPED_TRACE(std::string("reduce_scatter_tensor ") + reduce_op_name(op));
    at::Tensor in = rank_input(comm.global_rank(), {2 * n, 3}, at::kFloat).to(on_gpu.device());
    at::Tensor out = at::zeros({2, 3}, in.options());
    comm.reduce_scatter_tensor(out, in, {op});
    at::Tensor full = reference_reduce(stacked(comm, {2 * n, 3}, at::kFloat), op, at::kFloat);
    expect_same(out, full.narrow(0, 2 * comm.rank(), 2));
  }
}

void check_all_to_all(Communicator& comm, const at::TensorOptions& on_gpu) {
  const int64_t n = comm.size();
  const int64_t me = comm.rank();
  auto rows = [](int64_t s, int64_t d) { return (s + 2 * d) % 3 + (s == d ? 1 : 0); };
  auto block = [&](int64_t s, int64_t d) {
    return (at::arange(rows(s, d), at::kDouble) + 100.0 * s + 10.0 * d)
        .unsqueeze(1)
        .expand({rows(s, d), 2})
        .contiguous()
        .to(at::kComplexDouble);
  };
  std::vector<at::Tensor> sent, expected;
  AllToAllOptions options;
  for (int64_t j = 0; j < n; ++j) {
    sent.push_back(block(me, j));
    expected.push_back(block(j, me));
    options.input_split_sizes.push_back(rows(me, j));
    options.output_split_sizes.push_back(rows(j, me));
  }
  at::Tensor in = at::cat(sent).to(on_gpu.device());
  at::Tensor want = at::cat(expected);
  at::Tensor out = at::zeros(want.sizes(), in.options());
  comm.all_to_all_single(out, in, options);
  expect_same(out, want);
}

void check_rooted(Communicator& comm, const at::TensorOptions& on_gpu) {
  for (int64_t root = 0; root < comm.size(); ++root) {
    SCOPED_TRACE("broadcast and scatter from root " + std::to_string(root));
    at::Tensor t = rank_input(comm.global_rank(), {4, 2}, at::kBFloat16).to(on_gpu.device());
    comm.broadcast(t, {root});
    expect_same(t, rank_input(comm.group_ranks()[root], {4, 2}, at::kBFloat16));
    std::vector<at::Tensor> inputs;
    if (comm.rank() == root) {
      for (int64_t i = 0; i < comm.size(); ++i) {
        inputs.push_back(rank_input(10 * root + i, {6}, at::kLong).to(on_gpu.device()));
      }
    }
    at::Tensor out = at::zeros({6}, on_gpu.dtype(at::kLong));
    comm.scatter(out, inputs, {root});
    expect_same(out, rank_input(10 * root + comm.rank(), {6}, at::kLong));
  }
}

// Async collectives, issued on a non-default current stream right after a
// long kernel writing their input: they must wait for it (stream ordering).
void check_async_and_ordering(Communicator& comm, const at::TensorOptions& on_gpu) {
#ifdef DTENSOR_TORCH_HAS_CUDA
  c10::cuda::CUDAStreamGuard guard(
      c10::cuda::getStreamFromPool(/*isHighPriority=*/false, on_gpu.device().index()));
#endif
  at::Tensor big = at::ones({2048, 2048}, on_gpu);
  // 2048 everywhere (each entry of big @ big), written by kernels on this stream.
  at::Tensor t = at::mm(big, big).diagonal().contiguous();
  at::Tensor u = rank_input(comm.global_rank(), {7}, at::kFloat).to(on_gpu.device());
  auto w1 = comm.all_reduce(t, {ReduceOp::kSum, {}, /*async_op=*/true});
  auto w2 = comm.all_reduce(u, {ReduceOp::kMax, {}, /*async_op=*/true});
  w2->wait();
  w1->wait();
  expect_same(t, at::full({2048}, 2048.0f * static_cast<float>(comm.size())));
  expect_same(u, reference_reduce(stacked(comm, {7}, at::kFloat), ReduceOp::kMax, at::kFloat));
  EXPECT_TRUE(w1->is_completed());
}

TEST(NcclSmoke, EveryCollectiveMatchesTheReference) {
  const std::string reason = skip_reason();
  if (!reason.empty()) GTEST_SKIP() << reason;
  auto world = nccl_world(smoke_env());
  ScopedCurrentWorld scope(*world);
  ASSERT_TRUE(world->device().is_cuda());
  const at::TensorOptions on_gpu = at::TensorOptions().device(world->device());
  auto group = world->world_group();
  check_all_reduce(*group, on_gpu);
  check_gather_and_scatter(*group, on_gpu);
  check_all_to_all(*group, on_gpu);
  check_rooted(*group, on_gpu);
  check_async_and_ordering(*group, on_gpu);
  group->barrier();
  std::printf("nccl smoke test: rank %lld of %lld on %s done\n",
              static_cast<long long>(world->rank()), static_cast<long long>(world->size()),
              world->device().str().c_str());
}

TEST(NcclSmoke, CpuTensorIsAClearError) {
  const std::string reason = skip_reason();
  if (!reason.empty()) GTEST_SKIP() << reason;
  if (has_launch_environment()) GTEST_SKIP() << "single-process check";
  auto world = nccl_world(smoke_env());
  at::Tensor cpu = at::ones({4});
  try {
    world->world_group()->all_reduce(cpu);
    ADD_FAILURE() << "a CPU tensor must be rejected";
  } catch (const c10::Error& e) {
    const std::string message = e.what_without_backtrace();
    EXPECT_NE(message.find("all_reduce on nccl group [0]"), std::string::npos) << message;
    EXPECT_NE(message.find("world.device()"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace dtensor

#ifdef DTENSOR_NO_GTEST
int main() { return ::mini_test::run_all(); }
#endif
