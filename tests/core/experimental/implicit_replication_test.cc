// implicit_replication: plain tensors mixed with DTensors are refused outside
// the guard (except 0-dim ones) and treated as Replicate inside it; it also
// rescues LibTorch 1.13 backward formulas that build plain zero tensors.
#include <gtest/gtest.h>
#include <torch/utils.h>

#include "backends/fake/fake_world.h"
#include "core/dtensor.h"
#include "core/dtensor_impl.h"
#include "core/experimental/implicit_replication.h"

namespace dtensor::experimental {
namespace {

TEST(ImplicitReplicationTest, PlainTensorsAreReplicateInsideTheGuardOnly) {
  const at::Tensor x = torch::randn({8, 4}, torch::kDouble), bias = torch::randn({4}, torch::kDouble);
  run_fake_world(4, [&](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {4});
    DTensor dx = distribute_tensor(x, mesh, {Shard(0)});
    EXPECT_THROW(dx + bias, c10::Error);
    DTensor scalar = dx * torch::tensor(2.0, torch::kDouble);  // 0-dim: always fine
    EXPECT_TRUE(torch::allclose(scalar.full_tensor(), x * 2));
    {
      implicit_replication guard;
      EXPECT_TRUE(ImplicitReplicationGuard::active());
      DTensor y = dx + bias;
      EXPECT_EQ(y.placements(), (Placements{Shard(0)}));
      EXPECT_TRUE(torch::allclose(y.full_tensor(), x + bias));
    }
    EXPECT_FALSE(ImplicitReplicationGuard::active());
    EXPECT_THROW(dx + bias, c10::Error);
  });
}

// split / unbind with an output that gets no gradient: LibTorch 1.13 fills
// the missing gradient with at::zeros (a plain tensor), accepted inside the guard.
TEST(ImplicitReplicationTest, RescuesBackwardOfUnusedSplitOutputs) {
  const at::Tensor x = torch::randn({8, 4}, torch::kDouble);
  at::Tensor rx = x.clone().requires_grad_(true);
  (torch::split(rx, 2, 1)[0] * 3).sum().backward();
  run_fake_world(4, [&](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {4});
    at::Tensor dx = distribute_tensor(x, mesh, {Shard(0)}).requires_grad_(true);
    at::Tensor loss = DTensor((torch::split(dx, 2, 1)[0] * 3).sum()).redistribute({Replicate()});
    {
      implicit_replication guard;
      loss.backward();
    }
    EXPECT_TRUE(torch::allclose(DTensor(dx.grad()).full_tensor(), rx.grad()));
  });
}

}  // namespace
}  // namespace dtensor::experimental
