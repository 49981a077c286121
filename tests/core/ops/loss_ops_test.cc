// Op-by-op checks of the losses: nll_loss (2-D and the 2d variant through a
// 3-D cross_entropy), cross_entropy, with class weights and ignore_index,
// every reduction; mse_loss. See Note [Mean losses over shards] for when a
// batch-sharded mean is exact.
#include <gtest/gtest.h>
#include <torch/nn/functional.h>
#include <torch/utils.h>

#include "tests/core/ops/op_harness.h"

namespace dtensor::testing {
namespace {

namespace F = torch::nn::functional;

const char* reduction_name(int64_t r) { return r == 0 ? "none" : r == 1 ? "mean" : "sum"; }

TEST(LossOpsTest, NllLossEveryReduction) {
  for (int64_t reduction : {0, 1, 2}) {
    check_all_placements(OpCase(std::string("nll_loss_") + reduction_name(reduction),
                                {Input::floats({8, 12}), Input::indices({8}, 12)},
                                [reduction](const Tensors& x) {
                                  return Tensors{at::nll_loss(x[0].log_softmax(1), x[1], {}, reduction)};
                                }));
  }
}

TEST(LossOpsTest, CrossEntropy2dAnd3d) {
  for (int64_t reduction : {0, 1, 2}) {
    check_all_placements(OpCase(std::string("cross_entropy_") + reduction_name(reduction),
                                {Input::floats({8, 12}), Input::indices({8}, 12)},
                                [reduction](const Tensors& x) {
                                  return Tensors{at::cross_entropy_loss(x[0], x[1], {}, reduction)};
                                }));
    check_all_placements(OpCase(std::string("cross_entropy_3d_") + reduction_name(reduction),
                                {Input::floats({4, 12, 8}), Input::indices({4, 8}, 12)},
                                [reduction](const Tensors& x) {
                                  return Tensors{at::cross_entropy_loss(x[0], x[1], {}, reduction)};
                                }));
  }
}

// Class weights and ignored targets make the per-shard total weights differ:
// exact when the target arrives replicated (Note [Mean losses over shards]).
TEST(LossOpsTest, WeightedMeanWithIgnoreIndexIsExactWithReplicatedTarget) {
  auto with_ignored = [](const at::Tensor& t) { return t.masked_fill(t.remainder(5).eq(0), -100); };
  OpCase c("cross_entropy_weighted_ignore",
           {Input::floats({8, 12}), Input::indices({8}, 12).with(with_ignored), Input::floats({12}).no_grad()},
           [](const Tensors& x) { return Tensors{at::cross_entropy_loss(x[0], x[1], x[2].abs(), 1, -100)}; });
  c.inputs[1].only = {{Replicate()}};
  c.inputs[2].only = {{Replicate()}};
  check_all_placements(c);
  OpCase sum("nll_weighted_ignore_sum",
             {Input::floats({8, 12}), Input::indices({8}, 12).with(with_ignored), Input::floats({12}).no_grad()},
             [](const Tensors& x) { return Tensors{at::nll_loss(x[0], x[1], x[2].abs(), 2, -100)}; });
  sum.inputs[2].only = {{Replicate()}};
  check_all_placements(sum);
}

TEST(LossOpsTest, MseLossEveryReduction) {
  for (int64_t reduction : {0, 1, 2}) {
    check_all_placements(OpCase(std::string("mse_loss_") + reduction_name(reduction),
                                {Input::floats({8, 12}), Input::floats({8, 12})},
                                [reduction](const Tensors& x) { return Tensors{at::mse_loss(x[0], x[1], reduction)}; }));
  }
}

// Uneven shards: "mean" needs even batch shards (Partial(avg)) unless the
// target is replicated; sum and none do not.
TEST(LossOpsTest, UnevenShards) {
  for (int64_t reduction : {0, 1, 2}) {
    check_all_placements(OpCase(std::string("cross_entropy_uneven_") + reduction_name(reduction),
                                {Input::floats({6, 5}), Input::indices({6}, 5)},
                                [reduction](const Tensors& x) {
                                  return Tensors{at::cross_entropy_loss(x[0], x[1], {}, reduction)};
                                }));
    check_all_placements(OpCase(std::string("mse_uneven_") + reduction_name(reduction),
                                {Input::floats({6, 5}), Input::floats({6, 5})},
                                [reduction](const Tensors& x) { return Tensors{at::mse_loss(x[0], x[1], reduction)}; }));
  }
}

}  // namespace
}  // namespace dtensor::testing
