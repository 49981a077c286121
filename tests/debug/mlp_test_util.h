// The tensor-parallel MLP of the debug tests: debug::MLPModule with net1
// colwise, net2 rowwise, and this test suite's own stand-in for
// RowwiseParallel's output layout (a forward hook on net2: Partial -> Replicate).
//   MLPModule model = make_tp_mlp(mesh);
//   at::Tensor y = dtensor::nn::call(model, x);
#pragma once

#include <ATen/core/Tensor.h>

#include "core/device_mesh.h"
#include "core/dtensor.h"
#include "core/nn/module_call.h"
#include "debug/report/mlp_program.h"

namespace dtensor::debug::testing {

/// RowwiseParallel's output transform: a Partial output becomes Replicate
/// (one all_reduce inside the module).
inline void add_rowwise_output_hook(torch::nn::Module& module) {
  nn::register_forward_hook(module, [](torch::nn::Module&, const nn::TensorList&, at::Tensor out) {
    DTensor d(out);
    return d.placements()[0].is_partial() ? at::Tensor(d.redistribute({Replicate()})) : out;
  });
}

/// PyTorch's MLPModule parallelized as {"net1": ColwiseParallel(), "net2": RowwiseParallel()}.
inline MLPModule make_tp_mlp(const DeviceMesh& mesh, int64_t hidden = 16) {
  MLPModule model(hidden);
  distribute_linear(*model->net1, mesh, {Shard(0)}, {Shard(0)});
  distribute_linear(*model->net2, mesh, {Shard(1)}, {Replicate()});
  add_rowwise_output_hook(*model->net2);
  return model;
}

}  // namespace dtensor::debug::testing
