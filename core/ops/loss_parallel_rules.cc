// Loss parallelism: inside dtensor::loss_parallel() (RuleMode::kLossParallel),
// _log_softmax, _log_softmax_backward_data and nll_loss(2d) forward/backward
// on logits sharded on the class dim run without gathering the logits, as
// PyTorch's torch.distributed.tensor.parallel.loss_parallel. Outside the mode
// the rules registered before this family decide (math_rules, loss_rules).
//   cross_entropy(x [S(1)] f[N,C], target) -> R: 3 all_reduce (max, sum exp, picked logit); backward: none
#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <c10/util/Exception.h>

#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/collectives.h"
#include "core/dispatch/dispatch_mode.h"
#include "core/ops/arg_parsing.h"
#include "core/ops/builtin_rules.h"

namespace dtensor {
namespace {

// Note [Loss parallel]
// The logits x [N, C, ...] are Shard(1) (Shard(0) for a 1-D x [C]) on a 1-D
// mesh; the target and the class weights are whole on every rank (Replicate,
// or plain tensors taken as Replicate). Forward, on local classes only:
//   _log_softmax: m = all_reduce(max, amax(x)); s = all_reduce(sum, sum exp(x - m));
//                 out = x - m - log s, still Shard(1);
//   nll_loss:     each rank picks -w[t] * out[t] for the targets t it holds
//                 (zero elsewhere), all_reduce(sum) of the picks; the total
//                 weight is computed from the whole target; output Replicate.
// That is 3 all_reduces for cross_entropy. Backward has no collective:
// nll_loss_backward returns the gradient with respect to the LOGITS,
// (exp(out) - onehot(t)) * w[t] * grad (scaled by 1 / total weight for
// "mean"), Shard(1), and _log_softmax_backward_data passes its gradient
// through. So, as in PyTorch, nll_loss_backward inside the mode assumes its
// input is a log_softmax output (cross_entropy); a bare nll_loss on other
// log-probabilities gets a wrong gradient. PyTorch supports only 1-D meshes
// and replicated targets/weights and raises otherwise; so do we. Unlike
// PyTorch's, the weighted backward also accepts an ignore_index outside
// [0, C) (PyTorch's gather fails on it).

constexpr int64_t kReductionNone = 0;
constexpr int64_t kReductionMean = 1;
constexpr int64_t kReductionSum = 2;

constexpr const char* kLogSoftmax = "dtensor::loss_parallel_log_softmax";
constexpr const char* kLogSoftmaxBackward = "dtensor::loss_parallel_log_softmax_backward";
constexpr const char* kNllForward = "dtensor::loss_parallel_nll_loss_forward";
constexpr const char* kNllBackward = "dtensor::loss_parallel_nll_loss_backward";

const char* const kHowTo =
    "; inside dtensor::loss_parallel() the logits must be a DTensor sharded on the class dim on a 1-D "
    "mesh (e.g. the output of ColwiseParallel().use_local_output(false) on the output projection, or "
    "x.redistribute({Shard(class_dim)})); otherwise compute the loss outside the loss_parallel scope";

Placements replicated(const OpCall& call) { return Placements(static_cast<size_t>(call.mesh_ndim()), Replicate()); }

// Checks that input `i` is Shard(dim) on a 1-D mesh (Note [Loss parallel]).
void check_class_sharded(const OpCall& call, size_t i, int64_t dim) {
  TORCH_CHECK(call.mesh_ndim() == 1, call.describe(), ": loss_parallel supports a 1-D mesh only (as PyTorch), got ",
              "a ", call.mesh_ndim(), "-D mesh ", call.mesh.to_string(),
              "; pass the tensor-parallel sub-mesh (mesh[\"tp\"]) to the logits' DTensor", kHowTo);
  TORCH_CHECK(call.inputs[i].placements[0].is_shard(dim), call.describe(),
              ": loss_parallel expects the input sharded on dim ", dim, " (the class dim), got ",
              to_string(call.inputs[i].placements), kHowTo);
}

// Checks that the tensor at schema argument `arg` (if any) is replicated.
void check_replicated_arg(const OpCall& call, size_t arg, const char* what) {
  const int64_t i = detail::input_at_arg(call, arg);
  if (i < 0) return;
  for (const Placement& p : call.inputs[static_cast<size_t>(i)].placements) {
    TORCH_CHECK(p.is_replicate(), call.describe(), ": loss_parallel expects the ", what,
                " replicated (a plain tensor or a Replicate DTensor), got ",
                to_string(call.inputs[static_cast<size_t>(i)].placements),
                "; redistribute it to Replicate first");
  }
}

int64_t class_dim(int64_t ndim) { return ndim >= 2 ? 1 : 0; }

// ------------------------------------------------------------- log_softmax

// _log_softmax(self, dim, half_to_float).
ShardingPlan log_softmax_plan(const OpCall& call) {
  const int64_t dim = detail::wrap_dim(detail::int_arg(call, 1, -1), detail::input_ndim(call, 0));
  check_class_sharded(call, 0, dim);
  ShardingPlan plan;
  plan.input_placements = {call.inputs[0].placements};
  plan.output_placements = {call.inputs[0].placements};
  plan.local_kernel = kLogSoftmax;
  return plan;
}

void log_softmax_kernel(const LocalCall& local, std::vector<c10::IValue>* stack) {
  const DeviceMesh& mesh = local.call.mesh;
  at::Tensor x = (*stack)[0].toTensor();
  const int64_t dim = detail::wrap_dim((*stack)[1].toInt(), x.dim());
  const bool reduced_float = x.scalar_type() == at::kHalf || x.scalar_type() == at::kBFloat16;
  x = x.to(reduced_float ? at::kFloat : x.scalar_type()).contiguous();
  at::Tensor x_max;
  if (x.size(dim) == 0) {  // this rank holds no class
    std::vector<int64_t> shape = x.sizes().vec();
    shape[static_cast<size_t>(dim)] = 1;
    x_max = at::full(shape, -std::numeric_limits<double>::infinity(), x.options());
  } else {
    x_max = x.amax(at::IntArrayRef{dim}, /*keepdim=*/true);
  }
  x_max = collectives::all_reduce(x_max, mesh, /*mesh_dim=*/0, ReduceOp::kMax);
  const at::Tensor shifted = x - x_max;
  at::Tensor sum_exp = shifted.exp().sum(at::IntArrayRef{dim}, /*keepdim=*/true);
  sum_exp = collectives::all_reduce(sum_exp, mesh, /*mesh_dim=*/0, ReduceOp::kSum);
  *stack = {(shifted - at::log(sum_exp)).to(local.output_metas[0].dtype)};
}

// _log_softmax_backward_data(grad_output, output, dim, input_dtype): the
// gradient passes through (nll_loss_backward already gave the logits'
// gradient, Note [Loss parallel]).
ShardingPlan log_softmax_backward_plan(const OpCall& call) {
  ShardingPlan plan;
  for (const DTensorSpec& spec : call.inputs) plan.input_placements.push_back(spec.placements);
  plan.output_placements = {call.inputs[0].placements};
  plan.local_kernel = kLogSoftmaxBackward;
  return plan;
}

void log_softmax_backward_kernel(const LocalCall& local, std::vector<c10::IValue>* stack) {
  (void)local;
  *stack = {(*stack)[0].toTensor().to((*stack)[3].toScalarType())};
}

// ---------------------------------------------------------------- nll_loss

// Global class offset and local class count of `spec` (Shard(class) on a 1-D mesh).
std::pair<int64_t, int64_t> class_block(const DTensorSpec& spec, int64_t channel) {
  return {spec.global_offset()[static_cast<size_t>(channel)], spec.local_shape()[static_cast<size_t>(channel)]};
}

// Indices of `safe_target` (global class ids, unsqueezed at the class dim)
// relative to this rank's classes, and where they fall outside them.
std::pair<at::Tensor, at::Tensor> local_targets(const at::Tensor& safe_target, int64_t offset, int64_t count) {
  at::Tensor idx = safe_target - offset;
  at::Tensor outside = idx.lt(0).logical_or_(idx.ge(count));
  return {idx.masked_fill(outside, 0), outside};
}

// w[target] for every target entry (0 where ignored), shaped like `safe_target`.
at::Tensor weight_at(const at::Tensor& weight, const at::Tensor& safe_target) {
  return weight.index_select(0, safe_target.reshape(-1)).view(safe_target.sizes());
}

struct NllForwardArgs {
  static constexpr size_t kSelf = 0, kTarget = 1, kWeight = 2, kReduction = 3, kIgnore = 4;
};

ShardingPlan nll_forward_plan(const OpCall& call) {
  const int64_t channel = class_dim(detail::input_ndim(call, 0));
  check_class_sharded(call, 0, channel);
  check_replicated_arg(call, NllForwardArgs::kTarget, "target");
  check_replicated_arg(call, NllForwardArgs::kWeight, "class weight");
  ShardingPlan plan;
  plan.input_placements.assign(call.inputs.size(), replicated(call));
  plan.input_placements[0] = call.inputs[0].placements;
  plan.output_placements.assign(call.outputs.size(), replicated(call));
  plan.local_kernel = kNllForward;
  return plan;
}

void nll_forward_kernel(const LocalCall& local, std::vector<c10::IValue>* stack) {
  using A = NllForwardArgs;
  const std::vector<c10::IValue>& args = *stack;
  at::Tensor x = args[A::kSelf].toTensor();
  const at::Tensor target = args[A::kTarget].toTensor();
  const c10::IValue& weight_arg = args[A::kWeight];
  const at::Tensor weight = weight_arg.isTensor() ? weight_arg.toTensor() : at::Tensor();
  const int64_t reduction = args[A::kReduction].toInt();
  const int64_t ignore_index = args[A::kIgnore].toInt();
  const int64_t channel = class_dim(x.dim());
  const auto [offset, count] = class_block(local.call.inputs[0], channel);

  if (weight.defined()) {
    std::vector<int64_t> shape(static_cast<size_t>(x.dim()), 1);
    shape[static_cast<size_t>(channel)] = count;
    x = x * weight.narrow(0, offset, count).view(shape);
  }
  const at::Tensor valid = target.ne(ignore_index);
  const at::Tensor safe_target = at::where(valid, target, at::zeros_like(target)).unsqueeze(channel);
  const auto [idx, outside] = local_targets(safe_target, offset, count);
  at::Tensor picked = count == 0 ? at::zeros(idx.sizes(), x.options())
                                 : at::gather(x, channel, idx).masked_fill(outside, 0);
  picked = collectives::all_reduce(picked.contiguous(), local.call.mesh, /*mesh_dim=*/0, ReduceOp::kSum);
  at::Tensor result = picked.squeeze(channel).neg().masked_fill(valid.logical_not(), 0);

  const c10::ScalarType out_dtype = local.output_metas[0].dtype;
  const c10::ScalarType weight_dtype = local.output_metas[1].dtype;
  if (reduction == kReductionNone && x.dim() > 1) {
    *stack = {result.to(out_dtype), at::scalar_tensor(0, x.options().dtype(weight_dtype))};
    return;
  }
  at::Tensor total_weight;
  if (weight.defined()) {
    total_weight = weight_at(weight, safe_target).squeeze(channel).masked_fill(valid.logical_not(), 0).sum();
  } else {
    total_weight = valid.sum().to(x.scalar_type());
  }
  if (reduction == kReductionSum) {
    result = result.sum();
  } else if (reduction == kReductionMean) {
    result = result.sum() / total_weight;
  }
  *stack = {result.to(out_dtype), total_weight.to(weight_dtype)};
}

struct NllBackwardArgs {
  static constexpr size_t kGrad = 0, kSelf = 1, kTarget = 2, kWeight = 3, kReduction = 4, kIgnore = 5,
                          kTotalWeight = 6;
};

ShardingPlan nll_backward_plan(const OpCall& call) {
  using A = NllBackwardArgs;
  const int64_t self = detail::input_at_arg(call, A::kSelf);
  TORCH_INTERNAL_ASSERT(self >= 0, call.name, ": self is not a tensor");
  const int64_t channel = class_dim(detail::input_ndim(call, static_cast<size_t>(self)));
  check_class_sharded(call, static_cast<size_t>(self), channel);
  check_replicated_arg(call, A::kTarget, "target");
  check_replicated_arg(call, A::kWeight, "class weight");
  ShardingPlan plan;
  plan.input_placements.assign(call.inputs.size(), replicated(call));  // grad_output, total_weight too
  plan.input_placements[static_cast<size_t>(self)] = call.inputs[static_cast<size_t>(self)].placements;
  plan.output_placements = {call.inputs[static_cast<size_t>(self)].placements};
  plan.local_kernel = kNllBackward;
  return plan;
}

void nll_backward_kernel(const LocalCall& local, std::vector<c10::IValue>* stack) {
  using A = NllBackwardArgs;
  const std::vector<c10::IValue>& args = *stack;
  at::Tensor grad = args[A::kGrad].toTensor();
  const at::Tensor x = args[A::kSelf].toTensor();
  const at::Tensor target = args[A::kTarget].toTensor();
  const c10::IValue& weight_arg = args[A::kWeight];
  const at::Tensor weight = weight_arg.isTensor() ? weight_arg.toTensor() : at::Tensor();
  const int64_t reduction = args[A::kReduction].toInt();
  const int64_t ignore_index = args[A::kIgnore].toInt();
  const at::Tensor total_weight = args[A::kTotalWeight].toTensor();
  const int64_t channel = class_dim(x.dim());
  const int64_t self = detail::input_at_arg(local.call, A::kSelf);
  const auto [offset, count] = class_block(local.call.inputs[static_cast<size_t>(self)], channel);

  if (reduction == kReductionMean) grad = grad / total_weight;
  const at::Tensor valid = target.ne(ignore_index).unsqueeze(channel);
  const at::Tensor safe_target = at::where(valid, target.unsqueeze(channel), at::scalar_tensor(0, target.options()));
  const auto [idx, outside] = local_targets(safe_target, offset, count);
  at::Tensor onehot = at::zeros_like(x);
  if (count > 0) onehot.scatter_(channel, idx, outside.logical_not().to(x.scalar_type()));
  if (x.dim() > grad.dim() && grad.dim() > 0) grad = grad.unsqueeze(channel);
  if (weight.defined()) grad = grad * weight_at(weight, safe_target);
  grad = at::where(valid, grad, at::scalar_tensor(0, grad.options()));
  *stack = {((at::exp(x) - onehot) * grad).to(local.output_metas[0].dtype)};
}

// Uses `loss_parallel_plan` inside the mode and the rule registered before
// for `name` outside it.
void add_in_mode(ShardingRegistry& registry, const std::string& name,
                 ShardingPlan (*loss_parallel_plan)(const OpCall&)) {
  std::optional<ShardingRule> outside = registry.find(name);
  TORCH_INTERNAL_ASSERT(outside.has_value(), name, ": loss_parallel_rules must register after its base rule");
  registry.add({name}, [outside = *outside, loss_parallel_plan](const OpCall& call) {
    return RuleModeGuard::active(RuleMode::kLossParallel) ? loss_parallel_plan(call) : outside(call);
  });
}

}  // namespace

void register_loss_parallel_rules(ShardingRegistry& registry) {
  add_in_mode(registry, "aten::_log_softmax", log_softmax_plan);
  add_in_mode(registry, "aten::_log_softmax_backward_data", log_softmax_backward_plan);
  for (const char* name : {"aten::nll_loss_forward", "aten::nll_loss2d_forward"}) {
    add_in_mode(registry, name, nll_forward_plan);
  }
  for (const char* name : {"aten::nll_loss_backward", "aten::nll_loss2d_backward"}) {
    add_in_mode(registry, name, nll_backward_plan);
  }
  registry.add_local_kernel(kLogSoftmax, log_softmax_kernel);
  registry.add_local_kernel(kLogSoftmaxBackward, log_softmax_backward_kernel);
  registry.add_local_kernel(kNllForward, nll_forward_kernel);
  registry.add_local_kernel(kNllBackward, nll_backward_kernel);
}

const std::vector<std::string>& loss_parallel_plain_replicated_ops() {
  static const auto* names = new std::vector<std::string>{
      "aten::nll_loss_forward", "aten::nll_loss2d_forward", "aten::nll_loss_backward", "aten::nll_loss2d_backward"};
  return *names;
}

}  // namespace dtensor
