// The parameters one fully_shard call manages, and the three things FSDP does
// to them: all-gather them into full tensors (unshard), free those again
// (reshard), and reduce-scatter their gradients into the sharded parameters.
// Private to core/fsdp; fully_shard.cc decides when each happens.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>
#include <torch/nn/module.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backends/async_region.h"
#include "core/device_mesh.h"
#include "layout/placement.h"

namespace dtensor::fsdp {

// Note [FSDP parameters]
// Each managed parameter exists twice, as in PyTorch's FSDP2:
// - `sharded`: a DTensor Shard(0) on the data-parallel mesh (HSDP, a 2-D
//   mesh (replicate, shard): (Replicate(), Shard(0))) (torch.chunk
//   rows, so uneven dim 0 leaves the last ranks fewer or no rows). It is what
//   the module registers between forwards, what optimizers step and where
//   the reduced gradient lands.
// - `unsharded`: a plain leaf tensor of the full shape (param_dtype), one
//   TensorImpl for the module's lifetime. Forward computes with it, so
//   autograd saves it and accumulates its gradient. Resharding frees its
//   storage (nbytes 0) while autograd still holds the TensorImpl;
//   unsharding allocates the storage again and copies the all-gathered rows
//   in, without bumping the version counter (through variable_data()), so
//   backward reads what forward read.
// Note [FSDP over tensor parallelism]
// A parameter that is already a DTensor on a tensor-parallel mesh (from
// parallelize_module on mesh["tp"], with fully_shard on mesh["dp"] of the
// same mesh) is sharded on its LOCAL tensor, as PyTorch's FSDP2: `shape` is
// the tp-local shape, dim 0 of it is chunked over dp, and `sharded` lives on
// the joined mesh (dp..., tp...) (DeviceMesh::concatenate) with placements
// (dp's, then the tp ones), where dp's Shard(0) becomes _StridedShard(0, sf)
// when the tp placements split dim 0 into sf pieces: rank (i, j) then holds
// the dp chunk i of the tp chunk j (Note [Strided shards]). That is exact when
// the tp pieces of dim 0 are equal (global rows divisible by sf), which is
// checked. `unsharded` is a leaf DTensor on the tp mesh whose local tensor
// (`unsharded_local`) has its storage freed and restored as above; its
// gradient is redistributed to the tp placements (a Partial one all-reduced
// over tp, as PyTorch does) before the reduce-scatter over dp.
// One all-gather moves a group's parameters: each rank contributes its
// shards, each padded to ceil(rows / world) rows, one after another; rank
// r's block of parameter p holds global rows [r * c, r * c + c), so the
// first `rows` rows of the gathered blocks are the parameter. Gradients go
// back the same way in one reduce-scatter.
struct FsdpParam {
  torch::nn::Module* owner = nullptr;  // the module that registers it
  std::string name;                    // its name there ("weight")
  std::string fqn;                     // from the fully_shard module ("layers.0.wq.weight")
  /// Other (module, name) registrations of the same tensor (tied weights).
  std::vector<std::pair<torch::nn::Module*, std::string>> aliases;
  at::Tensor sharded;                  // DTensor Shard(0)
  at::Tensor unsharded;                // leaf, full shape; storage freed while resharded
  at::Tensor unsharded_local;          // unsharded, or for tp its local tensor
  std::vector<int64_t> shape;          // the full shape (for tp: the tp-local shape)
  // Tensor parallelism (Note [FSDP over tensor parallelism]); empty tp_mesh: none.
  DeviceMesh tp_mesh;
  Placements tp_placements;
  std::vector<int64_t> global_shape;   // the DTensor's shape (== shape without tp)
  int64_t padded_rows = 0;             // ceil(shape[0] / world)
  int64_t row_numel = 1;               // elements per row
  int64_t local_rows = 0;              // this rank's rows
  bool requires_grad = false;

  int64_t padded_numel() const { return padded_rows * row_numel; }
  bool is_tp() const { return tp_mesh.defined(); }
};

struct MixedPrecision {
  std::optional<c10::ScalarType> param_dtype;
  std::optional<c10::ScalarType> reduce_dtype;
};

// Note [FSDP CPU offload]
// With CPUOffloadPolicy, `sharded`'s local tensor (and its gradient) lives in
// host memory, page-locked when asked, while the mesh, `unsharded` and every
// collective stay on the device: unshard copies the shards into the
// device-side send buffer (asynchronously from pinned memory, ordered before
// the all_gather on the same stream), reduce_gradients copies this rank's
// reduced rows back to the host (synchronously: the optimizer reads them on
// the host next). So the device holds only what a step computes with, and
// the optimizer steps on the host, as PyTorch's FSDP2 does.
// Note [FSDP streams]
// On CUDA ranks (the CUDA fake world, NCCL) a group's collectives run beside
// the compute, as PyTorch's FSDP2 runs them on its all-gather and
// reduce-scatter streams:
// - unshard() enqueues the copy-in and the all_gather on a side stream
//   (backends/async_region.h) and returns; wait_for_unshard() makes the
//   compute stream wait for it (an event: the host never blocks), copies the
//   gathered rows into the unsharded parameters there and registers them.
//   The all-gather is ordered after `params_written`, the mark the root's
//   pre-forward takes on the compute stream, not after everything enqueued
//   since: it reads only the sharded parameters, which the optimizer wrote
//   before that forward. So layer i + 1's all-gather, issued when the host
//   reaches its pre-forward (or prefetched), overlaps layer i's kernels,
//   which the host enqueued before. Without a mark (FSDPModule::unshard by
//   hand, or the post-forward pieces of an int reshard_after_forward, which
//   forward wrote) it waits for the whole compute stream.
// - reduce_gradients() enqueues the reduce-scatter (HSDP: and the
//   all_reduce, the division and the update of the sharded gradients) on the
//   side stream after the compute stream's work so far (the gradients) and
//   returns; the end of backward makes the compute stream wait for every
//   such reduction (wait_for_gradients()), so the optimizer reads finished
//   gradients, while the next layers' backward overlaps them.
// A rank thread has one side stream for both (the CUDA fake world's per-rank
// stream, whose allocations count against the rank's memory; on NCCL one of
// LibTorch's pool per thread), where PyTorch has one each: an
// all-gather prefetched during backward queues behind the reduce-scatter
// issued before it, and both still overlap the compute. The host-side
// protocol (rendezvous, traces, failures naming the module) is unchanged:
// a collective's host part runs where it is issued. Elsewhere (CPU ranks,
// Gloo, solo) there is no stream to move to and both complete at once.

struct Offload {
  bool enabled = false;
  bool pin_memory = false;  // CPUOffloadPolicy::pin_memory, when enabled
};

class ParamGroup {
 public:
  /// Shards the parameters named by `params` (owner, name, fqn filled in;
  /// the rest is computed) on every rank identically, without communication:
  /// every rank must hold the same full values (seeded init), as PyTorch's
  /// fully_shard assumes. The owners register the sharded DTensors.
  /// DTensor parameters are sharded as Note [FSDP over tensor parallelism].
  ParamGroup(std::vector<FsdpParam> params, DeviceMesh mesh, MixedPrecision mp, std::string module_name,
             Offload offload = {});

  const std::vector<FsdpParam>& params() const { return params_; }
  bool is_unsharded() const { return unsharded_; }

  /// Issues one all_gather of every parameter (in param_dtype); on CUDA its
  /// device work runs on a side stream ordered after `params_written` (null:
  /// after the whole compute stream), see Note [FSDP streams]; elsewhere it
  /// completes at once. No-op when unsharded or already issued.
  void unshard(const std::shared_ptr<const StreamMark>& params_written = nullptr);
  /// Completes unshard(): the compute stream waits for the all_gather, the
  /// unsharded tensors are filled and the module registers them. No-op when
  /// nothing is pending.
  void wait_for_unshard();
  /// The module registers the sharded DTensors again and the unsharded
  /// storage is freed (and any post-forward piece dropped). No-op when
  /// already sharded.
  void reshard();
  /// PyTorch's int reshard_after_forward: `mesh` is the group's ranks viewed
  /// as (-1, n); after forward each rank keeps its torch.chunk piece of the
  /// full parameters over its row of n ranks (reshard_to_post_forward), and
  /// the next unshard gathers over that row only.
  void set_post_forward_mesh(DeviceMesh mesh);
  /// reshard(), keeping this rank's post-forward piece (plain reshard()
  /// without a post-forward mesh). An all_gather still pending is dropped.
  void reshard_to_post_forward();
  /// One reduce_scatter (sum, in reduce_dtype; HSDP: then an all_reduce
  /// over the replicas; then / the data-parallel size) of the unsharded
  /// gradients, added to (or set as) the sharded parameters'
  /// gradients; the unsharded gradients are dropped. Parameters without a
  /// gradient contribute zeros (every rank moves the same bytes). Returns
  /// false, moving nothing, when no parameter has a gradient on this rank.
  /// On CUDA the reduction runs on a side stream until wait_for_gradients().
  bool reduce_gradients();
  /// The compute stream waits for the last reduce_gradients() (a no-op
  /// where it completed at once): the sharded gradients are final.
  void wait_for_gradients();
  /// The name failures give the module ("Transformer.layers.0").
  void set_module_name(std::string name) { module_name_ = std::move(name); }
  /// True when some unsharded parameter holds a gradient.
  bool has_unsharded_gradients() const;

 private:
  void register_params(bool unsharded);
  /// The mesh and placements of `p.sharded`: the group's, or for a tp
  /// parameter the joined (dp, tp) mesh (Note [FSDP over tensor parallelism]).
  std::pair<DeviceMesh, Placements> sharded_layout(const FsdpParam& p) const;
  /// The unsharded gradient as the local tensor FSDP reduce-scatters, or undefined.
  at::Tensor local_gradient(const FsdpParam& p) const;
  /// One rank's share of a bucket when the group's rows are split over `world`.
  int64_t padded_total(int64_t world) const;
  /// Fills the unsharded parameters from an all-gather over `world` ranks of
  /// their padded pieces, and registers them.
  void fill_unsharded(const at::Tensor& gathered, int64_t world);

  std::vector<FsdpParam> params_;
  DeviceMesh mesh_;
  MixedPrecision mp_;
  Offload offload_;
  c10::Device device_ = c10::kCPU;  // where unsharded tensors live and collectives run
  std::string module_name_;
  int shard_dim_ = 0;        // the mesh dim parameters are sharded on (the last)
  Placements placements_;    // (Shard(0)) or, HSDP, (Replicate(), Shard(0))
  int64_t world_ = 1;        // ranks along shard_dim_
  int64_t rank_ = 0;         // this rank's index along it
  int64_t padded_total_ = 0;  // padded_total(world_), computed once
  bool unsharded_ = false;
  DeviceMesh post_forward_mesh_;  // see set_post_forward_mesh; empty: none
  int64_t post_world_ = 0;        // its dim 1's size, and this rank's index there
  int64_t post_rank_ = 0;
  at::Tensor post_forward_;       // this rank's post-forward pieces, while resharded to them
  // An all_gather issued on the side stream and not yet waited for: its
  // output (world blocks) and the work that orders the compute stream after it.
  struct PendingGather {
    at::Tensor gathered;
    int64_t world = 0;
    WorkPtr done;
  };
  std::optional<PendingGather> pending_gather_;
  WorkPtr pending_reduce_;  // the last reduce_gradients() on the side stream
};

}  // namespace dtensor::fsdp
