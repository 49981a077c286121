// Regression tests for bugs the op harness found outside the rule families
// (core/ops/view_rules.cc, core/ops/tensor_rules.cc).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "backends/fake/fake_world.h"
#include "core/dtensor.h"
#include "testing/collective_counter.h"

namespace dtensor {
namespace {

// view_rules.cc: in-place views whose shard dim moves (squeeze_, unsqueeze_,
// transpose_, t_) were refused, since the written tensor "must keep" its
// placements; torch::matmul(vector, matrix [S(1)]) ends in squeeze_(0).
TEST(RegressionTest, InPlaceSqueezeRenumbersTheShard) {
  run_fake_world(4, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {4});
    DTensor x = distribute_tensor(torch::ones({1, 8}), mesh, {Shard(1)});
    x.squeeze_(0);
    EXPECT_EQ(x.placements(), (Placements{Shard(0)}));
  });
}

// tensor_rules.cc made new_empty_strided Replicate. AccumulateGrad calls it
// (clone_obey_contract) when a leaf's gradient arrives with other strides,
// e.g. through a transpose, so a sharded leaf's gradient was gathered and
// stored Replicate. PyTorch keeps the input's placements when the size is the
// input's. Hits attention's key (k.transpose(-2, -1)) and any w.t() use.
TEST(RegressionTest, TransposedGradientOfAShardedLeafStaysSharded) {
  run_fake_world(4, [](World& world) {
    auto mesh = DeviceMesh::init(c10::kCPU, {4});
    at::Tensor x = distribute_tensor(torch::randn({8, 4}), mesh, {Shard(0)}).requires_grad_(true);
    at::Tensor z = distribute_tensor(torch::randn({4, 8}), mesh, {Shard(1)});
    // d loss / d x.t() = z, sharded [S(1)]; through t() it arrives [S(0)]
    // with transposed strides.
    at::Tensor loss = DTensor((x.t() * z).sum()).redistribute({Replicate()});
    testing::CollectiveCounter count(world);
    loss.backward();
    EXPECT_EQ(count.total(), 0);
    DTensor grad(x.grad());
    EXPECT_EQ(grad.placements(), (Placements{Shard(0)}));
    EXPECT_TRUE(torch::equal(grad.full_tensor(), DTensor(z).full_tensor().t()));  // rank 0 data is the truth
  });
}

}  // namespace
}  // namespace dtensor
