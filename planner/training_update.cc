// DDP-style and ZeRO-1 updates. See training_update.h.
#include "planner/training_update.h"

#include <ATen/Functions.h>
#include <c10/util/Exception.h>
#include <torch/optim/adam.h>
#include <torch/optim/sgd.h>

#include "core/collectives.h"
#include "core/dtensor.h"
#include "core/parallel/data_parallel.h"

namespace dtensor::planner {
namespace {

std::unique_ptr<torch::optim::Optimizer> make(Optimizer kind, std::vector<at::Tensor> params) {
  switch (kind) {
    case Optimizer::kAdam:
      return std::make_unique<torch::optim::Adam>(std::move(params), torch::optim::AdamOptions(1e-3));
    case Optimizer::kSgdMomentum:
      return std::make_unique<torch::optim::SGD>(std::move(params), torch::optim::SGDOptions(1e-3).momentum(0.9));
    case Optimizer::kSgd:
      return std::make_unique<torch::optim::SGD>(std::move(params), torch::optim::SGDOptions(1e-3));
  }
  TORCH_CHECK(false, "planner: unknown optimizer");
}

at::Tensor local_of(const at::Tensor& t) { return is_dtensor(t) ? DTensor(t).local_tensor() : t; }

}  // namespace

TrainingUpdate::TrainingUpdate(torch::nn::Module& model, const DeviceMesh& dp_mesh, const PlanConfig& plan)
    : model_(model), dp_mesh_(dp_mesh), zero1_(plan.zero1 && dp_mesh.size() > 1), fsdp_(plan.fsdp) {
  if (!zero1_) {
    optimizer_ = make(plan.optimizer, model.parameters());
    return;
  }
  int64_t numel = 0;
  for (const at::Tensor& p : model.parameters()) {
    locals_.push_back(local_of(p));
    numel += locals_.back().numel();
  }
  TORCH_CHECK(!locals_.empty(), "planner: ZeRO-1 over a model without parameters");
  const int64_t dp = dp_mesh.size(), shard = (numel + dp - 1) / dp;
  const at::Tensor& first = locals_.front();
  shard_ = at::zeros({shard}, first.options().requires_grad(false));
  shard_.set_requires_grad(true);
  optimizer_ = make(plan.optimizer, {shard_});
}

TrainingUpdate::~TrainingUpdate() = default;

void TrainingUpdate::warm_up() {
  // Without grad: creating gradients is no forward pass (Note [Skipped
  // boundaries] would warn about a parallelized module's parameters).
  at::NoGradGuard no_grad;
  for (at::Tensor& p : model_.parameters()) p.mutable_grad() = at::zeros_like(p);
  step();
  optimizer_->zero_grad(/*set_to_none=*/false);
  for (at::Tensor& p : model_.parameters()) p.mutable_grad().zero_();
}

void TrainingUpdate::step() {
  if (zero1_) {
    zero1_step();
    return;
  }
  if (dp_mesh_.size() > 1 && !fsdp_) average_gradients(model_, dp_mesh_);
  optimizer_->step();
}

// Note [ZeRO-1 update]
// The local gradients are flattened into one bucket padded to dp * shard
// elements; one reduce_scatter (sum, then / dp) leaves this rank the average
// of its shard, the optimizer updates the shard (its state is 1/dp of the
// model's), and one all_gather of the shards rebuilds the flat parameters,
// copied back into each parameter's local tensor. Same ring bytes as the
// all_reduce of the DDP-style update, (dp - 1) / dp of the optimizer state
// saved, one flat parameter buffer more while the gather runs.
void TrainingUpdate::zero1_step() {
  at::NoGradGuard no_grad;
  const int64_t dp = dp_mesh_.size(), shard = shard_.numel();
  std::vector<at::Tensor> grads;
  for (const at::Tensor& p : model_.parameters()) {
    const at::Tensor g = p.grad();
    grads.push_back(g.defined() ? local_of(g) : at::zeros({local_of(p).numel()}, shard_.options()));
  }
  const int64_t numel = shard * dp;
  const at::Tensor bucket = flatten_bucket(grads, numel);
  // sum, then / dp: every backend has sum (Gloo has no avg)
  at::Tensor mine = collectives::reduce_scatter_dim(bucket, dp_mesh_, 0, /*dim=*/0, ReduceOp::kSum);
  mine.div_(static_cast<double>(dp));
  shard_.mutable_grad() = mine;
  optimizer_->step();
  unflatten_bucket(collectives::all_gather_dim(shard_.detach(), dp_mesh_, 0, /*dim=*/0, numel), locals_);
}

}  // namespace dtensor::planner
