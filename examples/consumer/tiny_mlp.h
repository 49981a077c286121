// A user's module with its own tensor-parallel plan, built outside the
// dtensor repository: with CMake against the installed package
// (find_package(dtensor)) or with Bazel against @dtensor. See README.md.
#pragma once

#include <torch/torch.h>

#include "core/parallel/parallelize.h"

namespace consumer {

/// x -> fc2(relu(fc1(x))), 8 -> 16 -> 8.
struct TinyMlpImpl : torch::nn::Module {
  TinyMlpImpl();
  at::Tensor forward(const at::Tensor& x);
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
};
TORCH_MODULE(TinyMlp);

/// Megatron-style: fc1 column-wise, fc2 row-wise (one all_reduce forward).
dtensor::ParallelizePlan tiny_mlp_plan();

}  // namespace consumer
