#include "tiny_mlp.h"

#include "core/nn/module_call.h"

namespace consumer {

TinyMlpImpl::TinyMlpImpl() {
  torch::manual_seed(0);  // the same parameters in every instance
  fc1 = register_module("fc1", torch::nn::Linear(8, 16));
  fc2 = register_module("fc2", torch::nn::Linear(16, 8));
}

at::Tensor TinyMlpImpl::forward(const at::Tensor& x) {
  // Children called through dtensor::nn::call so the TP styles see them.
  return dtensor::nn::call(fc2, torch::relu(dtensor::nn::call(fc1, x)));
}

dtensor::ParallelizePlan tiny_mlp_plan() {
  return {{"fc1", dtensor::ColwiseParallel()}, {"fc2", dtensor::RowwiseParallel()}};
}

}  // namespace consumer
