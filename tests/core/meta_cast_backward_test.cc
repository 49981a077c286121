// Operators with a device argument on DTensors of meta tensors (solo mode,
// the planner's traces) give DTensors, as on real tensors (Note [Device
// arguments on meta DTensors] in core/ops/meta_kernels.cc): at::Tensor::to's
// backward hands a DTensor gradient to the node before it.
#include <gtest/gtest.h>
#include <torch/nn/functional/loss.h>

#include <functional>
#include <utility>
#include <vector>

#include "backends/solo/solo_world.h"
#include "core/dtensor.h"
#include "core/dtensor_impl.h"

namespace dtensor {
namespace {

// Runs `body(device, mesh)` on rank 0 of a solo world of 4 ranks, on CPU
// tensors and on meta tensors.
void on_cpu_and_meta(const std::function<void(c10::DeviceType, const DeviceMesh&)>& body) {
  for (c10::DeviceType device : {c10::kCPU, c10::kMeta}) {
    SCOPED_TRACE(c10::DeviceTypeName(device));
    SoloOptions options;
    options.device = device;
    run_solo_world(
        4, 0, [&](World&) { body(device, DeviceMesh::init(device, {4})); }, options);
  }
}

TEST(MetaCastBackwardTest, ToFloatAfterARedistributeGivesADTensorGradient) {
  on_cpu_and_meta([](c10::DeviceType device, const DeviceMesh& mesh) {
    const at::TensorOptions o = at::TensorOptions(device).dtype(at::kBFloat16);
    DTensor x = distribute_tensor(at::ones({8, 16}, o), mesh, {Replicate()});
    DTensor w = distribute_tensor(at::ones({16, 12}, o), mesh, {Shard(1)});
    w.requires_grad_(true);
    at::Tensor logits = DTensor(at::matmul(x, w)).redistribute({Replicate()});
    DTensor targets = distribute_tensor(at::zeros({8}, at::TensorOptions(device).dtype(at::kLong)), mesh, {Replicate()});
    torch::nn::functional::cross_entropy(logits.to(at::kFloat), targets).backward();
    ASSERT_TRUE(w.grad().defined());
    EXPECT_EQ(DTensor(w.grad()).placements(), (Placements{Shard(1)}));
  });
}

// The other operators with a device argument that take a DTensor.
TEST(MetaCastBackwardTest, OperatorsWithADeviceArgumentKeepDTensors) {
  on_cpu_and_meta([](c10::DeviceType device, const DeviceMesh& mesh) {
    DTensor x = distribute_tensor(at::ones({8, 16}, at::TensorOptions(device)), mesh, {Shard(0)});
    const at::TensorOptions o = x.options().dtype(at::kDouble);
    const std::vector<std::pair<const char*, at::Tensor>> outs = {
        {"to", x.to(o)},
        {"empty_like", at::empty_like(x, o)},
        {"zeros_like", at::zeros_like(x, o)},
        {"ones_like", at::ones_like(x, o)},
        {"full_like", at::full_like(x, 2, o)},
        {"new_zeros", x.new_zeros({8, 16}, o)},
        {"new_empty", x.new_empty({8, 16}, o)}};
    for (const auto& [name, t] : outs) {
      EXPECT_TRUE(is_dtensor(t)) << name;
      EXPECT_EQ(t.scalar_type(), at::kDouble) << name;
    }
  });
}

}  // namespace
}  // namespace dtensor
