// Op-by-op checks of the math family: reductions with dims (prod, amax,
// amin, max/min.dim, argmax), var/std, norms, cumsum, softmax/log_softmax,
// logsumexp, topk, sort, and the pointwise activations with their backward.
#include <gtest/gtest.h>
#include <torch/utils.h>

#include "tests/core/ops/op_harness.h"

namespace dtensor::testing {
namespace {

OpCase unary(const std::string& name, std::function<at::Tensor(const at::Tensor&)> f,
             std::vector<int64_t> shape = {8, 12}) {
  return OpCase(name, {Input::floats(std::move(shape))}, [f](const Tensors& x) { return Tensors{f(x[0])}; });
}

TEST(MathOpsTest, ReductionsWithDims) {
  check_all_placements(unary("prod.dim", [](const at::Tensor& x) { return x.prod(1); }));
  check_all_placements(unary("amax", [](const at::Tensor& x) { return x.amax({1}); }));
  check_all_placements(unary("amin_keepdim", [](const at::Tensor& x) { return x.amin({0}, true); }));
  check_all_placements(OpCase("max.dim", {Input::floats({8, 12})}, [](const Tensors& x) {
    auto r = x[0].max(1);
    return Tensors{std::get<0>(r), std::get<1>(r)};
  }));
  check_all_placements(OpCase("min.dim_keepdim", {Input::floats({8, 12})}, [](const Tensors& x) {
    auto r = x[0].min(0, true);
    return Tensors{std::get<0>(r), std::get<1>(r)};
  }));
  check_all_placements(OpCase("argmax", {Input::floats({8, 12}).no_grad()}, [](const Tensors& x) {
    return Tensors{x[0].argmax(1)};
  }));
  check_all_placements(unary("full_max", [](const at::Tensor& x) { return x.max(); }));
}

TEST(MathOpsTest, VarianceAndStd) {
  check_all_placements(unary("var", [](const at::Tensor& x) { return x.var(1); }));
  check_all_placements(unary("var_all", [](const at::Tensor& x) { return x.var(); }));
  check_all_placements(unary("std_keepdim", [](const at::Tensor& x) { return x.std(0, false, true); }));
  check_all_placements(OpCase("var_mean", {Input::floats({8, 12})}, [](const Tensors& x) {
    auto r = torch::var_mean(x[0], 1);
    return Tensors{std::get<0>(r), std::get<1>(r)};
  }));
}

TEST(MathOpsTest, Norms) {
  check_all_placements(unary("norm_dim", [](const at::Tensor& x) { return x.norm(2, {1}); }));
  check_all_placements(unary("norm_full", [](const at::Tensor& x) { return x.norm(); }));
  check_all_placements(unary("norm_3", [](const at::Tensor& x) { return x.norm(3, {0}, true); }));
  check_all_placements(unary("norm_1", [](const at::Tensor& x) { return x.norm(1, {1}); }));
  check_all_placements(unary("norm_inf", [](const at::Tensor& x) {
    return torch::linalg_vector_norm(x, INFINITY, c10::IntArrayRef{1}, false, c10::nullopt);
  }));
  check_all_placements(unary("linalg_vector_norm", [](const at::Tensor& x) {
    return torch::linalg_vector_norm(x, 2, c10::IntArrayRef{0, 1}, false, c10::nullopt);
  }));
}

TEST(MathOpsTest, CumsumSoftmaxLogsumexp) {
  check_all_placements(unary("cumsum", [](const at::Tensor& x) { return x.cumsum(1); }));
  check_all_placements(unary("cumsum0", [](const at::Tensor& x) { return x.cumsum(0); }));
  check_all_placements(unary("softmax", [](const at::Tensor& x) { return x.softmax(1); }));
  check_all_placements(unary("softmax0", [](const at::Tensor& x) { return x.softmax(0); }));
  check_all_placements(unary("log_softmax", [](const at::Tensor& x) { return x.log_softmax(-1); }, {4, 4, 8}));
  check_all_placements(unary("logsumexp", [](const at::Tensor& x) { return x.logsumexp({1}); }));
}

TEST(MathOpsTest, TopkAndSort) {
  check_all_placements(OpCase("topk", {Input::floats({8, 12})}, [](const Tensors& x) {
    auto r = x[0].topk(3, 1);
    return Tensors{std::get<0>(r), std::get<1>(r)};
  }));
  check_all_placements(OpCase("sort", {Input::floats({8, 12})}, [](const Tensors& x) {
    auto r = x[0].sort(0, true);
    return Tensors{std::get<0>(r), std::get<1>(r)};
  }));
}

TEST(MathOpsTest, ActivationsAndTheirBackward) {
  check_all_placements(unary("gelu", [](const at::Tensor& x) { return torch::gelu(x); }));
  check_all_placements(unary("gelu_tanh", [](const at::Tensor& x) { return torch::gelu(x, "tanh"); }));
  check_all_placements(unary("silu", [](const at::Tensor& x) { return torch::silu(x); }));
  check_all_placements(unary("tanh", [](const at::Tensor& x) { return torch::tanh(x); }));
  check_all_placements(unary("relu", [](const at::Tensor& x) { return torch::relu(x); }));
  check_all_placements(unary("sigmoid", [](const at::Tensor& x) { return torch::sigmoid(x); }));
}

// Uneven shards (torch.chunk sizes, some ranks empty): 6 over 4 is 2, 2, 2, 0.
TEST(MathOpsTest, UnevenShards) {
  check_all_placements(unary("softmax_uneven", [](const at::Tensor& x) { return x.softmax(1); }, {6, 5}));
  check_all_placements(unary("var_uneven", [](const at::Tensor& x) { return x.var(0); }, {7, 6}));
  check_all_placements(unary("norm_uneven", [](const at::Tensor& x) { return x.norm(2, {0}); }, {7, 6}));
  check_all_placements(unary("cumsum_uneven", [](const at::Tensor& x) { return x.cumsum(0); }, {6, 5}));
  check_all_placements(OpCase("topk_uneven", {Input::floats({6, 10})}, [](const Tensors& x) {
    auto r = x[0].topk(2, 1);
    return Tensors{std::get<0>(r), std::get<1>(r)};
  }));
  check_all_placements(unary("amax_uneven", [](const at::Tensor& x) { return x.amax({0}); }, {6, 5}));
}

}  // namespace
}  // namespace dtensor::testing
