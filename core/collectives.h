// The functional-collective layer: collectives over ONE mesh dim of a
// DeviceMesh on this rank's local tensor, along a tensor dim, with uneven
// (torch.chunk) pieces padded for the collective and unpadded after, here and
// nowhere else. Every collective is tagged with its mesh dim
// (CollectiveEvent::mesh), so traces know which mesh dim issued it.
// redistribute, distribute_tensor, data parallel, checkpoints, the planner
// and the examples sit on it; nothing outside backends/ calls a
// Communicator directly (tests may, on purpose).
//   // S(0) -> R on mesh dim 1, 10 rows over 4 ranks (pieces 3, 3, 3, 1):
//   at::Tensor full = collectives::all_gather_dim(local, mesh, 1, /*dim=*/0, /*extent=*/10);
//
// Every rank of the group along `mesh_dim` must make the same call (SPMD);
// the Communicator's checks and the fake world's mismatch detection apply.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>

#include "core/device_mesh.h"
#include "layout/placement.h"
#include "layout/reduce_op.h"

namespace dtensor::collectives {

/// Lets selective activation checkpointing keep a collective's result from
/// the forward and reuse it in the recomputation (Note [Selective checkpoint]
/// in core/nn/checkpoint.cc), as PyTorch's policy sees its functional
/// collectives. While one is set on a thread, all_gather_dim,
/// all_gather_sized, reduce_scatter_dim, all_to_all_dims and all_reduce ask
/// it first, with PyTorch's name ("_c10d_functional::reduce_scatter_tensor").
class ResultKeeper {
 public:
  virtual ~ResultKeeper() = default;
  /// The result of collective `name` on `input`: a kept one, or run()'s.
  virtual at::Tensor result(const char* name, const at::Tensor& input, const std::function<at::Tensor()>& run) = 0;
};

/// Sets the calling thread's keeper (nullptr: none) and returns the previous one.
ResultKeeper* set_thread_result_keeper(ResultKeeper* keeper);

/// For its lifetime the calling thread has no keeper: collectives that are
/// not the program's own (FSDP's, those inside an operator) always run.
class NoResultKeeper {
 public:
  NoResultKeeper() : previous_(set_thread_result_keeper(nullptr)) {}
  ~NoResultKeeper() { set_thread_result_keeper(previous_); }
  NoResultKeeper(const NoResultKeeper&) = delete;
  NoResultKeeper& operator=(const NoResultKeeper&) = delete;

 private:
  ResultKeeper* previous_;
};

/// S(dim) -> R: the pieces of the group concatenated along `dim`. `extent` is
/// the length of `dim` the group splits (the sum of its torch.chunk pieces;
/// this rank's `local` is piece get_local_rank(mesh_dim)).
at::Tensor all_gather_dim(const at::Tensor& local, const DeviceMesh& mesh, int mesh_dim,
                          int64_t dim, int64_t extent);

/// Like all_gather_dim for pieces of any lengths known to every rank: group
/// rank r holds `sizes[r]` elements of `dim` (a _StridedShard's pieces);
/// returns them concatenated along `dim` in group rank order. Each rank sends
/// max(sizes) elements, padded.
at::Tensor all_gather_sized(const at::Tensor& local, const DeviceMesh& mesh, int mesh_dim,
                            int64_t dim, const std::vector<int64_t>& sizes);

/// No communication: the piece of `full` that member `index` of n holds under
/// _StridedShard(dim, split_factor) (layout/shard_layout.h's
/// strided_chunk_spans, concatenated), a new contiguous tensor.
at::Tensor strided_piece(const at::Tensor& full, int64_t dim, int64_t split_factor, int64_t n,
                         int64_t index);

/// No communication: this rank's local tensor of a DTensor laid out as
/// `placements` whose global value `full` every rank holds (chunks of Shard
/// dims, strided pieces of _StridedShard ones, full / n on Partial(sum) mesh
/// dims, `full` itself on the others). What distribute_tensor with
/// src_data_rank=nullopt keeps, and what eye.out writes.
at::Tensor slice_of_full(at::Tensor full, const DeviceMesh& mesh, const Placements& placements);

/// P(op) -> S(dim): reduce(op) over the group, then this rank's torch.chunk
/// piece of `dim` (of length local.size(dim)).
at::Tensor reduce_scatter_dim(const at::Tensor& local, const DeviceMesh& mesh, int mesh_dim,
                              int64_t dim, ReduceOp op);

/// S(from_dim) -> S(to_dim): every rank sends piece j of `to_dim` to group
/// rank j and receives rank j's piece of `from_dim`. `from_extent` is the
/// length of `from_dim` the group splits.
at::Tensor all_to_all_dims(const at::Tensor& local, const DeviceMesh& mesh, int mesh_dim,
                           int64_t from_dim, int64_t from_extent, int64_t to_dim);

/// P(op) -> R: a new tensor holding reduce(op) over the group.
at::Tensor all_reduce(const at::Tensor& local, const DeviceMesh& mesh, int mesh_dim, ReduceOp op);

/// In place: `tensor` (contiguous) becomes reduce(op) over the group.
void all_reduce_(at::Tensor& tensor, const DeviceMesh& mesh, int mesh_dim, ReduceOp op);

/// Group rank `root` holds `full`; every rank returns its torch.chunk piece
/// of `dim` (the root's `full` is ignored elsewhere but must have its shape).
at::Tensor scatter_dim(const at::Tensor& full, const DeviceMesh& mesh, int mesh_dim, int64_t dim,
                       int64_t root);

/// A new tensor holding group rank `root`'s `tensor`.
at::Tensor broadcast(const at::Tensor& tensor, const DeviceMesh& mesh, int mesh_dim, int64_t root);

// Over every rank of a World, for what has no mesh (a checkpoint's
// agreement check and commit barriers).

/// Every rank's `local` (the same shape on all) concatenated along dim 0, in
/// rank order.
at::Tensor all_gather_world(const at::Tensor& local, World& world);

/// Returns when every rank of `world` has called it.
void barrier(World& world);

}  // namespace dtensor::collectives
