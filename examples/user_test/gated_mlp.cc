// GatedMLP: construction from a seed, forward, and its TP plan.
#include "examples/user_test/gated_mlp.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/nn/functional/activation.h>

#include "core/nn/module_call.h"

namespace user_test {

GatedMLPImpl::GatedMLPImpl(const GatedMLPOptions& options) {
  gate = register_module("gate", torch::nn::Linear(options.dim, options.hidden));
  up = register_module("up", torch::nn::Linear(options.dim, options.hidden));
  down = register_module("down", torch::nn::Linear(options.hidden, options.dim));
  at::Generator gen = at::detail::createCPUGenerator(options.seed);
  at::NoGradGuard no_grad;
  for (at::Tensor& p : parameters()) p.copy_(at::randn(p.sizes(), gen) * 0.3);
}

at::Tensor GatedMLPImpl::forward(const at::Tensor& x) {
  using dtensor::nn::call;
  return call(down, torch::nn::functional::silu(call(gate, x)) * call(up, x));
}

dtensor::ParallelizePlan gated_mlp_tp_plan() {
  return {{"gate", dtensor::ColwiseParallel()},
          {"up", dtensor::ColwiseParallel()},
          {"down", dtensor::RowwiseParallel()}};
}

}  // namespace user_test
