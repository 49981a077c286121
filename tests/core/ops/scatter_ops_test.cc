// Op-by-op checks of the scatter, indexing and padding rules
// (core/ops/scatter_rules.cc, core/ops/index_rules.cc): every placement of
// every input equals the single-device run; dims other than the written,
// indexed or padded one shard with no communication.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "backends/fake/fake_world.h"
#include "core/dispatch/dispatch_mode.h"
#include "testing/error_of.h"
#include "tests/core/ops/op_harness.h"
#include "tests/core/test_util.h"

namespace dtensor::testing {
namespace {

// Values only: LibTorch's backward of the scatters with respect to self
// scatters into plain zeros (at::zeros of src's size), which a DTensor call
// refuses outside an ImplicitReplicationGuard, as PyTorch's DTensor refuses
// the mixed call (ScatterBackwardNeedsImplicitReplication).
TEST(ScatterOpsTest, Scatters) {
  check_all_placements(OpCase("slice_scatter", {Input::floats({6, 4}), Input::floats({2, 4})}, [](const Tensors& t) {
    return Tensors{at::slice_scatter(t[0], t[1], 0, 1, 5, 2)};
  }).no_grads());
  check_all_placements(OpCase("select_scatter", {Input::floats({4, 6}), Input::floats({4})}, [](const Tensors& t) {
    return Tensors{at::select_scatter(t[0], t[1], 1, 2)};
  }).no_grads());
  check_all_placements(OpCase("diagonal_scatter", {Input::floats({4, 4, 3}), Input::floats({3, 4})},
                              [](const Tensors& t) { return Tensors{at::diagonal_scatter(t[0], t[1], 0, 0, 1)}; })
                           .no_grads());
}

TEST(ScatterOpsTest, ScatterBackwardNeedsImplicitReplication) {
  const at::Tensor gx = at::arange(24, at::kDouble).reshape({6, 4}), gsrc = at::ones({2, 4}, at::kDouble);
  at::Tensor x1 = gx.clone().requires_grad_(true), src1 = gsrc.clone().requires_grad_(true);
  at::slice_scatter(x1, src1, 0, 1, 5, 2).pow(2).sum().backward();
  run_fake_world(2, [&](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    DTensor x = distribute_tensor(gx, mesh, {Shard(1)}), src = distribute_tensor(gsrc, mesh, {Shard(1)});
    x.requires_grad_(true);
    src.requires_grad_(true);
    at::Tensor loss = at::slice_scatter(x, src, 0, 1, 5, 2).pow(2).sum();
    const std::string error = error_of([&] { loss.backward({}, /*retain_graph=*/true); });
    EXPECT_NE(error.find("aten::slice_scatter: argument 1 is a plain tensor"), std::string::npos) << error;
    EXPECT_NE(error.find("ImplicitReplicationGuard"), std::string::npos) << error;
    x.mutable_grad() = at::Tensor();
    src.mutable_grad() = at::Tensor();
    {
      ImplicitReplicationGuard replicate_plain_zeros;
      loss.backward();
    }
    EXPECT_TRUE(at::allclose(DTensor(x.grad()).full_tensor(), x1.grad()));
    EXPECT_TRUE(at::allclose(DTensor(src.grad()).full_tensor(), src1.grad()));
  });
}

TEST(ScatterOpsTest, IndexFillAndReduce) {
  check_all_placements(OpCase("index_fill", {Input::floats({4, 6}), Input::indices({3}, 6)}, [](const Tensors& t) {
    return Tensors{t[0].index_fill(1, t[1], 0.5)};
  }));
  check_all_placements(OpCase("index_reduce", {Input::floats({4, 6}), Input::indices({5}, 6), Input::floats({4, 5})},
                              [](const Tensors& t) {
                                return Tensors{t[0].index_reduce(1, t[1], t[2], "amax", /*include_self=*/true)};
                              })
                           .no_grads());
}

TEST(ScatterOpsTest, AdvancedIndexing) {
  // x[idx], x[:, idx], x[idx0, :, idx1] (non-adjacent: index dims go first).
  check_all_placements(OpCase("index_rows", {Input::floats({6, 4}), Input::indices({3}, 6)}, [](const Tensors& t) {
    return Tensors{at::index(t[0], {t[1]})};
  }));
  check_all_placements(OpCase("index_cols", {Input::floats({4, 6}), Input::indices({2, 3}, 6)}, [](const Tensors& t) {
    return Tensors{at::index(t[0], {c10::nullopt, t[1]})};
  }));
  check_all_placements(OpCase("index_apart", {Input::floats({4, 3, 5}), Input::indices({4}, 4), Input::indices({4}, 5)},
                              [](const Tensors& t) { return Tensors{at::index(t[0], {t[1], c10::nullopt, t[2]})}; }),
                       /*max_combos=*/80, /*samples_2d=*/8);
}

TEST(ScatterOpsTest, IndexPut) {
  check_all_placements(OpCase("index_put", {Input::floats({6, 4}), Input::indices({3}, 6), Input::floats({3, 4})},
                              [](const Tensors& t) {
                                return Tensors{at::index_put(t[0], {t[1]}, t[2], /*accumulate=*/true)};
                              }),
                       /*max_combos=*/80, /*samples_2d=*/8);
  check_all_placements(OpCase("index_put_broadcast", {Input::floats({4, 6}), Input::indices({2}, 6), Input::floats({4, 1})},
                              [](const Tensors& t) {
                                return Tensors{at::index_put(t[0], {c10::nullopt, t[1]}, t[2], /*accumulate=*/true)};
                              }),
                       /*max_combos=*/80, /*samples_2d=*/8);
}

// An in-place index_put_ whose self is split into more pieces than it has
// columns (2 over 4 ranks) fails PyTorch's is_tensor_shardable on every
// plan; it cannot move what it writes, so it runs where self is (Note
// [Whole-mesh plan checks]), equal to one device.
TEST(ScatterOpsTest, InPlaceIndexPutOnATinyShardRunsWhereItIs) {
  const at::Tensor gx = seeded_randn({4, 2}, 1), gv = seeded_randn({2, 2}, 2);
  const at::Tensor idx = at::tensor({0, 3}, at::kLong);
  at::Tensor want = gx.clone();
  want.index_put_({idx}, gv, /*accumulate=*/true);
  run_fake_world(4, [&](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {4});
    DTensor x = distribute_tensor(gx, mesh, {Shard(1)});
    x.index_put_({distribute_tensor(idx, mesh, {Replicate()})}, distribute_tensor(gv, mesh, {Shard(1)}), true);
    EXPECT_EQ(x.placements(), Placements{Shard(1)});
    EXPECT_TRUE(at::allclose(x.full_tensor(), want));
  });
}

TEST(ScatterOpsTest, IndexingShardsOtherDimsAndIndicesWithoutComm) {
  OpCase cols("index_cols", {Input::floats({4, 6}), Input::indices({2, 3}, 6)},
              [](const Tensors& t) { return Tensors{at::index(t[0], {c10::nullopt, t[1]})}; });
  CommCounts rows = comm_counts(cols, {4}, {{Shard(0)}, {Replicate()}});  // rows of x: not indexed
  EXPECT_EQ(rows.forward, Counts{});
  EXPECT_EQ(rows.outputs, std::vector<Placements>{{Shard(0)}});
  CommCounts positions = comm_counts(cols, {2}, {{Replicate()}, {Shard(0)}});  // each rank its positions
  EXPECT_EQ(positions.forward, Counts{});
  EXPECT_EQ(positions.outputs, std::vector<Placements>{{Shard(1)}});
}

TEST(ScatterOpsTest, ConstantPad) {
  check_all_placements(OpCase("pad_last", {Input::floats({4, 6})}, [](const Tensors& t) {
    return Tensors{at::constant_pad_nd(t[0], {1, 2}, 0.25)};
  }));
  check_all_placements(OpCase("pad_zero", {Input::floats({4, 6})}, [](const Tensors& t) {
    return Tensors{at::constant_pad_nd(t[0], {0, 0, 1, 0}, 0)};
  }));
}

TEST(ScatterOpsTest, OtherDimsShardWithoutComm) {
  OpCase pad("pad_last", {Input::floats({4, 6})}, [](const Tensors& t) { return Tensors{at::constant_pad_nd(t[0], {1, 2}, 0.25)}; });
  CommCounts rows = comm_counts(pad, {4}, {{Shard(0)}});
  EXPECT_EQ(rows.forward, Counts{});
  EXPECT_EQ(rows.outputs, std::vector<Placements>{{Shard(0)}});
  // A Partial(sum) padded with a non-zero value is all_reduced first (as in
  // PyTorch 2.15, no input is sharded, so no shard is offered); padded with 0
  // it stays Partial.
  EXPECT_EQ(comm_counts(pad, {4}, {{Partial()}}).forward, (Counts{{"all_reduce", 1}}));
  OpCase zero("pad_zero", {Input::floats({4, 6})}, [](const Tensors& t) { return Tensors{at::constant_pad_nd(t[0], {1, 2}, 0)}; });
  CommCounts partial = comm_counts(zero, {4}, {{Partial()}});
  EXPECT_EQ(partial.forward, Counts{});
  EXPECT_EQ(partial.outputs, std::vector<Placements>{{Partial()}});
  OpCase scatter("slice_scatter", {Input::floats({6, 4}), Input::floats({2, 4})},
                 [](const Tensors& t) { return Tensors{at::slice_scatter(t[0], t[1], 0, 1, 5, 2)}; });
  OpCase scatter_values = scatter;
  scatter_values.no_grads();
  CommCounts cols = comm_counts(scatter_values, {4}, {{Shard(1)}, {Shard(1)}});
  EXPECT_EQ(cols.forward, Counts{});
  EXPECT_EQ(cols.outputs, std::vector<Placements>{{Shard(1)}});
}

}  // namespace
}  // namespace dtensor::testing
