// The data parallelism the tensor-parallel examples combine with: gradients
// averaged over the data-parallel ranks after backward, as DDP does.
//   loss.backward();
//   average_gradients(*model, mesh["dp"]);   // one all_reduce per dtype
//   optimizer.step();
#pragma once

#include <torch/nn/module.h>

#include "core/device_mesh.h"

namespace dtensor {

/// Averages the gradient of every parameter of `module` over the ranks of
/// the 1-D `dp_mesh`: the local tensors of all gradients (DTensor gradients
/// on another mesh, e.g. the tp mesh, and plain ones alike) are flattened
/// into one bucket per dtype, summed with one all_reduce, divided by the dp
/// size and copied back. Each dp rank must have run backward on its share of
/// the batch with the loss averaged over that share; the result is then the
/// gradient of the loss averaged over the whole batch. Parameters without a
/// gradient are skipped (the same on every rank: SPMD); a parameter
/// registered twice (tied weights) counts once. Example:
///   average_gradients(*model, mesh["dp"]);
void average_gradients(torch::nn::Module& module, const DeviceMesh& dp_mesh);

}  // namespace dtensor
