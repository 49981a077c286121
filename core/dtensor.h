// The DTensor API: a DTensor is an at::Tensor (see core/dtensor_impl.h), and
// this class adds PyTorch's DTensor methods on top of one.
//   DTensor w = distribute_tensor(torch::randn({16, 8}), mesh, {Shard(0)});
//   at::Tensor y = torch::mm(x, w.t());            // y is a DTensor
//   DTensor(y).full_tensor();                       // the global tensor on every rank
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>
#include <vector>

#include "core/device_mesh.h"
#include "core/dtensor_impl.h"  // is_dtensor
#include "core/dtensor_spec.h"
#include "layout/placement_alias.h"

namespace dtensor {

struct RedistributeOptions {
  /// Returns before the collectives finish where the device has streams
  /// (NCCL, the fake world's CUDA ranks): the result waits for them at its
  /// first use, as PyTorch's AsyncCollectiveTensor. On the CPU (fake world,
  /// solo, Gloo) it runs synchronously. Results, collectives and autograd
  /// are the same either way; the backward is synchronous, as in PyTorch.
  /// See Note [Async redistribution] (backends/async_region.h).
  bool async_op = false;
  std::optional<c10::ScalarType> forward_dtype;   // cast before redistributing
  std::optional<c10::ScalarType> backward_dtype;  // cast the gradient before its redistribution
};

struct FromLocalOptions {
  /// Every rank checks that all ranks agree on dims, dtype and global shape
  /// (two all_gathers per mesh dim), then Replicate mesh dims take the data
  /// of their first rank (a broadcast each), as PyTorch's run_check=True.
  /// Off by default, as in PyTorch; turn it on while debugging.
  bool run_check = false;
  /// Global shape/stride; needed for uneven shards (otherwise derived from
  /// the local shape assuming even shards).
  std::optional<std::vector<int64_t>> shape;
  std::optional<std::vector<int64_t>> stride;
  /// How the gradient of `local` is laid out (PyTorch 2.15's from_local
  /// grad_placements): the DTensor gradient is redistributed to these
  /// placements and its local part returned. Default: the forward placements
  /// with Partial read as Replicate. They must give `local`'s shape.
  std::optional<Placements> grad_placements;
};

struct DistributeOptions {
  /// Whose data is the truth: a rank *within each mesh dim's group*, as
  /// PyTorch's (every mesh dim scatters/broadcasts from its member
  /// src_data_rank, so on a 2-D mesh 1 means the rank at coordinate (1, 1));
  /// or nullopt to take every rank's own tensor and slice locally (no
  /// communication). Must be below every mesh dim's size.
  std::optional<int64_t> src_data_rank = 0;
};

class DTensor : public at::Tensor {
 public:
  /// Views `t` as a DTensor; throws unless is_dtensor(t).
  DTensor(at::Tensor t);  // NOLINT(google-explicit-constructor): as at::Tensor is implicit

  /// Wraps this rank's `local` shard (differentiable: gradients flow back to
  /// `local`). Example: DTensor::from_local(torch::ones({2, 4}), mesh, {Shard(0)})
  /// is a [2 * mesh.size(), 4] tensor of ones.
  static DTensor from_local(const at::Tensor& local, const DeviceMesh& mesh, Placements placements,
                            const FromLocalOptions& options = {});
  /// The same with the alias form on a named mesh, one entry per tensor dim
  /// naming the mesh dims that shard it (layout/placement_alias.h):
  /// from_local(t, mesh, AliasSpec{{"dp"}, {"None"}}) is {Shard(0), Replicate()}
  /// on Mesh(dp, tp). The alias form cannot express Partial.
  static DTensor from_local(const at::Tensor& local, const DeviceMesh& mesh, const AliasSpec& alias,
                            const FromLocalOptions& options = {});

  /// This rank's shard (differentiable). `grad_placements` says how the
  /// gradient of the result is laid out (e.g. {Partial()}); default: as now,
  /// with Partial read as Replicate (a local gradient of a Partial tensor is
  /// the whole gradient on every rank, as PyTorch 2.11's default).
  at::Tensor to_local(std::optional<Placements> grad_placements = std::nullopt) const;
  /// The global tensor on every rank: redistribute to Replicate then to_local.
  at::Tensor full_tensor(std::optional<Placements> grad_placements = std::nullopt) const;
  /// The same tensor under other placements (differentiable; the backward
  /// redistributes the gradient back). Example: dt.redistribute({Replicate()}).
  DTensor redistribute(Placements placements, const RedistributeOptions& options = {}) const;
  /// The same with the alias form: dt.redistribute(AliasSpec{{"tp"}, {}}).
  DTensor redistribute(const AliasSpec& alias, const RedistributeOptions& options = {}) const;
  /// These placements in the alias form (the mesh must be named; throws for Partial).
  AliasSpec alias() const;

  const DeviceMesh& device_mesh() const { return spec().mesh; }
  const Placements& placements() const { return spec().placements; }
  const DTensorSpec& spec() const;
  /// This rank's shard without autograd (no copy).
  const at::Tensor& local_tensor() const;
  /// "DTensor(placements=[S(0)], mesh=DeviceMesh(cpu, (4)), shape=[8, 4], local=...)".
  std::string to_string() const;
};

std::ostream& operator<<(std::ostream& out, const DTensor& t);

/// Distributes a global tensor: every rank passes a tensor of the same shape;
/// the values at mesh coordinate (src_data_rank, ..., src_data_rank) become
/// the DTensor (scatter/broadcast along each mesh dim), or each rank slices its own copy when src_data_rank is
/// nullopt. Not differentiable with respect to `tensor`: as in PyTorch, the
/// result is a new leaf, which requires grad when `tensor` does and whose
/// .grad() receives the gradient (what parameters need). A non-leaf `tensor`
/// (computed from tensors requiring grad) is refused, as PyTorch refuses it:
/// its gradient path would be cut; use DTensor::from_local to keep it.
DTensor distribute_tensor(const at::Tensor& tensor, const DeviceMesh& mesh, Placements placements,
                          const DistributeOptions& options = {});
/// The same with the alias form on a named mesh:
///   distribute_tensor(w, mesh, AliasSpec{{"dp", "tp"}, {}})   // dim 0 split over dp, then tp
DTensor distribute_tensor(const at::Tensor& tensor, const DeviceMesh& mesh, const AliasSpec& alias,
                          const DistributeOptions& options = {});

}  // namespace dtensor
