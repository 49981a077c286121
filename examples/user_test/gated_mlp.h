// A tiny user module and its tensor-parallel plan, as a user of dtensor would
// write them; gated_mlp_test.cc shows how to unit-test the sharding with the
// testing kit (//testing:gtest).
//   GatedMLP mlp(GatedMLPOptions{/*dim=*/8, /*hidden=*/16, /*seed=*/1});
//   dtensor::parallelize_module(*mlp, mesh, gated_mlp_tp_plan());
//   at::Tensor y = mlp->forward(x);   // x, y plain (replicated) tensors
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include <cstdint>

#include "core/parallel/parallelize.h"

namespace user_test {

struct GatedMLPOptions {
  int64_t dim = 8;
  int64_t hidden = 16;
  /// Parameters are drawn from a private generator seeded with this, so
  /// that every rank and the single-device reference build the same module.
  uint64_t seed = 1;
};

/// down(silu(gate(x)) * up(x)) (a SwiGLU feed-forward), children called
/// through dtensor::nn::call so that parallel styles apply to them.
class GatedMLPImpl : public torch::nn::Module {
 public:
  explicit GatedMLPImpl(const GatedMLPOptions& options = {});
  at::Tensor forward(const at::Tensor& x);

  torch::nn::Linear gate{nullptr};
  torch::nn::Linear up{nullptr};
  torch::nn::Linear down{nullptr};
};
TORCH_MODULE(GatedMLP);

/// gate and up column-wise (each rank computes hidden/N features, no
/// communication), down row-wise (partial sums, one all_reduce in forward).
dtensor::ParallelizePlan gated_mlp_tp_plan();

}  // namespace user_test
