// Op-by-op checks of the math family: reductions with dims (prod, amax,
// amin, max/min.dim, argmax), var/std, norms, cumsum, softmax/log_softmax,
// logsumexp, topk, sort, and the pointwise activations with their backward.
#include <gtest/gtest.h>
#include <torch/utils.h>

#include "core/compat/torch_compat.h"
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

// The FFT kernels (core/ops/fft_rules.cc): rfft (_fft_r2c), irfft
// (_fft_c2r), a two-sided fft of a real input and ifft (_fft_c2c), on every
// placement, values and gradients equal to one device; a shard of an
// untransformed dim and a Partial(sum) input stay as they are.
TEST(MathOpsTest, FftOnEveryPlacement) {
  auto x = Input::floats({8, 6, 16});
  check_all_placements(OpCase("rfft", {x}, [](const Tensors& t) {
    return Tensors{at::view_as_real(at::fft_rfft(t[0], c10::nullopt, /*dim=*/-1))};
  }), /*max_combos=*/60, /*samples_2d=*/8);
  check_all_placements(OpCase("irfft_of_rfft2", {x}, [](const Tensors& t) {
    return Tensors{at::fft_irfft(at::fft_rfft2(t[0]), c10::nullopt, /*dim=*/-1)};
  }), /*max_combos=*/60, /*samples_2d=*/8);
  check_all_placements(OpCase("ifft_of_fft", {x}, [](const Tensors& t) {
    return Tensors{at::view_as_real(at::fft_ifft(at::fft_fft(t[0], c10::nullopt, 1), c10::nullopt, 0))};
  }), /*max_combos=*/60, /*samples_2d=*/8);
  OpCase rfft("rfft_last", {Input::floats({8, 8, 16})},
               [](const Tensors& t) { return Tensors{at::view_as_real(at::fft_rfft(t[0]))}; });
  for (const Placement& p : {Placement(Shard(0)), Placement(Shard(1)), Placement(Partial())}) {
    SCOPED_TRACE(p.to_string());
    CommCounts c = comm_counts(rfft, {4}, {{p}});
    EXPECT_EQ(c.forward, Counts{});
    EXPECT_EQ(c.outputs, std::vector<Placements>{{p}});
  }
  // A shard of the transformed dim is gathered; a P(max) is reduced first
  // (PyTorch 2.15 keeps it, which is wrong).
  EXPECT_EQ(comm_counts(rfft, {4}, {{Shard(2)}}).forward, (Counts{{"all_gather_into_tensor", 1}}));
  EXPECT_EQ(comm_counts(rfft, {4}, {{Partial(ReduceOp::kMax)}}).forward, (Counts{{"all_reduce", 1}}));
  // 6 rows over 4 ranks would leave rank 3 an empty piece, which MKL's FFT
  // (LibTorch 2.11) refuses: gathered.
  OpCase uneven("rfft_uneven", {x}, [](const Tensors& t) { return Tensors{at::view_as_real(at::fft_rfft(t[0]))}; });
  EXPECT_EQ(comm_counts(uneven, {4}, {{Shard(1)}}).forward, (Counts{{"all_gather_into_tensor", 1}}));
}

#if DTENSOR_TORCH_AT_LEAST(2, 11)
// sum |x|^p (linalg__powsum, _foreach_powsum) over a shard is a partial sum;
// a Partial input is reduced first.
TEST(MathOpsTest, PowsumShardsAndReducesPartialInputs) {
  OpCase powsum("linalg__powsum", {Input::floats({8, 6})}, [](const Tensors& t) {
    return Tensors{at::linalg__powsum(t[0], 3, at::IntArrayRef{0})};
  });
  check_all_placements(powsum.no_grads(), /*max_combos=*/40, /*samples_2d=*/8);  // LibTorch has no derivative
  EXPECT_EQ(comm_counts(powsum, {4}, {{Shard(0)}}).outputs, std::vector<Placements>{{Partial()}});
  EXPECT_EQ(comm_counts(powsum, {4}, {{Shard(1)}}).outputs, std::vector<Placements>{{Shard(0)}});
  EXPECT_EQ(comm_counts(powsum, {4}, {{Partial()}}).forward, (Counts{{"all_reduce", 1}}));
  OpCase each("_foreach_powsum", {Input::floats({8, 6}), Input::floats({5})}, [](const Tensors& t) {
    return at::_foreach_powsum(at::TensorList{t[0], t[1]}, 2);
  });
  check_all_placements(each.no_grads(), /*max_combos=*/40, /*samples_2d=*/8);
  CommCounts mixed = comm_counts(each, {4}, {{Shard(1)}, {Replicate()}});
  EXPECT_EQ(mixed.forward, Counts{});
  EXPECT_EQ(mixed.outputs, (std::vector<Placements>{{Partial()}, {Replicate()}}));
}
#endif

}  // namespace
}  // namespace dtensor::testing
