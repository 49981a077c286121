// The built-in "mlp" report program and its model: PyTorch's MLPModule
// (Linear(10, H) - ReLU - Linear(H, 10)) with net1 colwise and net2 rowwise.
//   MLPModule model(/*hidden=*/16);
//   shard_mlp(*model, mesh);                       // net1 [S(0)], net2 [S(1)] + output hook
//   at::Tensor y = dtensor::nn::call(model, x);    // one all_reduce, in net2
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <string>

#include "backends/world.h"
#include "core/device_mesh.h"
#include "core/layout/placement.h"

namespace dtensor::debug {

class ReportContext;

/// PyTorch's test MLPModule: net1 = Linear(10, hidden), relu, net2 =
/// Linear(hidden, 10). forward calls each child through dtensor::nn::call, so
/// module tracking and forward hooks see them; call the model itself the same
/// way (`dtensor::nn::call(model, x)`).
struct MLPModuleImpl : torch::nn::Module {
  explicit MLPModuleImpl(int64_t hidden = 16);
  at::Tensor forward(at::Tensor x);

  torch::nn::Linear net1{nullptr};
  torch::nn::ReLU relu{nullptr};
  torch::nn::Linear net2{nullptr};
};
TORCH_MODULE(MLPModule);

/// Replaces `linear`'s weight and bias by DTensors distributed from their
/// current values (moved to mesh.device()) with the given placements; they
/// require grad. Example: distribute_linear(*model->net1, mesh, {Shard(0)}, {Shard(0)}).
void distribute_linear(torch::nn::LinearImpl& linear, const DeviceMesh& mesh, const Placements& weight,
                       const Placements& bias);

/// Colwise net1 (weight and bias [S(0)]), rowwise net2 (weight [S(1)], bias
/// [R]) and, standing in for RowwiseParallel's output layout until the
/// parallel styles land, a forward hook on net2 that redistributes its
/// Partial output to Replicate (one all_reduce per forward).
void shard_mlp(MLPModuleImpl& model, const DeviceMesh& mesh);

/// The "mlp" program: a 1-D mesh over the world, shard_mlp, then `steps`
/// (default 1) forward + sum().backward() on a replicated [batch, 10] input
/// (default batch 8) that does not require grad. Args: hidden, batch, steps.
/// LibTorch 1.13 has no meta kernel for relu: use CPU tensors (in solo mode,
/// without meta).
void run_mlp_report_program(World& world, ReportContext& ctx);

}  // namespace dtensor::debug
