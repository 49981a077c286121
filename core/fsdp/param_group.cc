// ParamGroup: sharding, all-gather, free and reduce-scatter of one FSDP group
// (Note [FSDP parameters]).
#include "core/fsdp/param_group.h"

#include <ATen/Functions.h>
#include <ATen/core/grad_mode.h>
#include <c10/core/StorageImpl.h>
#include <c10/util/Exception.h>
#include <torch/csrc/autograd/engine.h>

#include <utility>

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
                       std::string module_name)
    : params_(std::move(params)), mesh_(std::move(mesh)), mp_(mp), module_name_(std::move(module_name)) {
  shard_dim_ = mesh_.ndim() - 1;
  world_ = mesh_.size(shard_dim_);
  rank_ = mesh_.get_local_rank(shard_dim_);
  placements_ = mesh_.ndim() == 2 ? Placements{Replicate(), Shard(0)} : Placements{Shard(0)};
  at::NoGradGuard no_grad;
  const c10::ScalarType first_dtype =
      params_.empty() ? c10::ScalarType::Float : param(*params_.front().owner, params_.front().name).scalar_type();
  for (FsdpParam& p : params_) {
    const at::Tensor full = param(*p.owner, p.name);
    TORCH_CHECK(!is_dtensor(full), "fully_shard(", module_name_, ") on rank ", mesh_.global_rank(),
                ": parameter ", p.fqn, " is already a DTensor (", DTensor(full).spec().to_string(),
                "); FSDP over tensor-parallel parameters (_StridedShard) is not supported yet: "
                "apply fully_shard to plain parameters");
    TORCH_CHECK(full.dim() >= 1, "fully_shard(", module_name_, "): parameter ", p.fqn,
                " is a scalar; FSDP shards dim 0, so register it with at least one dim");
    TORCH_CHECK(full.scalar_type() == first_dtype, "fully_shard(", module_name_, "): parameter ", p.fqn,
                " is ", full.scalar_type(), " but ", params_.front().fqn, " is ", first_dtype,
                "; one all-gather moves a group, so give its parameters one dtype");
    p.shape = full.sizes().vec();
    p.requires_grad = full.requires_grad();
    p.padded_rows = ceil_div(p.shape[0], world_);
    p.row_numel = p.shape[0] == 0 ? 0 : full.numel() / p.shape[0];
    const int64_t start = std::min(rank_ * p.padded_rows, p.shape[0]);
    p.local_rows = std::min(p.padded_rows, p.shape[0] - start);
    at::Tensor local = full.detach().narrow(0, start, p.local_rows).clone();
    FromLocalOptions options;
    options.shape = p.shape;
    at::Tensor sharded = DTensor::from_local(local, mesh_, placements_, options);
    sharded.set_requires_grad(p.requires_grad);
    p.sharded = sharded;
    const auto dtype = mp_.param_dtype.value_or(full.scalar_type());
    p.unsharded = at::empty(p.shape, full.options().dtype(dtype));
    p.unsharded.set_requires_grad(p.requires_grad);
    free_storage(p.unsharded);
    padded_total_ += p.padded_numel();
  }
  register_params(/*unsharded=*/false);
}

void ParamGroup::register_params(bool unsharded) {
  for (FsdpParam& p : params_) {
    const at::Tensor& value = unsharded ? p.unsharded : p.sharded;
    set_parameter(*p.owner, p.name, value);
    for (const auto& [owner, name] : p.aliases) set_parameter(*owner, name, value);
  }
}

void ParamGroup::unshard() {
  if (unsharded_ || params_.empty()) return;
  at::NoGradGuard no_grad;
  const at::Tensor& first = dtensor_impl(params_.front().sharded)->local();
  const auto dtype = mp_.param_dtype.value_or(first.scalar_type());
  // This rank's padded shards, one after another.
  at::Tensor send = at::zeros({padded_total_}, first.options().dtype(dtype));
  int64_t offset = 0;
  for (const FsdpParam& p : params_) {
    const at::Tensor& local = dtensor_impl(p.sharded)->local();
    send.narrow(0, offset, p.local_rows * p.row_numel).copy_(local.reshape({-1}));
    offset += p.padded_numel();
  }
  at::Tensor gathered;
  {
    ExplicitOriginScope origin(origin_cause::kFsdpUnshard, "fully_shard all_gather");
    naming_failures(module_name_, "all_gather of its parameters", mesh_.global_rank(), [&] {
      gathered = collectives::all_gather_dim(send, mesh_, shard_dim_, 0, padded_total_ * world_);
    });
  }
  const at::Tensor blocks = gathered.view({world_, padded_total_});
  offset = 0;
  for (FsdpParam& p : params_) {
    restore_storage(p.unsharded);
    std::vector<int64_t> padded_shape = p.shape;
    padded_shape[0] = p.padded_rows * world_;
    // variable_data(): the copy must not bump the version autograd saved.
    p.unsharded.variable_data().copy_(
        blocks.narrow(1, offset, p.padded_numel()).reshape(padded_shape).narrow(0, 0, p.shape[0]));
    offset += p.padded_numel();
  }
  register_params(/*unsharded=*/true);
  unsharded_ = true;
}

void ParamGroup::reshard() {
  if (!unsharded_) return;
  register_params(/*unsharded=*/false);
  for (FsdpParam& p : params_) free_storage(p.unsharded);
  unsharded_ = false;
}

bool ParamGroup::has_unsharded_gradients() const {
  for (const FsdpParam& p : params_) {
    if (p.unsharded.grad().defined()) return true;
  }
  return false;
}

bool ParamGroup::reduce_gradients() {
  if (!has_unsharded_gradients()) return false;
  at::NoGradGuard no_grad;
  const at::Tensor& first = dtensor_impl(params_.front().sharded)->local();
  const auto reduce_dtype = mp_.reduce_dtype.value_or(mp_.param_dtype.value_or(first.scalar_type()));
  // [world, padded_total]: row r holds what rank r keeps.
  at::Tensor send = at::zeros({world_, padded_total_}, first.options().dtype(reduce_dtype));
  int64_t offset = 0;
  for (FsdpParam& p : params_) {
    const at::Tensor grad = p.unsharded.grad();
    if (grad.defined()) {
      std::vector<int64_t> padded_shape = p.shape;
      padded_shape[0] = p.padded_rows * world_;
      at::Tensor padded = at::zeros(padded_shape, send.options());
      padded.narrow(0, 0, p.shape[0]).copy_(grad);
      send.narrow(1, offset, p.padded_numel()).copy_(padded.view({world_, p.padded_numel()}));
      p.unsharded.mutable_grad() = at::Tensor();
    }
    offset += p.padded_numel();
  }
  at::Tensor mine;
  {
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
                             .to(first.scalar_type(), /*non_blocking=*/false, /*copy=*/true);
      at::Tensor& grad = p.sharded.mutable_grad();
      if (grad.defined()) {
        dtensor_impl(grad)->local().add_(local);
      } else {
        FromLocalOptions options;
        options.shape = p.shape;
        grad = DTensor::from_local(local, mesh_, placements_, options);
      }
    }
    offset += p.padded_numel();
  }
  return true;
}

}  // namespace dtensor::fsdp
