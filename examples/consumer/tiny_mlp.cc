#include "tiny_mlp.h"

#include "core/nn/module_call.h"

namespace consumer {

TinyMlpImpl::TinyMlpImpl() {
  fc1 = register_module("fc1", torch::nn::Linear(8, 16));
  fc2 = register_module("fc2", torch::nn::Linear(16, 8));
  // The same parameters in every instance, without the global generator
  // (the ranks of a fake world are threads that share it).
  torch::NoGradGuard no_grad;
  for (at::Tensor& p : parameters()) {
    p.copy_(at::sin(at::arange(p.numel(), at::kFloat)).reshape(p.sizes()).mul(0.3));
  }
}

at::Tensor TinyMlpImpl::forward(const at::Tensor& x) {
  // Children called through dtensor::nn::call so the TP styles see them.
  return dtensor::nn::call(fc2, torch::relu(dtensor::nn::call(fc1, x)));
}

dtensor::ParallelizePlan tiny_mlp_plan() {
  return {{"fc1", dtensor::ColwiseParallel()}, {"fc2", dtensor::RowwiseParallel()}};
}

}  // namespace consumer
