// The data parallelism the tensor-parallel examples combine with: gradients
// averaged over the data-parallel ranks after backward, as DDP does.
//   loss.backward();
//   average_gradients(*model, mesh["dp"]);   // one all_reduce per dtype
//   optimizer.step();
#pragma once

#include <torch/nn/module.h>

#include <cstdint>
#include <vector>

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

/// The elements of `tensors`, one after another, in a new 1-D tensor with
/// the first one's dtype and device, zero-padded to `min_numel` elements:
/// the bucket one collective moves for many gradients or parameters. All
/// tensors must share a dtype and device. Example: for a of shape [2, 3] and
/// b of shape [4], flatten_bucket({a, b}, 12) has 12 elements, the last 2 zero.
at::Tensor flatten_bucket(const std::vector<at::Tensor>& tensors, int64_t min_numel = 0);

/// Copies consecutive slices of `bucket` back into `tensors`, in place, each
/// keeping its shape: the inverse of flatten_bucket (padding is ignored).
void unflatten_bucket(const at::Tensor& bucket, const std::vector<at::Tensor>& tensors);

}  // namespace dtensor
