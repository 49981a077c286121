// MLP: construction and forward through dtensor::nn::call.
#include "examples/models/mlp.h"

#include "core/nn/module_call.h"
#include "examples/models/seeded_init.h"

namespace dtensor::examples {

MLPImpl::MLPImpl(const MLPOptions& options) : module_calls_(options.module_calls_) {
  net1 = register_module(
      "net1",
      torch::nn::Linear(torch::nn::LinearOptions(options.in_features_, options.hidden_).bias(options.bias_)));
  relu = register_module("relu", torch::nn::ReLU());
  net2 = register_module(
      "net2",
      torch::nn::Linear(torch::nn::LinearOptions(options.hidden_, options.in_features_).bias(options.bias_)));
  seeded_init(*this, options.seed_);
  if (options.device_ != c10::Device(c10::kCPU)) to(options.device_);
}

at::Tensor MLPImpl::forward(const at::Tensor& x) {
  if (!module_calls_) return net2(relu(net1(x)));
  return nn::call(net2, nn::call(relu, nn::call(net1, x)));
}

ParallelizePlan mlp_tp_plan(bool sequence_parallel) {
  if (sequence_parallel) {
    return {{"net1", ColwiseParallel().input_layouts(Shard(0))},
            {"net2", RowwiseParallel().output_layouts(Shard(0))}};
  }
  return {{"net1", ColwiseParallel()}, {"net2", RowwiseParallel()}};
}

}  // namespace dtensor::examples
