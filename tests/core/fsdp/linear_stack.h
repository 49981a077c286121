// The model of the FSDP tests: Linear layers with ReLU between them, children
// called through dtensor::nn::call (so fully_shard sees their boundaries),
// float64, parameters from seeded_init (the same on every rank and on the
// one-device reference). tests/diff/fsdp/pytorch_fsdp_runner.py builds the
// same shape in PyTorch, and its tensor parallelism (parallelize_linear_stack).
#pragma once

#include <ATen/ATen.h>
#include <torch/nn/functional/activation.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/device_mesh.h"
#include "core/nn/module_call.h"
#include "core/parallel/parallelize.h"
#include "core/parallel/style.h"
#include "examples/models/seeded_init.h"

namespace dtensor::testing {

struct LinearStackImpl : torch::nn::Module {
  explicit LinearStackImpl(const std::vector<int64_t>& widths) {
    for (size_t i = 0; i + 1 < widths.size(); ++i) {
      layers.push_back(register_module("layer" + std::to_string(i), torch::nn::Linear(widths[i], widths[i + 1])));
    }
  }
  at::Tensor forward(at::Tensor x) {
    for (size_t i = 0; i < layers.size(); ++i) {
      x = nn::call(layers[i], x);
      if (i + 1 < layers.size()) x = torch::relu(x);
    }
    return x;
  }
  std::vector<torch::nn::Linear> layers;
};
TORCH_MODULE(LinearStack);

inline LinearStack make_linear_stack(const std::vector<int64_t>& widths, uint64_t seed) {
  LinearStack stack(widths);
  stack->to(torch::kDouble);
  examples::seeded_init(*stack, seed);
  return stack;
}

/// Megatron-style tensor parallelism on `tp_mesh`, as
/// tests/diff/fsdp/pytorch_fsdp_runner.py's tensor_parallel: even layers
/// column-wise, odd ones row-wise, a last column-wise layer with its output
/// gathered (so the loss sees whole rows).
inline void parallelize_linear_stack(LinearStack& stack, const DeviceMesh& tp_mesh) {
  const size_t n = stack->layers.size();
  for (size_t i = 0; i < n; ++i) {
    torch::nn::Module& layer = *stack->layers[i];
    if (i % 2 == 1) {
      parallelize_module(layer, tp_mesh, RowwiseParallel());
    } else if (i + 1 == n) {
      parallelize_module(layer, tp_mesh, ColwiseParallel().output_layouts(Replicate()));
    } else {
      parallelize_module(layer, tp_mesh, ColwiseParallel());
    }
  }
}

/// A [rows, cols] float64 batch from a private generator: the same on every rank.
inline at::Tensor make_batch(int64_t rows, int64_t cols, uint64_t seed) {
  return at::randn({rows, cols}, examples::make_generator(seed), at::TensorOptions().dtype(torch::kDouble));
}

}  // namespace dtensor::testing
