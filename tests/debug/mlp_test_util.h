// The tensor-parallel MLP of the debug tests: examples::MLP under PyTorch's
// test name MLPModule (so traces name "MLPModule.net1", ...), with net1
// colwise, net2 rowwise, and a stand-in for RowwiseParallel's output layout
// (a forward hook on net2: Partial -> Replicate) so that the module's own
// forward sees DTensors in and out, as the recorded op snapshots expect.
//   MLPModule model = make_tp_mlp(mesh);
//   at::Tensor y = dtensor::nn::call(model, x);
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

#include "core/device_mesh.h"
#include "core/dtensor.h"
#include "core/nn/module_call.h"
#include "core/parallel/module_params.h"
#include "examples/models/mlp.h"

namespace dtensor::debug::testing {

/// examples::MLP named as PyTorch's test MLPModule (ModuleTracker names the
/// root after its class: MLPModuleImpl -> "MLPModule").
struct MLPModuleImpl : examples::MLPImpl {
  explicit MLPModuleImpl(int64_t hidden = 16) : examples::MLPImpl(examples::MLPOptions().hidden(hidden)) {}
};
TORCH_MODULE(MLPModule);

/// RowwiseParallel's output transform: a Partial output becomes Replicate
/// (one all_reduce inside the module).
inline void add_rowwise_output_hook(torch::nn::Module& module) {
  nn::register_forward_hook(module, [](torch::nn::Module&, const nn::TensorList&, at::Tensor out) {
    DTensor d(out);
    return d.placements()[0].is_partial() ? at::Tensor(d.redistribute({Replicate()})) : out;
  });
}

/// MLPModule with {"net1": colwise ([S(0)] weight and bias), "net2": rowwise
/// ([S(1)] weight, [R] bias)}, outputs left as DTensors.
inline MLPModule make_tp_mlp(const DeviceMesh& mesh, int64_t hidden = 16) {
  MLPModule model(hidden);
  distribute_parameter(*model->net1, "weight", mesh, {Shard(0)});
  distribute_parameter(*model->net1, "bias", mesh, {Shard(0)});
  distribute_parameter(*model->net2, "weight", mesh, {Shard(1)});
  distribute_parameter(*model->net2, "bias", mesh, {Replicate()});
  add_rowwise_output_hook(*model->net2);
  return model;
}

}  // namespace dtensor::debug::testing
