// ParamGroup: sharding, all-gather, free and reduce-scatter of one FSDP group
// (Note [FSDP parameters]).
#include "core/fsdp/param_group.h"

#include <ATen/Functions.h>
#include <ATen/core/grad_mode.h>
#include <c10/core/StorageImpl.h>
#include <c10/util/Exception.h>
#include <torch/csrc/autograd/engine.h>

#include <optional>
#include <utility>

#include "backends/rank_memory.h"
#include "core/collectives.h"
#include "core/dtensor.h"
#include "core/dtensor_impl.h"
#include "core/parallel/module_params.h"
#include "core/redistribution_origin.h"

namespace dtensor::fsdp {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Frees `t`'s storage; the TensorImpl (and autograd's references) stay.
void free_storage(const at::Tensor& t) {
  c10::StorageImpl* storage = t.storage().unsafeGetStorageImpl();
  if (storage->nbytes() == 0) return;
  storage->set_data_ptr_noswap(at::DataPtr(nullptr, storage->device()));
  storage->set_nbytes(0);
}

// Allocates `t`'s storage again (contents undefined) when it was freed.
void restore_storage(const at::Tensor& t) {
  c10::StorageImpl* storage = t.storage().unsafeGetStorageImpl();
  const size_t nbytes = static_cast<size_t>(t.numel()) * t.element_size();
  if (storage->nbytes() == nbytes) return;
  storage->set_data_ptr_noswap(storage->allocator()->allocate(nbytes));
  storage->set_nbytes(nbytes);
}

// A [n, rows, row_numel] view of `blocks` holds a [extent, row_numel] tensor
// chunked into n blocks of `rows` rows (the last ones short or empty, the
// rest padding). These copy between the two block by block, without
// materialising the padded [n * rows, row_numel] tensor.
void blocks_to_dense(const at::Tensor& blocks, const at::Tensor& dense, int64_t rows) {
  const int64_t extent = dense.size(0);
  if (extent == 0 || rows == 0) return;
  const int64_t full = extent / rows, rest = extent % rows;
  if (full > 0) dense.narrow(0, 0, full * rows).view({full, rows, -1}).copy_(blocks.narrow(0, 0, full));
  if (rest > 0) dense.narrow(0, full * rows, rest).copy_(blocks[full].narrow(0, 0, rest));
}

void dense_to_blocks(const at::Tensor& dense, const at::Tensor& blocks, int64_t rows) {
  const int64_t extent = dense.size(0);
  if (extent == 0 || rows == 0) return;
  const int64_t full = extent / rows, rest = extent % rows;
  if (full > 0) blocks.narrow(0, 0, full).copy_(dense.narrow(0, 0, full * rows).reshape({full, rows, -1}));
  if (rest > 0) blocks[full].narrow(0, 0, rest).copy_(dense.narrow(0, full * rows, rest));
}

// Runs one of the group's collectives; a failure (a peer that died, a
// timeout) says which fully_shard module and collective it was in.
template <typename Fn>
void naming_failures(const std::string& module, const char* collective, int64_t rank, Fn&& fn) {
  try {
    fn();
  } catch (c10::Error& e) {
    const bool backward = torch::autograd::get_current_graph_task_exec_info() != nullptr;
    e.add_context("in fully_shard(" + module + ")'s " + collective + " on rank " + std::to_string(rank) +
                  (backward ? " (backward)" : " (forward)"));
    throw;
  }
}

}  // namespace

ParamGroup::ParamGroup(std::vector<FsdpParam> params, DeviceMesh mesh, MixedPrecision mp,
                       std::string module_name, Offload offload)
    : params_(std::move(params)),
      mesh_(std::move(mesh)),
      mp_(mp),
      offload_(offload),
      module_name_(std::move(module_name)) {
  TORCH_CHECK(!offload_.enabled || mesh_.device().is_cuda(), "fully_shard(", module_name_, ") on rank ",
              mesh_.global_rank(), ": CPUOffloadPolicy keeps the sharded parameters in host memory and copies ",
              "them to the device for each all_gather, but ", mesh_.to_string(), " is on ", mesh_.device(),
              "; offload only from CUDA ranks (DeviceMesh::init(c10::kCUDA, ...)), or leave offload_policy unset");
  shard_dim_ = mesh_.ndim() - 1;
  world_ = mesh_.size(shard_dim_);
  rank_ = mesh_.get_local_rank(shard_dim_);
  placements_ = mesh_.ndim() == 2 ? Placements{Replicate(), Shard(0)} : Placements{Shard(0)};
  at::NoGradGuard no_grad;
  const c10::ScalarType first_dtype =
      params_.empty() ? c10::ScalarType::Float : param(*params_.front().owner, params_.front().name).scalar_type();
  for (FsdpParam& p : params_) {
    const at::Tensor registered = param(*p.owner, p.name);
    // A tensor-parallel parameter: FSDP shards its local tensor (Note [FSDP
    // over tensor parallelism]).
    const at::Tensor full = is_dtensor(registered) ? DTensor(registered).local_tensor() : registered;
    p.global_shape = registered.sizes().vec();
    if (is_dtensor(registered)) {
      const DTensorSpec& spec = DTensor(registered).spec();
      p.tp_mesh = spec.mesh;
      p.tp_placements = spec.placements;
    }
    TORCH_CHECK(full.dim() >= 1, "fully_shard(", module_name_, "): parameter ", p.fqn,
                " is a scalar; FSDP shards dim 0, so register it with at least one dim");
    TORCH_CHECK(full.scalar_type() == first_dtype, "fully_shard(", module_name_, "): parameter ", p.fqn,
                " is ", full.scalar_type(), " but ", params_.front().fqn, " is ", first_dtype,
                "; one all-gather moves a group, so give its parameters one dtype");
    p.shape = full.sizes().vec();
    p.requires_grad = registered.requires_grad();
    p.padded_rows = ceil_div(p.shape[0], world_);
    p.row_numel = p.shape[0] == 0 ? 0 : full.numel() / p.shape[0];
    const int64_t start = std::min(rank_ * p.padded_rows, p.shape[0]);
    p.local_rows = std::min(p.padded_rows, p.shape[0] - start);
    at::Tensor local = full.detach().narrow(0, start, p.local_rows).clone();
    if (offload_.enabled) local = offload_.pin_memory ? local.cpu().pin_memory() : local.cpu();  // Note [FSDP CPU offload]
    FromLocalOptions options;
    options.shape = p.global_shape;
    const auto [sharded_mesh, sharded_placements] = sharded_layout(p);
    at::Tensor sharded = DTensor::from_local(local, sharded_mesh, sharded_placements, options);
    sharded.set_requires_grad(p.requires_grad);
    p.sharded = sharded;
    const auto dtype = mp_.param_dtype.value_or(full.scalar_type());
    p.unsharded_local = at::empty(p.shape, full.options().dtype(dtype));
    free_storage(p.unsharded_local);
    // A leaf either way: a plain tensor, or a DTensor aliasing the plain one.
    p.unsharded = p.is_tp() ? DTensor::from_local(p.unsharded_local, p.tp_mesh, p.tp_placements, options)
                            : p.unsharded_local;
    p.unsharded.set_requires_grad(p.requires_grad);
  }
  if (!params_.empty()) device_ = params_.front().unsharded_local.device();
  padded_total_ = padded_total(world_);
  register_params(/*unsharded=*/false);
}

std::pair<DeviceMesh, Placements> ParamGroup::sharded_layout(const FsdpParam& p) const {
  if (!p.is_tp()) return {mesh_, placements_};
  DeviceMesh joined;
  try {
    joined = DeviceMesh::concatenate({mesh_, p.tp_mesh});
  } catch (c10::Error& e) {
    e.add_context("fully_shard(" + module_name_ + ") of the tensor-parallel parameter " + p.fqn + " on " +
                  p.tp_mesh.to_string() + " over " + mesh_.to_string() +
                  ": slice both meshes from one mesh (mesh[\"dp\"] and mesh[\"tp\"])");
    throw;
  }
  TORCH_CHECK(p.tp_mesh.ndim() == 1, "fully_shard(", module_name_, "): parameter ", p.fqn, " is ",
              to_string(p.tp_placements), " on the ", p.tp_mesh.ndim(), "-D ", p.tp_mesh.to_string(),
              "; FSDP over tensor parallelism takes parameters on a 1-D tp mesh");
  // The pieces the tp placements cut dim 0 into: dp's shard must interleave them.
  int64_t split_factor = 1;
  for (size_t i = 0; i < p.tp_placements.size(); ++i) {
    if (p.tp_placements[i].splits_dim(0)) split_factor *= p.tp_mesh.size(static_cast<int>(i));
  }
  TORCH_CHECK(p.global_shape[0] % split_factor == 0, "fully_shard(", module_name_, ") on rank ",
              mesh_.global_rank(), ": the tensor-parallel parameter ", p.fqn, " of shape ",
              c10::IntArrayRef(p.global_shape), " is ", to_string(p.tp_placements), " on ",
              p.tp_mesh.to_string(), ", which splits its ", p.global_shape[0], " rows unevenly over ",
              split_factor, " ranks; FSDP shards each rank's rows again, and the layout is only exact ",
              "for equal tp pieces (a _StridedShard). Pad dim 0 to a multiple of ", split_factor);
  Placements placements = placements_;
  if (split_factor > 1) placements.back() = StridedShard(0, split_factor);
  placements.insert(placements.end(), p.tp_placements.begin(), p.tp_placements.end());
  return {joined, placements};
}

void ParamGroup::register_params(bool unsharded) {
  for (FsdpParam& p : params_) {
    const at::Tensor& value = unsharded ? p.unsharded : p.sharded;
    set_parameter(*p.owner, p.name, value);
    for (const auto& [owner, name] : p.aliases) set_parameter(*owner, name, value);
  }
}

void ParamGroup::unshard(const std::shared_ptr<const StreamMark>& params_written) {
  if (unsharded_ || pending_gather_ || params_.empty()) return;
  at::NoGradGuard no_grad;
  collectives::NoResultKeeper fsdp_gathers_always_run;  // not a checkpoint's to keep
  // What this rank sends, over which ranks: after a forward that resharded to
  // a smaller group, its pieces over that group (forward wrote them, so the
  // gather waits for the whole compute stream); else its padded shards, one
  // after another, over the whole group (on the device: Note [FSDP CPU offload]).
  const bool post_forward = post_forward_.defined();
  const DeviceMesh& group = post_forward ? post_forward_mesh_ : mesh_;
  const int group_dim = post_forward ? 1 : shard_dim_;
  const int64_t world = post_forward ? post_world_ : world_;
  std::unique_ptr<AsyncRegion> region;
  at::Tensor send;
  // The gather's buffers are on its own stream in FSDP2 (what a caching
  // allocator model needs to know: Note [Allocation log]).
  std::optional<ScopedAllocationStream> stream(std::in_place, kFsdpAllGatherStream);
  if (post_forward) {
    region = begin_async_region(device_, {post_forward_});
    send = post_forward_;
  } else {
    std::vector<at::Tensor> shards;
    for (const FsdpParam& p : params_) shards.push_back(dtensor_impl(p.sharded)->local());
    region = begin_async_region(device_, shards, params_written);
    const auto dtype = mp_.param_dtype.value_or(shards.front().scalar_type());
    send = at::zeros({padded_total_}, shards.front().options().dtype(dtype).device(device_));
    int64_t offset = 0;
    for (size_t i = 0; i < params_.size(); ++i) {
      const FsdpParam& p = params_[i];
      send.narrow(0, offset, p.local_rows * p.row_numel)
          .copy_(shards[i].reshape({-1}), /*non_blocking=*/offload_.enabled && offload_.pin_memory);
      offset += p.padded_numel();
    }
  }
  PendingGather pending;
  {
    ExplicitOriginScope origin(origin_cause::kFsdpUnshard, "fully_shard all_gather");
    naming_failures(module_name_, "all_gather of its parameters", mesh_.global_rank(), [&] {
      pending.gathered = collectives::all_gather_dim(send, group, group_dim, 0, send.numel() * world);
    });
  }
  stream.reset();  // the unsharded parameters are the compute stream's
  pending.world = world;
  post_forward_ = at::Tensor();
  if (region) pending.done = region->finish({pending.gathered});
  const bool completed = pending.done == nullptr;
  pending_gather_ = std::move(pending);
  if (completed) wait_for_unshard();
}

void ParamGroup::wait_for_unshard() {
  if (!pending_gather_) return;
  PendingGather pending = std::move(*pending_gather_);
  pending_gather_.reset();
  if (pending.done) pending.done->wait();
  at::NoGradGuard no_grad;
  fill_unsharded(pending.gathered, pending.world);
}

int64_t ParamGroup::padded_total(int64_t world) const {
  int64_t total = 0;
  for (const FsdpParam& p : params_) total += ceil_div(p.shape[0], world) * p.row_numel;
  return total;
}

void ParamGroup::fill_unsharded(const at::Tensor& gathered, int64_t world) {
  const int64_t total = padded_total(world);
  const at::Tensor blocks = gathered.view({world, total});
  int64_t offset = 0;
  for (FsdpParam& p : params_) {
    restore_storage(p.unsharded_local);
    const int64_t rows = ceil_div(p.shape[0], world);
    if (p.row_numel > 0) {
      // variable_data(): the copy must not bump the version autograd saved.
      blocks_to_dense(blocks.narrow(1, offset, rows * p.row_numel).view({world, rows, p.row_numel}),
                      p.unsharded_local.variable_data().view({p.shape[0], p.row_numel}), rows);
    }
    offset += rows * p.row_numel;
  }
  register_params(/*unsharded=*/true);
  unsharded_ = true;
}

void ParamGroup::set_post_forward_mesh(DeviceMesh mesh) {
  post_forward_mesh_ = std::move(mesh);
  post_world_ = post_forward_mesh_.size(1);
  post_rank_ = post_forward_mesh_.get_local_rank(1);
}

void ParamGroup::reshard_to_post_forward() {
  if (!unsharded_ || !post_forward_mesh_.defined()) return reshard();
  at::NoGradGuard no_grad;
  const at::Tensor& first = params_.front().unsharded_local;
  at::Tensor mine = at::zeros({padded_total(post_world_)}, first.options());
  int64_t offset = 0;
  for (const FsdpParam& p : params_) {
    const int64_t rows = ceil_div(p.shape[0], post_world_);
    const int64_t start = std::min(post_rank_ * rows, p.shape[0]);
    const int64_t count = std::min(rows, p.shape[0] - start);
    mine.narrow(0, offset, count * p.row_numel).copy_(p.unsharded_local.narrow(0, start, count).reshape({-1}));
    offset += rows * p.row_numel;
  }
  reshard();
  post_forward_ = std::move(mine);
}

void ParamGroup::reshard() {
  post_forward_ = at::Tensor();
  // Prefetched but not used: drop it (its buffer was recorded on the compute
  // stream, so the allocator reuses it only after the gather is done).
  pending_gather_.reset();
  if (!unsharded_) return;
  register_params(/*unsharded=*/false);
  for (FsdpParam& p : params_) free_storage(p.unsharded_local);
  unsharded_ = false;
}

bool ParamGroup::has_unsharded_gradients() const {
  for (const FsdpParam& p : params_) {
    if (p.unsharded.grad().defined()) return true;
  }
  return false;
}

at::Tensor ParamGroup::local_gradient(const FsdpParam& p) const {
  const at::Tensor grad = p.unsharded.grad();
  if (!grad.defined() || !p.is_tp()) return grad;
  DTensor dgrad(grad);
  // A Partial gradient (a replicated parameter used on sharded activations)
  // is reduced over tp first, as PyTorch's FSDP does.
  if (dgrad.placements() != p.tp_placements) dgrad = dgrad.redistribute(p.tp_placements);
  return dgrad.local_tensor();
}

bool ParamGroup::reduce_gradients() {
  if (!has_unsharded_gradients()) return false;
  wait_for_gradients();  // a reduction still running updates the same sharded gradients
  at::NoGradGuard no_grad;
  collectives::NoResultKeeper fsdp_reductions_always_run;
  const at::Tensor& first = dtensor_impl(params_.front().sharded)->local();
  std::vector<at::Tensor> gradients;  // the tensors that hold their bytes (a DTensor's local one)
  for (const FsdpParam& p : params_) {
    const at::Tensor grad = p.unsharded.grad();
    gradients.push_back(grad.defined() && is_dtensor(grad) ? dtensor_impl(grad)->local() : grad);
  }
  // After the compute stream's work so far, which produced the gradients.
  std::unique_ptr<AsyncRegion> region = begin_async_region(device_, gradients);
  const auto reduce_dtype = mp_.reduce_dtype.value_or(mp_.param_dtype.value_or(first.scalar_type()));
  // [world, padded_total]: row r holds what rank r keeps.
  at::Tensor send = at::zeros({world_, padded_total_}, first.options().dtype(reduce_dtype).device(device_));
  int64_t offset = 0;
  for (FsdpParam& p : params_) {
    const at::Tensor grad = local_gradient(p);
    if (grad.defined()) {
      if (p.row_numel > 0) {
        dense_to_blocks(grad.reshape({p.shape[0], p.row_numel}),
                        send.narrow(1, offset, p.padded_numel()).view({world_, p.padded_rows, p.row_numel}),
                        p.padded_rows);
      }
      p.unsharded.mutable_grad() = at::Tensor();
    }
    offset += p.padded_numel();
  }
  at::Tensor mine;
  {
    // As FSDP2: the input is copied in on the compute stream, the output is
    // the reduce-scatter stream's (what a caching allocator model needs to
    // know: Note [Allocation log]).
    ScopedAllocationStream stream(kFsdpReduceScatterStream);
    ExplicitOriginScope origin(origin_cause::kFsdpReduceGrad, "fully_shard reduce_scatter");
    // Sum (every backend has it; Gloo has no avg), then the average.
    naming_failures(module_name_, "reduce_scatter of its gradients", mesh_.global_rank(), [&] {
      mine = collectives::reduce_scatter_dim(send.view({-1}), mesh_, shard_dim_, 0, ReduceOp::kSum);
    });
    // HSDP: the replicas of each shard sum theirs too.
    if (mesh_.ndim() == 2) {
      naming_failures(module_name_, "all_reduce of its gradients over the replicas", mesh_.global_rank(),
                      [&] { collectives::all_reduce_(mine, mesh_, 0, ReduceOp::kSum); });
    }
  }
  mine.div_(static_cast<double>(mesh_.size()));
  offset = 0;
  for (FsdpParam& p : params_) {
    if (p.requires_grad) {
      std::vector<int64_t> local_shape = p.shape;
      local_shape[0] = p.padded_rows;
      at::Tensor local = mine.narrow(0, offset, p.padded_numel())
                             .view(local_shape)
                             .narrow(0, 0, p.local_rows)
                             .to(first.device(), first.scalar_type(), /*non_blocking=*/false, /*copy=*/true);
      at::Tensor& grad = p.sharded.mutable_grad();
      if (grad.defined()) {
        dtensor_impl(grad)->local().add_(local);
      } else {
        // Laid out as the sharded parameter (its spec, not the meshes joined again).
        const DTensorSpec& spec = dtensor_impl(p.sharded)->spec();
        FromLocalOptions options;
        options.shape = spec.meta.shape;
        grad = DTensor::from_local(local, spec.mesh, spec.placements, options);
      }
    }
    offset += p.padded_numel();
  }
  if (region) {
    std::vector<at::Tensor> written;
    for (const FsdpParam& p : params_) {
      if (p.sharded.grad().defined()) written.push_back(dtensor_impl(p.sharded.grad())->local());
    }
    pending_reduce_ = region->finish(written);
  }
  return true;
}

void ParamGroup::wait_for_gradients() {
  if (WorkPtr pending = std::move(pending_reduce_)) pending->wait();
}

}  // namespace dtensor::fsdp
