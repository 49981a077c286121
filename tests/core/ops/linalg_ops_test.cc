// Op-by-op checks of the batched linear algebra rules (core/ops/linalg_rules.cc)
// and the reductions added with them (all/any, nansum, median): every
// placement of every input equals the single-device run; batch dims shard
// with no communication and solves keep a Partial right-hand side.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "tests/core/ops/op_harness.h"

namespace dtensor::testing {
namespace {

// A well-conditioned batch of matrices: x + 4 I.
at::Tensor well_conditioned(const at::Tensor& x) { return x + 4 * at::eye(x.size(-1), x.options()); }

TEST(LinalgOpsTest, FactorizationsAndInverses) {
  auto batch = Input::floats({4, 3, 3}).with(well_conditioned);
  check_all_placements(OpCase("inv", {batch}, [](const Tensors& t) { return Tensors{at::linalg_inv(t[0])}; }));
  check_all_placements(OpCase("det", {batch}, [](const Tensors& t) { return Tensors{at::linalg_det(t[0])}; }));
  check_all_placements(OpCase("slogdet", {batch}, [](const Tensors& t) {
    return Tensors{std::get<1>(at::linalg_slogdet(t[0]))};
  }));
  // Values only: LibTorch's backward of matrix_exp copies into plain zeros
  // (at::zeros of a block matrix), which a DTensor call refuses outside an
  // ImplicitReplicationGuard, as PyTorch's DTensor refuses the mixed call.
  check_all_placements(OpCase("matrix_exp", {Input::floats({4, 3, 3})}, [](const Tensors& t) {
    return Tensors{at::linalg_matrix_exp(t[0])};
  }).no_grads());
  auto positive_definite = Input::floats({4, 3, 3}).with([](const at::Tensor& x) {
    return x.matmul(x.transpose(-2, -1)) + 3 * at::eye(3, x.options());
  });
  check_all_placements(OpCase("cholesky", {positive_definite}, [](const Tensors& t) {
    return Tensors{at::linalg_cholesky(t[0])};
  }));
  check_all_placements(OpCase("lu_factor", {batch}, [](const Tensors& t) {
    return Tensors{std::get<0>(at::linalg_lu_factor(t[0]))};
  }).no_grads());
}

TEST(LinalgOpsTest, Solves) {
  auto a = Input::floats({4, 3, 3}).with(well_conditioned);
  check_all_placements(OpCase("solve", {a, Input::floats({4, 3, 2})},
                              [](const Tensors& t) { return Tensors{at::linalg_solve(t[0], t[1])}; }),
                       /*max_combos=*/80, /*samples_2d=*/8);
  check_all_placements(OpCase("solve_triangular", {a, Input::floats({4, 3, 2})},
                              [](const Tensors& t) {
                                return Tensors{at::linalg_solve_triangular(t[0], t[1], /*upper=*/true)};
                              }),
                       /*max_combos=*/80, /*samples_2d=*/8);
}

TEST(LinalgOpsTest, BatchDimsShardWithoutCommAndSolvesKeepPartial) {
  OpCase inv_ex("inv_ex", {Input::floats({4, 3, 3}).with(well_conditioned)},
                [](const Tensors& t) { return Tensors{std::get<0>(at::linalg_inv_ex(t[0]))}; });
  CommCounts batch = comm_counts(inv_ex, {4}, {{Shard(0)}});
  EXPECT_EQ(batch.forward, Counts{});
  EXPECT_EQ(batch.outputs, std::vector<Placements>{{Shard(0)}});
  // A (small) matrix dim sharded is gathered.
  EXPECT_EQ(comm_counts(inv_ex, {4}, {{Shard(2)}}).forward, (Counts{{"all_gather_into_tensor", 1}}));
  // linalg_inv also checks the per-matrix error codes, replicated as in
  // PyTorch 2.15 (so that every rank raises the same error): one all_gather
  // of 4 ints.
  OpCase inv("inv", {Input::floats({4, 3, 3}).with(well_conditioned)},
             [](const Tensors& t) { return Tensors{at::linalg_inv(t[0])}; });
  EXPECT_EQ(comm_counts(inv, {4}, {{Shard(0)}}).forward, (Counts{{"all_gather_into_tensor", 1}}));
  OpCase tri("solve_triangular", {Input::floats({3, 3}).with(well_conditioned), Input::floats({3, 2})},
             [](const Tensors& t) { return Tensors{at::linalg_solve_triangular(t[0], t[1], true)}; });
  CommCounts partial = comm_counts(tri, {4}, {{Replicate()}, {Partial()}});
  EXPECT_EQ(partial.forward, Counts{});
  EXPECT_EQ(partial.outputs, std::vector<Placements>{{Partial()}});
}

TEST(LinalgOpsTest, ReplicatedDecompositions) {
  // PyTorch 2.15 replicates these: values still equal one device.
  check_all_placements(OpCase("svdvals", {Input::floats({4, 4, 3})}, [](const Tensors& t) {
    return Tensors{at::linalg_svdvals(t[0])};
  }));
  check_all_placements(OpCase("qr_r", {Input::floats({4, 4, 3})}, [](const Tensors& t) {
    return Tensors{std::get<1>(at::linalg_qr(t[0])).abs()};
  }));
  check_all_placements(OpCase("diag_embed", {Input::floats({4, 3})}, [](const Tensors& t) {
    return Tensors{at::diag_embed(t[0])};
  }));
}

TEST(LinalgOpsTest, CrossProduct) {
  check_all_placements(OpCase("cross", {Input::floats({4, 3}), Input::floats({4, 3})},
                              [](const Tensors& t) { return Tensors{at::linalg_cross(t[0], t[1])}; }));
}

TEST(ReductionOpsTest, BucketizeAndHistc) {
  auto boundaries = Input::floats({5}).no_grad().no_partial().with([](const at::Tensor& b) { return std::get<0>(b.sort()); });
  check_all_placements(OpCase("bucketize", {Input::floats({4, 6}).no_grad(), boundaries}, [](const Tensors& t) {
    return Tensors{at::bucketize(t[0], t[1])};
  }).no_grads());
  check_all_placements(OpCase("histc", {Input::floats({4, 6}).no_grad()}, [](const Tensors& t) {
    return Tensors{at::histc(t[0], 4, -0.5, 0.5)};
  }).no_grads());
  check_all_placements(OpCase("histc_auto_range", {Input::floats({4, 6}).no_grad()}, [](const Tensors& t) {
    return Tensors{at::histc(t[0], 4)};
  }).no_grads());
  // A given range: each shard's histogram is a partial count, no comm.
  OpCase histc("histc", {Input::floats({8, 6}).no_grad()}, [](const Tensors& t) { return Tensors{at::histc(t[0], 4, -0.5, 0.5)}; });
  CommCounts c = comm_counts(histc.no_grads(), {4}, {{Shard(0)}});
  EXPECT_EQ(c.forward, Counts{});
  EXPECT_EQ(c.outputs, std::vector<Placements>{{Partial()}});
}

TEST(ReductionOpsTest, AllAnyNansumMedian) {
  auto x = Input::floats({4, 6});
  check_all_placements(OpCase("any_dim", {x}, [](const Tensors& t) { return Tensors{t[0].gt(0.2).any(1)}; }).no_grads());
  check_all_placements(OpCase("all", {x}, [](const Tensors& t) { return Tensors{t[0].gt(-0.45).all()}; }).no_grads());
  check_all_placements(OpCase("nansum", {x}, [](const Tensors& t) { return Tensors{at::nansum(t[0], {0})}; }));
  check_all_placements(OpCase("median", {x}, [](const Tensors& t) { return Tensors{t[0].median()}; }));
  // all/any are not linear: a reduced shard is gathered, not made Partial.
  OpCase any("any", {Input::floats({8, 4}).no_grad()}, [](const Tensors& t) { return Tensors{t[0].gt(0).any(0)}; });
  CommCounts c = comm_counts(any, {4}, {{Shard(0)}});
  EXPECT_EQ(c.outputs, std::vector<Placements>{{Replicate()}});
}

}  // namespace
}  // namespace dtensor::testing
