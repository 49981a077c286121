// Collectives per op for the layouts PyTorch DTensor's own tests pin down:
// the same counts (and output placements) here, on a 1-D mesh of 4.
#include <gtest/gtest.h>
#include <torch/utils.h>

#include "core/compat/torch_compat.h"
#include "tests/core/ops/op_harness.h"

namespace dtensor::testing {
namespace {

const Counts kNone{};
const Counts kOneAllGather{{"all_gather_into_tensor", 1}};
const Placements S0{Shard(0)}, S1{Shard(1)}, S2{Shard(2)}, R{Replicate()}, P{Partial()};

TEST(CommCountsTest, AddmmFollowsTheMatmulPattern) {
  OpCase addmm("addmm", {Input::floats({12}), Input::floats({8, 4}), Input::floats({4, 12})},
               [](const Tensors& x) { return Tensors{torch::addmm(x[0], x[1], x[2])}; });
  CommCounts row = comm_counts(addmm, {4}, {R, S0, R});
  EXPECT_EQ(row.forward, kNone);
  EXPECT_EQ(row.outputs, (std::vector<Placements>{S0}));
  CommCounts col = comm_counts(addmm, {4}, {S0, R, S1});
  EXPECT_EQ(col.forward, kNone);
  EXPECT_EQ(col.outputs, (std::vector<Placements>{S1}));
  OpCase mm("mm", {Input::floats({8, 4}), Input::floats({4, 12})}, [](const Tensors& x) { return Tensors{x[0].mm(x[1])}; });
  CommCounts contraction = comm_counts(mm, {4}, {S1, S0});
  EXPECT_EQ(contraction.forward, kNone);
  EXPECT_EQ(contraction.outputs, (std::vector<Placements>{P}));
}

TEST(CommCountsTest, SoftmaxGathersOnlyItsOwnDim) {
  OpCase softmax("softmax", {Input::floats({8, 12})}, [](const Tensors& x) { return Tensors{x[0].softmax(1)}; });
  CommCounts other = comm_counts(softmax, {4}, {S0});
  EXPECT_EQ(other.forward, kNone);
  EXPECT_EQ(other.backward, kNone);
  EXPECT_EQ(other.outputs, (std::vector<Placements>{S0}));
  CommCounts own = comm_counts(softmax, {4}, {S1});
  EXPECT_EQ(own.forward, kOneAllGather);
  EXPECT_EQ(own.outputs, (std::vector<Placements>{R}));
}

TEST(CommCountsTest, LayerNormOnAnOuterDimIsFree) {
  OpCase ln("layer_norm", {Input::floats({4, 8, 8}), Input::floats({8}), Input::floats({8})},
            [](const Tensors& x) { return Tensors{torch::layer_norm(x[0], {8}, x[1], x[2])}; });
  for (const Placements& x : {S0, S1}) {
    CommCounts c = comm_counts(ln, {4}, {x, R, R});
    EXPECT_EQ(c.forward, kNone) << to_string(x);
    EXPECT_EQ(c.backward, kNone) << to_string(x);  // weight / bias gradients stay Partial
    EXPECT_EQ(c.outputs, (std::vector<Placements>{x}));
  }
}

// native_layer_norm_backward with row-sharded mean and rstd ([4, 1] S(0)):
// the rows shard however grad_out and input are laid out, as PyTorch 2.15
// (run on these layouts: nothing for replicated ones, one all_to_all each
// for S(1) ones); gathering the statistics instead cost two all_gathers.
TEST(CommCountsTest, LayerNormBackwardFollowsRowShardedStatistics) {
  OpCase lnb("native_layer_norm_backward",
             {Input::floats({4, 6}), Input::floats({4, 6}), Input::floats({4, 1}),
              Input::floats({4, 1}).with([](const at::Tensor& v) { return v.abs() + 0.5; }), Input::floats({6}),
              Input::floats({6})},
             [](const Tensors& x) {
               auto [grad_input, grad_weight, grad_bias] =
                   at::native_layer_norm_backward(x[0], x[1], {6}, x[2], x[3], x[4], x[5], {true, true, true});
               return Tensors{grad_input, grad_weight, grad_bias};
             });
  lnb.no_grads();
  CommCounts replicated = comm_counts(lnb, {4}, {R, R, S0, S0, R, R});
  EXPECT_EQ(replicated.forward, kNone);
  EXPECT_EQ(replicated.outputs, (std::vector<Placements>{S0, P, P}));
  CommCounts columns = comm_counts(lnb, {4}, {S1, S1, S0, S0, R, R});
  EXPECT_EQ(columns.forward, (Counts{{"all_to_all_single", 2}}));
  EXPECT_EQ(columns.outputs, (std::vector<Placements>{S0, P, P}));
  for (const std::vector<Placements>& layout :
       {std::vector<Placements>{R, R, S0, S0, R, R}, std::vector<Placements>{S1, S1, S0, S0, R, R}}) {
    check_placements(lnb, {4}, layout, /*seed=*/3);
  }
}

// copy_ between tensors split alike along a dim of size 1 (one rank holds
// it, the others are empty) is local: the dim is not a broadcast one. This
// is AccumulateGrad's copy of a [3, 1] S(1) gradient (PyTorch 2.15: nothing;
// we gathered src, one all_gather per parameter).
TEST(CommCountsTest, CopyAlongAnAlikeSplitDimOfSizeOneIsLocal) {
  OpCase copy("copy_", {Input::floats({3, 1}), Input::floats({3, 1})}, [](const Tensors& x) {
    at::Tensor y = x[0].clone();
    y.copy_(x[1]);
    return Tensors{y};
  });
  copy.no_grads();
  CommCounts c = comm_counts(copy, {4}, {S1, S1});
  EXPECT_EQ(c.forward, kNone);
  EXPECT_EQ(c.outputs, (std::vector<Placements>{S1}));
  check_placements(copy, {4}, {S1, S1}, /*seed=*/5);
}

TEST(CommCountsTest, ColumnWiseEmbeddingIsFreeBothWays) {
  OpCase emb("embedding", {Input::floats({16, 8}), Input::indices({4, 8}, 16)},
             [](const Tensors& x) { return Tensors{torch::embedding(x[0], x[1])}; });
  CommCounts col = comm_counts(emb, {4}, {S1, R});
  EXPECT_EQ(col.forward, kNone);
  EXPECT_EQ(col.backward, kNone);
  EXPECT_EQ(col.outputs, (std::vector<Placements>{S2}));
  // Row-wise: masked partial lookups, reduced when consumed (one all_reduce).
  CommCounts row = comm_counts(emb, {4}, {S0, R});
  EXPECT_EQ(row.forward, kNone);
  EXPECT_EQ(row.outputs, (std::vector<Placements>{P}));
}

TEST(CommCountsTest, CrossEntropyOnANonClassDimIsFree) {
  for (int64_t reduction : {0, 1, 2}) {
    OpCase ce("cross_entropy", {Input::floats({8, 12}), Input::indices({8}, 12)},
              [reduction](const Tensors& x) { return Tensors{at::cross_entropy_loss(x[0], x[1], {}, reduction)}; });
    CommCounts batch = comm_counts(ce, {4}, {S0, R});
    EXPECT_EQ(batch.forward, kNone) << reduction;
    EXPECT_EQ(batch.outputs, (std::vector<Placements>{reduction == 0 ? S0 : P})) << reduction;
    CommCounts classes = comm_counts(ce, {4}, {S1, R});
    EXPECT_EQ(classes.forward, kOneAllGather) << reduction;
    EXPECT_EQ(classes.outputs, (std::vector<Placements>{R})) << reduction;
  }
}

TEST(CommCountsTest, TopkOverTheShardedDimIsOneAllGather) {
  OpCase topk("topk", {Input::floats({8, 12})}, [](const Tensors& x) {
    auto r = x[0].topk(3, 1);
    return Tensors{std::get<0>(r), std::get<1>(r)};
  });
  EXPECT_EQ(comm_counts(topk, {4}, {S1}).forward, kOneAllGather);
  CommCounts other = comm_counts(topk, {4}, {S0});
  EXPECT_EQ(other.forward, kNone);
  EXPECT_EQ(other.backward, kNone);
  EXPECT_EQ(other.outputs, (std::vector<Placements>{S0, S0}));
}

TEST(CommCountsTest, AttentionShardedOnBatchOrHeadsIsFree) {
  for (const Placements& p : {S0, S1}) {
    OpCase sdpa("sdpa", {Input::floats({4, 4, 8, 4}), Input::floats({4, 4, 8, 4}), Input::floats({4, 4, 8, 4})},
                [](const Tensors& x) {
                  return Tensors{compat::scaled_dot_product_attention(x[0], x[1], x[2], /*is_causal=*/true)};
                });
    CommCounts c = comm_counts(sdpa, {4}, {p, p, p});
    EXPECT_EQ(c.forward, kNone) << to_string(p);
    EXPECT_EQ(c.outputs, (std::vector<Placements>{p}));
    // The backward itself is free too, but key's gradient arrives transposed
    // and AccumulateGrad re-lays it out through new_empty_strided, whose rule
    // replicates (known_issues_test: an all_gather); so it is not checked here.
  }
}

TEST(CommCountsTest, RowWiseEmbeddingReducesOnceWhenConsumed) {
  OpCase emb("embedding_then_tanh", {Input::floats({16, 8}), Input::indices({4, 8}, 16)},
             [](const Tensors& x) { return Tensors{torch::embedding(x[0], x[1]).tanh()}; });
  CommCounts c = comm_counts(emb, {4}, {S0, R});
  EXPECT_EQ(c.forward, (Counts{{"all_reduce", 1}}));
  EXPECT_EQ(c.outputs, (std::vector<Placements>{R}));
}

TEST(CommCountsTest, NormOverAShardIsOneAllReduce) {
  OpCase norm("norm", {Input::floats({8, 12})}, [](const Tensors& x) { return Tensors{x[0].norm(2, {1})}; });
  CommCounts c = comm_counts(norm, {4}, {S1});
  EXPECT_EQ(c.forward, (Counts{{"all_reduce", 1}}));
  EXPECT_EQ(c.backward, kNone);
  OpCase inf("norm_inf", {Input::floats({8, 12})}, [](const Tensors& x) {
    return Tensors{torch::linalg_vector_norm(x[0], INFINITY, c10::IntArrayRef{1}, false, c10::nullopt)};
  });
  CommCounts i = comm_counts(inf, {4}, {S1});
  EXPECT_EQ(i.forward, kNone);
  EXPECT_EQ(i.outputs, (std::vector<Placements>{Placements{Partial(ReduceOp::kMax)}}));
}

// Issue #18's differential test against PyTorch 2.11: the cases it found
// where we issued more collectives than PyTorch, reduced to one op each.
const Placements Pavg{Partial(ReduceOp::kAvg)}, Pmax{Partial(ReduceOp::kMax)};

TEST(CommCountsTest, MatrixProductsKeepAPartialAvgOperand) {
  OpCase mm("mm", {Input::floats({8, 4}), Input::floats({4, 12})}, [](const Tensors& x) { return Tensors{x[0].mm(x[1])}; });
  for (const auto& [a, b] : {std::pair{Pavg, R}, std::pair{R, Pavg}}) {
    CommCounts c = comm_counts(mm, {4}, {a, b});
    EXPECT_EQ(c.forward, kNone) << to_string(a) << " " << to_string(b);
    EXPECT_EQ(c.outputs, (std::vector<Placements>{Pavg}));
  }
  OpCase addmm("addmm", {Input::floats({12}), Input::floats({8, 4}), Input::floats({4, 12})},
               [](const Tensors& x) { return Tensors{torch::addmm(x[0], x[1], x[2])}; });
  CommCounts bias = comm_counts(addmm, {4}, {Pavg, R, R});
  EXPECT_EQ(bias.forward, kNone);
  EXPECT_EQ(bias.outputs, (std::vector<Placements>{Pavg}));
}

TEST(CommCountsTest, WholeMeshCheckOfNestedShardsOnA3DMesh) {
  // bmm of [P, P, R] by [P(avg), S(1), S(1)] on 2x2x2: nine candidates per
  // mesh dim (729 combinations); PyTorch: one all_reduce, one reduce_scatter.
  OpCase bmm("bmm", {Input::floats({6, 3, 5}).no_grad(), Input::floats({6, 5, 3}).no_grad()},
             [](const Tensors& x) { return Tensors{x[0].bmm(x[1])}; });
  CommCounts c = comm_counts(bmm, {2, 2, 2}, {Placements{P[0], P[0], R[0]}, Placements{Pavg[0], S1[0], S1[0]}});
  EXPECT_EQ(c.forward, (Counts{{"all_reduce", 1}, {"reduce_scatter_tensor", 1}}));
  EXPECT_EQ(c.outputs, (std::vector<Placements>{Placements{P[0], P[0], P[0]}}));
}

TEST(CommCountsTest, SiluBackwardReducesAPartialInputOnce) {
  OpCase silu("silu", {Input::floats({8})}, [](const Tensors& x) { return Tensors{torch::silu(x[0])}; });
  CommCounts c = comm_counts(silu, {4}, {P});
  EXPECT_EQ(c.forward, (Counts{{"all_reduce", 1}}));
  EXPECT_EQ(c.backward, (Counts{{"all_reduce", 1}}));  // the composite reduced it twice
}

TEST(CommCountsTest, MseLossBackwardKeepsPartialInputs) {
  OpCase mse("mse_loss", {Input::floats({4, 6}), Input::floats({4, 6})},
             [](const Tensors& x) { return Tensors{torch::mse_loss(x[0], x[1])}; });
  CommCounts c = comm_counts(mse, {4}, {P, P});
  EXPECT_EQ(c.backward, kNone);
}

TEST(CommCountsTest, SliceOfAWholeShardedDimKeepsTheShard) {
  OpCase whole("slice_whole", {Input::floats({8, 4})}, [](const Tensors& x) { return Tensors{x[0].narrow(0, 0, 8)}; });
  CommCounts c = comm_counts(whole, {4}, {S0});
  EXPECT_EQ(c.forward, kNone);
  EXPECT_EQ(c.outputs, (std::vector<Placements>{S0}));
  OpCase part("slice_part", {Input::floats({8, 4})}, [](const Tensors& x) { return Tensors{x[0].narrow(0, 0, 4)}; });
  EXPECT_EQ(comm_counts(part, {4}, {S0}).forward, kOneAllGather);
}

TEST(CommCountsTest, CatJoinsAReplicateInputIntoAPartialMax) {
  OpCase cat("cat", {Input::floats({2, 3}).no_grad(), Input::floats({2, 3}).no_grad()},
             [](const Tensors& x) { return Tensors{torch::cat({x[0], x[1]}, 1)}; });
  CommCounts c = comm_counts(cat, {4}, {R, Pmax});
  EXPECT_EQ(c.forward, kNone);
  EXPECT_EQ(c.outputs, (std::vector<Placements>{Pmax}));
}

TEST(CommCountsTest, ProdOverAShardIsPartialProduct) {
  OpCase prod("prod", {Input::floats({8, 4}).no_grad()}, [](const Tensors& x) { return Tensors{x[0].prod(0)}; });
  CommCounts c = comm_counts(prod, {4}, {S0});
  EXPECT_EQ(c.forward, kNone);
  EXPECT_EQ(c.outputs, (std::vector<Placements>{Placements{Partial(ReduceOp::kProduct)}}));
}

TEST(CommCountsTest, MatmulReducesATinyPartialOperandOnce) {
  // mm of [8, 3] by a P(min) [3, 2] on 4 ranks: 3 rows cannot be
  // reduce_scattered over 4 (PyTorch: is_tensor_shardable), one all_reduce.
  OpCase mm("mm", {Input::floats({8, 3}).no_grad(), Input::floats({3, 2}).no_grad()},
            [](const Tensors& x) { return Tensors{x[0].mm(x[1])}; });
  CommCounts c = comm_counts(mm, {4}, {R, Placements{Partial(ReduceOp::kMin)}});
  EXPECT_EQ(c.forward, (Counts{{"all_reduce", 1}}));
  EXPECT_EQ(c.outputs, (std::vector<Placements>{R}));
}

TEST(CommCountsTest, ExtremumOfAMismatchedPartialKeepsItsShardAsPartial) {
  // amin over dim 0 of [P(sum), S(0)] on 2x2 (g18_01204): like PyTorch 2.15,
  // the P(sum) is reduced and the S(0) becomes P(min), no gather (2.11
  // gathered it; Note [An extremum of a Partial it cannot keep]). The
  // backward reduces the P(min) result again: 3 all_reduces, PyTorch 2.15
  // issues 4 in g18_01204's backward.
  OpCase amin("amin", {Input::floats({4})}, [](const Tensors& x) { return Tensors{x[0].amin({0})}; });
  CommCounts c = comm_counts(amin, {2, 2}, {Placements{P[0], S0[0]}});
  EXPECT_EQ(c.forward, (Counts{{"all_reduce", 1}}));
  EXPECT_EQ(c.outputs, (std::vector<Placements>{Placements{R[0], Partial(ReduceOp::kMin)}}));
  EXPECT_EQ(c.backward, (Counts{{"all_reduce", 3}}));
}

TEST(CommCountsTest, MatmulOfUnshardedOperandsAllReducesAPartialMax) {
  // matmul of a P(max) [6, 2, 2] by a Replicate [2, 4] (g18_01431): no input
  // is sharded, so like PyTorch the folded mm all_reduces; a reduce_scatter
  // onto rows would be gathered again by the unfold view.
  OpCase matmul("matmul", {Input::floats({6, 2, 2}).no_grad(), Input::floats({2, 4}).no_grad()},
                [](const Tensors& x) { return Tensors{x[0].matmul(x[1])}; });
  CommCounts c = comm_counts(matmul, {4}, {Pmax, R});
  EXPECT_EQ(c.forward, (Counts{{"all_reduce", 1}}));
  EXPECT_EQ(c.outputs, (std::vector<Placements>{R}));
}

TEST(CommCountsTest, WholeMeshTieKeepsOutputsCheapToGather) {
  // hypot of [R, S(1)] and [S(1), P(avg)] [1, 6, 3] on 2x2 (g18_01561):
  // [S(1), S(1)] and [R, S(1)] both cost an all_gather and a reduce_scatter;
  // the output sharded on one mesh dim is gathered once later, like PyTorch's.
  OpCase hypot("hypot", {Input::floats({1, 6, 3}).no_grad(), Input::floats({1, 6, 3}).no_grad()},
               [](const Tensors& x) { return Tensors{torch::hypot(x[0], x[1])}; });
  CommCounts c = comm_counts(hypot, {2, 2}, {Placements{R[0], S1[0]}, Placements{S1[0], Pavg[0]}});
  EXPECT_EQ(c.forward, (Counts{{"all_gather_into_tensor", 1}, {"reduce_scatter_tensor", 1}}));
  EXPECT_EQ(c.outputs, (std::vector<Placements>{Placements{R[0], S1[0]}}));
  // mul of [R, P(sum)] by [S(0), S(0)] [12] on 2x2 (f18_0021): gathering the
  // second operand's mesh dim 1 or reduce-scattering the first move 24 bytes
  // each; [S(0), P(sum)] would then need an all_reduce and an all_gather (96
  // bytes), [S(0), S(0)] two all_gathers (72): PyTorch 2.15's choice too.
  OpCase mul("mul", {Input::floats({12}).no_grad(), Input::floats({12}).no_grad()},
             [](const Tensors& x) { return Tensors{x[0] * x[1]}; });
  CommCounts m = comm_counts(mul, {2, 2}, {Placements{R[0], P[0]}, Placements{S0[0], S0[0]}});
  EXPECT_EQ(m.forward, (Counts{{"reduce_scatter_tensor", 1}}));
  EXPECT_EQ(m.outputs, (std::vector<Placements>{Placements{S0[0], S0[0]}}));
}

TEST(CommCountsTest, AddmmKeepsAPartialSumBiasByReducingAPartialMaxInput) {
  // linear's addmm of a [P(sum), S(0)] bias, a [P(max), P(max)] input and a
  // [S(0), R] transposed weight on 2x2 (g18_00236): as PyTorch 2.15, mesh
  // dim 0 keeps the bias P(sum) and turns the input P(max) into P(sum)
  // (priced as its all_reduce; the planner then finds a reduce_scatter and
  // a zero-fill, fewer bytes): 3 collectives as PyTorch's all_gather and 2
  // all_reduces (was: the bias all_reduced too, 4), output P(sum).
  OpCase addmm("addmm", {Input::floats({5}).no_grad(), Input::floats({6, 1}).no_grad(), Input::floats({1, 5}).no_grad()},
               [](const Tensors& x) { return Tensors{torch::addmm(x[0], x[1], x[2])}; });
  const std::vector<Placements> in = {Placements{P[0], S0[0]}, Placements{Pmax[0], Pmax[0]}, Placements{S0[0], R[0]}};
  CommCounts c = comm_counts(addmm, {2, 2}, in);
  EXPECT_EQ(c.forward, (Counts{{"all_gather_into_tensor", 1}, {"all_reduce", 1}, {"reduce_scatter_tensor", 1}}));
  EXPECT_EQ(c.outputs, (std::vector<Placements>{Placements{P[0], S1[0]}}));
  check_placements(addmm, {2, 2}, in, /*seed=*/4);
}

TEST(CommCountsTest, MseLossBackwardKeepsAPartialAvgTargetWithAReplicateInput) {
  // mse_loss_backward of an [S(1), R] input and a [P(avg), S(1)] target on
  // 2x2 (g18_00670): avg_r(y_r) - x = avg_r(y_r - x), so mesh dim 0 gathers
  // the input to R and keeps P(avg), one all_gather as PyTorch 2.15, where
  // reduce-scattering the target onto the input's shards took two.
  OpCase mse("mse_loss_backward",
             {Input::floats({}).no_grad(), Input::floats({1, 4}).no_grad(), Input::floats({1, 4}).no_grad()},
             [](const Tensors& x) { return Tensors{at::mse_loss_backward(x[0], x[1], x[2], at::Reduction::Sum)}; });
  const std::vector<Placements> in = {Placements{R[0], R[0]}, Placements{S1[0], R[0]}, Placements{Pavg[0], S1[0]}};
  CommCounts c = comm_counts(mse, {2, 2}, in);
  EXPECT_EQ(c.forward, kOneAllGather);
  EXPECT_EQ(c.outputs, (std::vector<Placements>{Placements{Pavg[0], S1[0]}}));
  check_placements(mse, {2, 2}, in, /*seed=*/5);
}

TEST(CommCountsTest, InPlaceAddZeroFillsAShardIntoItsPartialSelf) {
  // add_ of a P(sum) parameter by an S(1) momentum buffer (s18_0157, SGD with
  // momentum on a row-wise linear's weight): P(sum) + R would add the buffer
  // on every rank, so the buffer's shard is zero-filled into P(sum), with no
  // collective, as PyTorch 2.15 runs it (measured: add_ 0 collectives, the
  // result P(sum); mul_ keeps its all_gather to R; Note [Written tensors
  // zero-fill a sharded operand]).
  OpCase add_("add_", {Input::floats({3, 8}).no_grad(), Input::floats({3, 8}).no_grad()},
              [](const Tensors& x) { return Tensors{at::Tensor(x[0]).add_(x[1], -0.1)}; });
  CommCounts c = comm_counts(add_, {4}, {P, S1});
  EXPECT_EQ(c.forward, kNone);
  EXPECT_EQ(c.outputs, (std::vector<Placements>{P}));
  check_placements(add_, {4}, {P, S1}, /*seed=*/1);  // values equal one device's
  check_placements(add_, {2, 2}, {Placements{P[0], S1[0]}, Placements{S0[0], S1[0]}}, /*seed=*/2);
  OpCase mul_("mul_", {Input::floats({3, 8}).no_grad(), Input::floats({3, 8}).no_grad()},
              [](const Tensors& x) { return Tensors{at::Tensor(x[0]).mul_(x[1])}; });
  CommCounts m = comm_counts(mul_, {4}, {P, S1});
  EXPECT_EQ(m.forward, kOneAllGather);
  EXPECT_EQ(m.outputs, (std::vector<Placements>{P}));
  check_placements(mul_, {4}, {P, S1}, /*seed=*/3);
}

TEST(CommCountsTest, MulKeepsABroadcastPartial) {
  // P(avg) [2] times Replicate [6, 6, 2] (g18_00595, pow's backward): PyTorch
  // 2.15's pointwise rows keep the Partial whatever the shapes (2.11 reduced
  // the 16-byte operand first; Note [Partial through a broadcast]).
  OpCase mul("mul", {Input::floats({2}).no_grad(), Input::floats({6, 6, 2}).no_grad()},
             [](const Tensors& x) { return Tensors{x[0] * x[1]}; });
  CommCounts c = comm_counts(mul, {4}, {Pavg, R});
  EXPECT_EQ(c.forward, kNone);
  EXPECT_EQ(c.outputs, (std::vector<Placements>{Pavg}));
  // With more shards (g18_02184, mv's backward) it stayed in 2.11 too.
  OpCase outer("outer", {Input::floats({2}).no_grad(), Input::floats({4, 1}).no_grad()},
               [](const Tensors& x) { return Tensors{x[0] * x[1]}; });
  CommCounts kept = comm_counts(outer, {2, 2}, {Placements{S0[0], P[0]}, Placements{R[0], R[0]}});
  EXPECT_EQ(kept.forward, kNone);
  EXPECT_EQ(kept.outputs, (std::vector<Placements>{Placements{S1[0], P[0]}}));
}

TEST(CommCountsTest, SmallOperandsGatherRatherThanAllReduce) {
  // bmm of [P(sum), S(1)] [4, 6, 4] by [R, P(sum)] [4, 4, 2] on 2x2
  // (g18_00645): on mesh dim 1, gathering the S(1) (384 ring bytes) or
  // all_reducing the second operand (256) is one collective either way; the
  // all_reduce's 2 ring steps against the all_gather's 1 decide, as in
  // PyTorch (Note [Comm cost model]). Keeping the S(1) made the backward
  // gather its gradient: 4 collectives over the program, PyTorch 3.
  OpCase bmm("bmm", {Input::floats({4, 6, 4}).no_grad(), Input::floats({4, 4, 2}).no_grad()},
             [](const Tensors& x) { return Tensors{x[0].bmm(x[1])}; });
  CommCounts c = comm_counts(bmm, {2, 2}, {Placements{P[0], S1[0]}, Placements{R[0], P[0]}});
  EXPECT_EQ(c.forward, kOneAllGather);
  EXPECT_EQ(c.outputs, (std::vector<Placements>{Placements{P[0], P[0]}}));
  // Where the bytes outweigh the extra steps, the all_reduce still wins:
  // [4, 600, 4] gathers 38,400 ring bytes, the all_reduce 256.
  OpCase big("bmm", {Input::floats({4, 600, 4}).no_grad(), Input::floats({4, 4, 2}).no_grad()},
             [](const Tensors& x) { return Tensors{x[0].bmm(x[1])}; });
  CommCounts b = comm_counts(big, {2, 2}, {Placements{P[0], S1[0]}, Placements{R[0], P[0]}});
  EXPECT_EQ(b.forward, (Counts{{"all_reduce", 1}}));
  EXPECT_EQ(b.outputs, (std::vector<Placements>{Placements{P[0], S1[0]}}));
}

TEST(CommCountsTest, MatmulGathersShardsSmallerThanTheGroup) {
  // A Linear's weight gradient for a batch of 3 rows over 4 ranks
  // (s18_0072): grad^T [8, 3] S(0) by x [3, 6] S(0). Like PyTorch
  // (is_tensor_shardable), x is gathered into an S(0) gradient; an all_to_all
  // of grad^T onto 3 columns over 4 ranks gave a P(sum) gradient that every
  // optimizer op reduce_scattered again.
  OpCase grad("weight_grad", {Input::floats({8, 3}).no_grad(), Input::floats({3, 6}).no_grad()},
              [](const Tensors& x) { return Tensors{x[0].mm(x[1])}; });
  CommCounts g = comm_counts(grad, {4}, {S0, S0});
  EXPECT_EQ(g.forward, kOneAllGather);
  EXPECT_EQ(g.outputs, (std::vector<Placements>{S0}));
  // The forward, x [2, 8] S(0) by w^T [8, 4] S(1) (s18_0146): gathering x or
  // w^T cost the same; x is gathered, the output is not 2 rows over 4 ranks.
  OpCase fwd("linear_fwd", {Input::floats({2, 8}).no_grad(), Input::floats({8, 4}).no_grad()},
             [](const Tensors& x) { return Tensors{x[0].mm(x[1])}; });
  CommCounts f = comm_counts(fwd, {4}, {S0, S1});
  EXPECT_EQ(f.forward, kOneAllGather);
  EXPECT_EQ(f.outputs, (std::vector<Placements>{S1}));
  // Operands already split into more pieces than they have columns are
  // gathered too, as PyTorch 2.15 does (Note [Matrix products split no dim
  // smaller than the group]): addmm(P(sum) [3], [4, 3] S(1), [3, 3] S(1))
  // gathers both and reduces the bias, 2 all_gathers and 1 all_reduce to a
  // Replicate output, PyTorch's counts (we kept the tiny shards and moved
  // one by all_to_all into a P(sum) output, which the next op reduced).
  OpCase addmm("addmm", {Input::floats({3}).no_grad(), Input::floats({4, 3}).no_grad(), Input::floats({3, 3}).no_grad()},
               [](const Tensors& x) { return Tensors{torch::addmm(x[0], x[1], x[2])}; });
  CommCounts a = comm_counts(addmm, {4}, {P, S1, S1});
  EXPECT_EQ(a.forward, (Counts{{"all_gather_into_tensor", 2}, {"all_reduce", 1}}));
  EXPECT_EQ(a.outputs, (std::vector<Placements>{R}));
}

TEST(CommCountsTest, PlanChecksCostNestedShardsWithRealPlans) {
  // slice_scatter of self [S(0), P(sum), S(0)] and src [R, R, P(avg)], both
  // [2, 2], on 2x2x2 (m18_0271): 2 rows cannot be split over 4 ranks, so the
  // plan check refuses the per-dim pick. Gathering self's outer S(0) undoes
  // its inner one first (two all_gathers), so PyTorch's [S(0), P(sum), R]
  // (an all_gather and an all_reduce) is cheaper than [R, P(sum), S(0)]
  // (three collectives; Note [Whole-mesh plan checks]).
  OpCase scatter("slice_scatter", {Input::floats({2, 2}).no_grad(), Input::floats({2, 2}).no_grad()},
                 [](const Tensors& x) { return Tensors{torch::slice_scatter(x[0], x[1], 1, 0, 2, 1)}; });
  CommCounts c = comm_counts(scatter, {2, 2, 2}, {Placements{S0[0], P[0], S0[0]}, Placements{R[0], R[0], Pavg[0]}});
  EXPECT_EQ(c.forward, (Counts{{"all_gather_into_tensor", 1}, {"all_reduce", 1}}));
  EXPECT_EQ(c.outputs, (std::vector<Placements>{Placements{S0[0], P[0], R[0]}}));
  check_placements(scatter, {2, 2, 2}, {Placements{S0[0], P[0], S0[0]}, Placements{R[0], R[0], Pavg[0]}}, 1);
}

TEST(CommCountsTest, PointwiseOpsSplitNoDimSmallerThanTheGroup) {
  // sub of [1, 5] Replicate and [1, 5] S(0) on 4 ranks (v18_0223): splitting
  // the Replicate operand's one row over 4 ranks is refused, as PyTorch's
  // is_tensor_shardable does; the S(0) operand is gathered instead.
  OpCase sub("sub", {Input::floats({1, 5}).no_grad(), Input::floats({1, 5}).no_grad()},
             [](const Tensors& x) { return Tensors{x[0] - x[1]}; });
  CommCounts c = comm_counts(sub, {4}, {R, S0});
  EXPECT_EQ(c.forward, kOneAllGather);
  EXPECT_EQ(c.outputs, (std::vector<Placements>{R}));
  // An operand already laid out so keeps its layout: no collective.
  CommCounts kept = comm_counts(sub, {4}, {S0, S0});
  EXPECT_EQ(kept.forward, kNone);
  EXPECT_EQ(kept.outputs, (std::vector<Placements>{S0}));
}

TEST(CommCountsTest, GatheredStridedInputsLeaveNoInnerSplitFree) {
  // mul of [10] [_S(0, 2), S(0)] by [S(0), R] on 2x2 (v18_0150): gathering
  // the strided mesh dim undoes the inner S(0) first (two all_gathers), so
  // keeping that S(0) is not free: the strided operand joins the other's
  // [S(0), R] and nothing else moves. Before, the rule saw [R, S(0)] and
  // chose it, gathering the other operand too (3 all_gathers); PyTorch
  // gathers both to Replicate (3).
  OpCase mul("mul", {Input::floats({10}).no_grad(), Input::floats({10}).no_grad()},
             [](const Tensors& x) { return Tensors{x[0] * x[1]}; });
  const Placements strided{StridedShard(0, 2), S0[0]}, outer{S0[0], R[0]};
  CommCounts c = comm_counts(mul, {2, 2}, {strided, outer});
  EXPECT_EQ(c.forward, (Counts{{"all_gather_into_tensor", 2}}));
  EXPECT_EQ(c.outputs, (std::vector<Placements>{outer}));
  check_placements(mul, {2, 2}, {strided, outer}, 1);
}

TEST(CommCountsTest, ViewsKeepStridedShards) {
  // PyTorch 2.15 (tests/diff v18_0011, v18_0019, v18_0025): views keep
  // _StridedShard where the rows stay where they are; each case is also
  // checked against the single-device run.
  const Placement strided3 = StridedShard(0, 3), strided2 = StridedShard(0, 2);
  // A strided dim that is only renumbered: [7, 10] -> [7, 2, 5] on 2x3.
  OpCase split("view", {Input::floats({7, 10})}, [](const Tensors& x) { return Tensors{x[0].view({7, 2, 5})}; });
  CommCounts renumbered = comm_counts(split, {2, 3}, {Placements{strided3, S0[0]}});
  EXPECT_EQ(renumbered.forward, kNone);
  EXPECT_EQ(renumbered.outputs, (std::vector<Placements>{Placements{strided3, S0[0]}}));
  check_placements(split, {2, 3}, {Placements{strided3, S0[0]}}, 1);
  // A strided dim leading a merge of unsharded dims: [6, 5] -> [30] on 3x2.
  OpCase flatten("flatten", {Input::floats({6, 5})}, [](const Tensors& x) { return Tensors{x[0].flatten()}; });
  CommCounts merged = comm_counts(flatten, {3, 2}, {Placements{strided2, S0[0]}});
  EXPECT_EQ(merged.forward, kNone);
  EXPECT_EQ(merged.outputs, (std::vector<Placements>{Placements{strided2, S0[0]}}));
  check_placements(flatten, {3, 2}, {Placements{strided2, S0[0]}}, 1);
  // An inner dim sharded on two mesh dims, merged: each becomes _S(0, 30).
  OpCase all("view", {Input::floats({6, 5, 6})}, [](const Tensors& x) { return Tensors{x[0].view({-1})}; });
  CommCounts nested = comm_counts(all, {2, 2}, {Placements{S2[0], S2[0]}});
  EXPECT_EQ(nested.forward, kNone);
  const Placement strided30 = StridedShard(0, 30);
  EXPECT_EQ(nested.outputs, (std::vector<Placements>{Placements{strided30, strided30}}));
  check_placements(all, {2, 2}, {Placements{S2[0], S2[0]}}, 1);
  // squeeze reads only the global shape, so a strided input stays strided.
  OpCase squeeze("squeeze", {Input::floats({1, 8})}, [](const Tensors& x) { return Tensors{x[0].squeeze(0)}; });
  CommCounts squeezed = comm_counts(squeeze, {2, 2}, {Placements{StridedShard(1, 2), S1[0]}});
  EXPECT_EQ(squeezed.forward, kNone);
  EXPECT_EQ(squeezed.outputs, (std::vector<Placements>{Placements{strided2, S0[0]}}));
  check_placements(squeeze, {2, 2}, {Placements{StridedShard(1, 2), S1[0]}}, 1);
}

}  // namespace
}  // namespace dtensor::testing
