// Op-by-op checks of the matrix family: mm, addmm, bmm, baddbmm, dot, mv,
// and the composites that decompose into them (matmul of every rank
// combination, linear, einsum's common patterns, scaled dot-product
// attention sharded on batch and heads).
#include <gtest/gtest.h>
#include <torch/nn/functional.h>
#include <torch/utils.h>
#include <torch/version.h>

#include "backends/fake/fake_world.h"
#include "core/compat/torch_compat.h"
#include "tests/core/ops/op_harness.h"

namespace dtensor::testing {
namespace {

OpCase binary(const std::string& name, std::vector<int64_t> a, std::vector<int64_t> b,
              std::function<at::Tensor(const at::Tensor&, const at::Tensor&)> f) {
  return OpCase(name, {Input::floats(std::move(a)), Input::floats(std::move(b))},
                [f](const Tensors& x) { return Tensors{f(x[0], x[1])}; });
}

TEST(MatrixOpsTest, MmAddmmBmmBaddbmm) {
  check_all_placements(binary("mm", {8, 4}, {4, 12}, [](const at::Tensor& a, const at::Tensor& b) { return a.mm(b); }));
  check_all_placements(OpCase("addmm", {Input::floats({12}), Input::floats({8, 4}), Input::floats({4, 12})},
                              [](const Tensors& x) { return Tensors{torch::addmm(x[0], x[1], x[2])}; }),
                       /*max_combos=*/150);
  check_all_placements(binary("bmm", {4, 8, 4}, {4, 4, 8}, [](const at::Tensor& a, const at::Tensor& b) { return a.bmm(b); }));
  check_all_placements(OpCase("baddbmm", {Input::floats({4, 8, 8}), Input::floats({4, 8, 4}), Input::floats({4, 4, 8})},
                              [](const Tensors& x) { return Tensors{torch::baddbmm(x[0], x[1], x[2], 0.5, 2.0)}; }),
                       /*max_combos=*/150);
}

TEST(MatrixOpsTest, DotAndMv) {
  check_all_placements(binary("dot", {8}, {8}, [](const at::Tensor& a, const at::Tensor& b) { return a.dot(b); }));
  check_all_placements(binary("mv", {8, 12}, {12}, [](const at::Tensor& a, const at::Tensor& b) { return a.mv(b); }));
}

TEST(MatrixOpsTest, MatmulDecomposesForEveryRank) {
  auto matmul = [](const at::Tensor& a, const at::Tensor& b) { return torch::matmul(a, b); };
  check_all_placements(binary("matmul_1x1", {8}, {8}, matmul));
  check_all_placements(binary("matmul_2x1", {4, 8}, {8}, matmul));
  // vector @ matrix ends in squeeze_(0), an in-place view whose shard dim
  // moves: refused by the view rules when the matrix is S(1) (see the
  // coverage report), so that placement is left out here.
  OpCase vm = binary("matmul_1x2", {8}, {8, 4}, matmul);
  vm.inputs[1].only = {{Replicate()}, {Shard(0)}, {Partial()}};
  check_all_placements(vm);
  check_all_placements(binary("matmul_2x2", {4, 8}, {8, 4}, matmul));
  check_all_placements(binary("matmul_3x2", {4, 8, 4}, {4, 8}, matmul));
  check_all_placements(binary("matmul_3x3", {4, 4, 8}, {4, 8, 4}, matmul));
  check_all_placements(binary("matmul_4x4", {2, 4, 4, 8}, {2, 4, 8, 4}, matmul), /*max_combos=*/120);
}

TEST(MatrixOpsTest, LinearAndEinsum) {
  auto linear = [](const Tensors& x) { return Tensors{torch::nn::functional::linear(x[0], x[1], x[2])}; };
  // 2-D input: addmm, every placement.
  check_all_placements(OpCase("linear_2d", {Input::floats({8, 4}), Input::floats({12, 4}), Input::floats({12})}, linear),
                       /*max_combos=*/150);
  // 3-D input: matmul(...).add_(bias) in place, so the bias must fit the
  // product's placement: replicated bias (row-wise / data parallel) or a
  // column-wise weight with its bias sharded alike.
  OpCase linear_3d("linear_3d", {Input::floats({4, 8, 4}), Input::floats({12, 4}), Input::floats({12})}, linear);
  linear_3d.inputs[2].only = {{Replicate()}};
  check_all_placements(linear_3d, /*max_combos=*/75);
  OpCase colwise("linear_3d_colwise", {Input::floats({4, 8, 4}), Input::floats({12, 4}), Input::floats({12})}, linear);
  colwise.inputs[0].only = {{Replicate()}};
  colwise.inputs[1].only = {{Shard(0)}};
  colwise.inputs[2].only = {{Shard(0)}};
  check_all_placements(colwise);
  check_all_placements(binary("einsum_mm", {8, 4}, {4, 12}, [](const at::Tensor& a, const at::Tensor& b) {
    return torch::einsum("ij,jk->ik", {a, b});
  }));
  check_all_placements(binary("einsum_bmm", {4, 8, 4}, {4, 4, 8}, [](const at::Tensor& a, const at::Tensor& b) {
    return torch::einsum("bij,bjk->bik", {a, b});
  }));
  check_all_placements(binary("einsum_attention", {2, 4, 4, 8}, {2, 4, 4, 8}, [](const at::Tensor& q, const at::Tensor& k) {
    return torch::einsum("bhqd,bhkd->bhqk", {q, k});
  }), /*max_combos=*/120);
  check_all_placements(binary("einsum_outer", {8}, {4}, [](const at::Tensor& a, const at::Tensor& b) {
    return torch::einsum("i,j->ij", {a, b});
  }));
}

// Attention on [batch, heads, seq, head_dim], sharded on batch or heads (the
// math path of scaled dot-product attention: bmm, softmax, bmm).
TEST(MatrixOpsTest, ScaledDotProductAttentionOnBatchAndHeads) {
  for (bool causal : {false, true}) {
    OpCase sdpa(causal ? "sdpa_causal" : "sdpa",
                {Input::floats({4, 4, 8, 4}), Input::floats({4, 4, 8, 4}), Input::floats({4, 4, 8, 4})},
                [causal](const Tensors& x) {
                  return Tensors{compat::scaled_dot_product_attention(x[0], x[1], x[2], causal)};
                });
    for (auto& in : sdpa.inputs) in.only = {{Shard(0)}, {Shard(1)}, {Replicate()}};
    check_all_placements(sdpa, /*max_combos=*/27, /*samples_2d=*/6);
  }
}

// Uneven shards (torch.chunk sizes, some ranks empty): 6 over 4 is 2, 2, 2, 0.
// Whether this LibTorch runs `fn` on plain CPU tensors (_grouped_mm and a
// CPU float8 _scaled_mm are recent).
[[maybe_unused]] bool runs_on_cpu(const std::function<void()>& fn) {
  try {
    fn();
    return true;
  } catch (const c10::Error&) {
    return false;
  }
}

// _grouped_mm (Note [Scaled and grouped matrix products]) on 4 ranks: the
// output placements and collectives PyTorch 2.15 gives (LocalTensorMode,
// measured): 2-D x 3-D [8, 64] x [4, 64, 32] with offs: (R, S(2)) -> S(1)
// and (S(1), S(1)) -> P(sum), no collective; (S(0), R): a gathered, R.
// 3-D x 3-D [4, 8, 64] x [4, 64, 32]: (S(0), S(0)) -> S(0), (S(1), R) ->
// S(1), (S(2), S(1)) -> P(sum), none. b [4, 64, 8] (R, S(2)): 2 floats per
// rank break the 16-byte alignment, so b is gathered, R.
TEST(MatrixOpsTest, GroupedMmFollowsPyTorchsStrategies) {
#if !DTENSOR_TORCH_AT_LEAST(2, 11)
  GTEST_SKIP() << "LibTorch " << TORCH_VERSION << " has no _grouped_mm";
#else
  const auto gen = at::make_generator<at::CPUGeneratorImpl>(7);
  const at::Tensor a2 = at::randn({8, 64}, gen), a3 = at::randn({4, 8, 64}, gen), b3 = at::randn({4, 64, 32}, gen),
                   narrow = at::randn({4, 64, 8}, gen), offs = at::tensor({2, 4, 6, 8}, at::kInt);
  if (!runs_on_cpu([&] { at::_grouped_mm(a2, b3, offs); })) GTEST_SKIP() << "no CPU _grouped_mm in this LibTorch";
  struct Case {
    at::Tensor a, b;
    Placement pa, pb, out;
    Counts counts;
  };
  const std::vector<Case> cases = {
      {a2, b3, Replicate(), Shard(2), Shard(1), {}},
      {a2, b3, Shard(1), Shard(1), Partial(), {}},
      {a2, b3, Shard(0), Replicate(), Replicate(), {{"all_gather_into_tensor", 1}}},
      {a3, b3, Shard(0), Shard(0), Shard(0), {}},
      {a3, b3, Shard(1), Replicate(), Shard(1), {}},
      {a3, b3, Shard(2), Shard(1), Partial(), {}},
      {a2, narrow, Replicate(), Shard(2), Replicate(), {{"all_gather_into_tensor", 1}}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.pa.to_string() + " x " + c.pb.to_string() + " " + std::to_string(c.a.dim()) + "-D");
    const std::optional<at::Tensor> plain_offs = c.a.dim() == 2 ? std::optional<at::Tensor>(offs) : std::nullopt;
    const at::Tensor want = at::_grouped_mm(c.a, c.b, plain_offs);
    run_fake_world(4, [&](World& world) {
      auto mesh = DeviceMesh::init(c10::kCPU, {4});
      DTensor da = distribute_tensor(c.a, mesh, {c.pa}), db = distribute_tensor(c.b, mesh, {c.pb});
      std::optional<at::Tensor> d_offs;
      if (plain_offs) d_offs = distribute_tensor(offs, mesh, {Replicate()});
      CollectiveCounter counter(world);
      DTensor out = at::_grouped_mm(da, db, d_offs);
      EXPECT_EQ(counter.counts(), c.counts);
      EXPECT_EQ(out.placements(), Placements{c.out});
      EXPECT_TRUE(at::allclose(out.full_tensor(), want, 1e-4, 1e-4));
    });
  }
#endif
}

// _scaled_mm of float8 operands on 4 ranks, as PyTorch 2.15 (measured): a
// [16, 32] x b [32, 16] (column-major) with one-element scales: (S(0), R) ->
// S(0), (R, S(1)) -> S(1), (S(1), S(0)) -> P(sum); row-wise scales [16, 1]
// and [1, 16] follow a's S(0) (a Replicate scale_a is chunked for free). No
// collective in any case.
TEST(MatrixOpsTest, ScaledMmPlacesItsScalesAsPyTorch) {
#if !DTENSOR_TORCH_AT_LEAST(2, 11)
  GTEST_SKIP() << "LibTorch " << TORCH_VERSION << " has no float8 _scaled_mm";
#else
  const auto gen = at::make_generator<at::CPUGeneratorImpl>(8);
  const at::Tensor a = at::randn({16, 32}, gen).to(at::kFloat8_e4m3fn);
  const at::Tensor b = at::randn({16, 32}, gen).to(at::kFloat8_e4m3fn).t();
  const at::Tensor one = at::ones({}), rows = at::rand({16, 1}, gen) + 0.5, cols = at::rand({1, 16}, gen) + 0.5;
  if (!runs_on_cpu([&] { at::_scaled_mm(a, b, one, one, std::nullopt, std::nullopt, at::kFloat); })) {
    GTEST_SKIP() << "no CPU float8 _scaled_mm in this LibTorch";
  }
  struct Case {
    Placement pa, pb;
    at::Tensor sa, sb;
    Placement psa, out;
  };
  std::vector<Case> cases = {{Shard(0), Replicate(), one, one, Replicate(), Shard(0)},
                             {Replicate(), Shard(1), one, one, Replicate(), Shard(1)},
                             {Shard(1), Shard(0), one, one, Replicate(), Partial()}};
  // Row-wise scales on the CPU are newer than tensor-wise ones (2.11: "only
  // supports per-tensor scaling for CPU backend").
  if (runs_on_cpu([&] { at::_scaled_mm(a, b, rows, cols, std::nullopt, std::nullopt, at::kFloat); })) {
    cases.push_back({Shard(0), Replicate(), rows, cols, Shard(0), Shard(0)});
    cases.push_back({Shard(0), Replicate(), rows, cols, Replicate(), Shard(0)});
  }
  for (const Case& c : cases) {
    SCOPED_TRACE(c.pa.to_string() + " x " + c.pb.to_string() + " scale_a " + c.psa.to_string());
    const at::Tensor want = at::_scaled_mm(a, b, c.sa, c.sb, std::nullopt, std::nullopt, at::kFloat);
    run_fake_world(4, [&](World& world) {
      auto mesh = DeviceMesh::init(c10::kCPU, {4});
      DTensor da = distribute_tensor(a, mesh, {c.pa}), db = distribute_tensor(b, mesh, {c.pb});
      DTensor dsa = distribute_tensor(c.sa, mesh, {c.psa}), dsb = distribute_tensor(c.sb, mesh, {Replicate()});
      CollectiveCounter counter(world);
      DTensor out = at::_scaled_mm(da, db, dsa, dsb, std::nullopt, std::nullopt, at::kFloat);
      EXPECT_EQ(counter.counts(), Counts{});
      EXPECT_EQ(out.placements(), Placements{c.out});
      EXPECT_TRUE(at::allclose(out.full_tensor(), want, 1e-3, 1e-3));
    });
  }
#endif
}

TEST(MatrixOpsTest, UnevenShards) {
  check_all_placements(binary("mm_uneven", {6, 5}, {5, 7}, [](const at::Tensor& a, const at::Tensor& b) { return a.mm(b); }));
  check_all_placements(binary("dot_uneven", {6}, {6}, [](const at::Tensor& a, const at::Tensor& b) { return a.dot(b); }));
  check_all_placements(binary("mv_uneven", {6, 5}, {5}, [](const at::Tensor& a, const at::Tensor& b) { return a.mv(b); }));
  check_all_placements(binary("bmm_uneven", {3, 6, 5}, {3, 5, 2}, [](const at::Tensor& a, const at::Tensor& b) { return a.bmm(b); }));
}

}  // namespace
}  // namespace dtensor::testing
