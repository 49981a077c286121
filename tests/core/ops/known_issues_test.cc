// Repros of bugs found by the op harness in code outside the rule families
// (core/ops/view_rules.cc, core/ops/tensor_rules.cc).
// DISABLED_ until fixed; run with --gtest_also_run_disabled_tests.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "backends/fake/fake_world.h"
#include "core/dtensor.h"

namespace dtensor {
namespace {

// view_rules.cc: in-place views whose shard dim moves (squeeze_, unsqueeze_,
// transpose_, t_) are refused, since the written tensor "must keep" its
// placements; hits torch::matmul(vector, matrix [S(1)]), which ends in squeeze_(0).
TEST(KnownIssuesTest, DISABLED_InPlaceSqueezeRenumbersTheShard) {
  run_fake_world(4, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {4});
    DTensor x = distribute_tensor(torch::ones({1, 8}), mesh, {Shard(1)});
    x.squeeze_(0);
    EXPECT_EQ(x.placements(), (Placements{Shard(0)}));
  });
}

// tensor_rules.cc makes new_empty_strided Replicate. AccumulateGrad calls it
// (clone_obey_contract) when a leaf's gradient arrives with other strides,
// e.g. through a transpose, so a sharded leaf's gradient is gathered and
// stored Replicate. PyTorch keeps the input's placements when the size is the
// input's. Hits attention's key (k.transpose(-2, -1)) and any w.t() use.
TEST(KnownIssuesTest, DISABLED_TransposedGradientOfAShardedLeafStaysSharded) {
  run_fake_world(4, [](World& world) {
    auto mesh = DeviceMesh::init(c10::kCPU, {4});
    at::Tensor x = distribute_tensor(torch::randn({8, 4}), mesh, {Shard(0)}).requires_grad_(true);
    at::Tensor loss = DTensor((x.t() * 2).sum()).redistribute({Replicate()});
    struct Count : CollectiveObserver {
      int n = 0;
      void on_collective(const CollectiveEvent&) override { ++n; }
    } count;
    auto registration = world.observers().add(&count);
    loss.backward();
    EXPECT_EQ(count.n, 0);
    EXPECT_EQ(DTensor(x.grad()).placements(), (Placements{Shard(0)}));
  });
}

}  // namespace
}  // namespace dtensor
