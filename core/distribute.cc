// distribute_tensor: rank src's global tensor becomes a DTensor, mesh dim by
// mesh dim (scatter for Shard, broadcast for Replicate/Partial), like
// PyTorch's distribute_tensor. The result is a leaf that requires grad when
// the input does (PyTorch's behaviour: parameters are built this way).
#include <ATen/ATen.h>
#include <algorithm>
#include <c10/util/Exception.h>
#include <torch/csrc/autograd/grad_mode.h>

#include "core/collectives.h"
#include "core/dtensor.h"
#include "core/dtensor_impl.h"
#include "core/init.h"
#include "core/redistribution_origin.h"
#include "core/torch_errors.h"
#include "layout/shard_layout.h"

namespace dtensor {
namespace {

// Note [src_data_rank is a group rank]
// As in PyTorch (Shard._make_shard_tensor / Replicate._make_replicate_tensor
// pass it as group_src), src_data_rank is the source's rank *within each mesh
// dim's group*: every mesh dim scatters or broadcasts from its member
// src_data_rank, so on an N-D mesh the data of the rank at coordinate
// (s, s, ..., s) becomes the DTensor. Run with PyTorch 2.11 on a (2, 2) gloo
// mesh, src_data_rank=1 with [R, R] gives every rank global rank 3's values.
at::Tensor local_piece(at::Tensor current, const DeviceMesh& mesh, const Placements& placements,
                       std::optional<int64_t> src_rank) {
  // Without a source rank nothing is sent: each rank slices its own copy.
  if (!src_rank) return collectives::slice_of_full(std::move(current), mesh, placements);
  // See Note [Collective origins]: the full tensor (Replicate everywhere on
  // the source rank) becomes `placements`, mesh dim by mesh dim.
  ExplicitOriginScope origin(origin_cause::kDistributeTensor, "distribute_tensor");
  const Placements full(placements.size(), Replicate());
  RedistributionProgress progress(full, placements);
  const int64_t root = *src_rank;
  for (int i = 0; i < mesh.ndim(); ++i) {
    const Placement& p = placements[static_cast<size_t>(i)];
    const int64_t n = mesh.size(i);
    progress.step(i, full[static_cast<size_t>(i)], p);
    if (n > 1) {
      if (p.is_shard()) {
        current = collectives::scatter_dim(current, mesh, i, p.shard_dim(), root);
        continue;
      }
      current = collectives::broadcast(current, mesh, i, root);
    }
    if (p.is_strided_shard() && n > 1) {
      // Broadcast, then each rank keeps its strided pieces (Note [Strided shards]).
      current = collectives::strided_piece(current, p.shard_dim(), p.split_factor(), n,
                                           mesh.get_local_rank(i));
    }
    if (p.is_partial() && p.reduce_op() == ReduceOp::kSum) current = current / n;
  }
  return current;
}

}  // namespace

DTensor distribute_tensor(const at::Tensor& tensor, const DeviceMesh& mesh, Placements placements,
                          const DistributeOptions& options) {
  init();
  TORCH_CHECK(tensor.defined(), "distribute_tensor: the tensor is undefined");
  TORCH_CHECK(!is_dtensor(tensor), "distribute_tensor: the tensor is already a DTensor; use "
              "redistribute to change its placements");
  // PyTorch raises here too: the result is a new leaf, so a non-leaf input's
  // gradient path would be cut silently.
  TORCH_CHECK(tensor.is_leaf(), "distribute_tensor: the tensor of shape ", tensor.sizes(),
              " is not a leaf (it was computed from tensors that require grad), and the DTensor ",
              "would be a new leaf that its gradient never reaches; distribute the leaf it came ",
              "from, pass tensor.detach() to start a new leaf on purpose, or build the DTensor ",
              "with DTensor::from_local, which keeps the gradient path");
  TORCH_CHECK(!tensor.is_meta() || mesh.device_type() == c10::kMeta, "distribute_tensor: the tensor of shape ",
              tensor.sizes(), " is on the meta device (no data) but ", mesh.to_string(), " is on ",
              mesh.device(), "; pass a tensor with data, or build the mesh with c10::kMeta to trace shapes only");
  placements = checked_placements(placements, mesh, tensor.dim(),
                                  c10::str("distribute_tensor of shape ", tensor.sizes()));
  for (const Placement& p : placements) {
    TORCH_CHECK(!p.is_partial() || p.reduce_op() == ReduceOp::kSum || p.reduce_op() == ReduceOp::kAvg,
                "distribute_tensor: ", p.to_string(), " cannot be made from a full tensor; use "
                "Partial(sum), Partial(avg), or DTensor::from_local with your partial values");
  }
  if (options.src_data_rank) {
    const int64_t smallest = *std::min_element(mesh.shape().begin(), mesh.shape().end());
    TORCH_CHECK(*options.src_data_rank >= 0 && *options.src_data_rank < smallest,
                "distribute_tensor on rank ", mesh.global_rank(), ": src_data_rank ",
                *options.src_data_rank, " is not a rank of every mesh dim's group of ",
                mesh.to_string(), " (it is a rank within each mesh dim, as PyTorch's group_src: "
                "the source is the rank at coordinate (s, ..., s)); pass 0 <= src_data_rank < ",
                smallest, ", or nullopt to slice every rank's own copy");
  }
  at::Tensor local;
  {
    torch::autograd::AutoGradMode no_grad(false);
    at::Tensor source = tensor.detach().to(mesh.device());
    local = local_piece(source, mesh, placements, options.src_data_rank);
    // Never alias the caller's tensor: the DTensor owns its shard.
    if (local.storage().is_alias_of(source.storage())) local = local.clone();
    local = local.contiguous();
  }
  DTensorSpec spec{mesh, placements,
                   TensorMeta{tensor.sizes().vec(), contiguous_strides(tensor.sizes().vec()), tensor.scalar_type()}};
  at::Tensor out = make_dtensor(local, spec);
  if (tensor.requires_grad()) out.set_requires_grad(true);
  return DTensor(out);
}

}  // namespace dtensor
