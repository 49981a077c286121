// Losses: nll_loss / nll_loss2d forward and backward (cross_entropy is
// log_softmax + nll_loss), mse_loss and its backward. Sharding any dim but
// the class dim costs nothing: reduction "none" keeps the shard, "sum" gives
// Partial(sum), "mean" Partial(avg) (see Note [Mean losses over shards]).
//   nll_loss_forward(x [S(0)] f[N,C], target [S(0)], mean) -> P(avg), total_weight P(sum)
//   nll_loss_forward(x [S(1)] f[N,C], ...) -> x gathered first (classes must be whole)
#include <ATen/Functions.h>
#include <c10/util/Exception.h>

#include "core/ops/arg_parsing.h"
#include "core/ops/builtin_rules.h"
#include "core/ops/strategy_builders.h"

namespace dtensor {
namespace {

using detail::placement_of;

// at::Reduction values.
constexpr int64_t kReductionNone = 0;
constexpr int64_t kReductionMean = 1;
constexpr int64_t kReductionSum = 2;

int64_t channel_dim(const OpCall& call, size_t self_input) {
  return detail::input_ndim(call, self_input) >= 2 ? 1 : 0;
}

// Target dim lined up with self dim `d` (targets lack the class dim).
int64_t target_dim(int64_t d, int64_t channel) { return d < channel ? d : d - 1; }

// Note [Mean losses over shards]
// Sharded over the batch, each rank holds the sum and the total weight of its
// own rows. PyTorch DTensor returns Partial(avg) of the local means, exact
// when every rank has the same total weight (even shards, no class weights,
// no ignore_index hits), and so do we when the target arrives sharded: making
// it exact would cost an all_reduce of the total weight in forward. When the
// target arrives replicated (as in PyTorch's own tests), every rank can count
// the global total weight T itself, so we are exact at no comm cost: the
// local kernel kNllMeanOverShards (See Note [Local kernels]) sums
// (reduction=sum) over the local rows of self / T, and the output is
// Partial(sum). total_weight is Partial(sum) either way.
struct NllArgs {
  static constexpr size_t kSelf = 0, kTarget = 1, kWeight = 2, kReduction = 3, kIgnore = 4;
};

// True when target dim `t` splits evenly over this mesh dim and the other
// mesh dims that shard self dim `d` or target dim `t` now.
bool evenly_split(const OpCall& call, int mesh_dim, int64_t d, int64_t t) {
  int64_t parts = call.mesh.size(mesh_dim);
  for (int m = 0; m < call.mesh_ndim(); ++m) {
    if (m == mesh_dim) continue;
    if (placement_of(call, 0, m).is_shard(d) || placement_of(call, 1, m).is_shard(t)) parts *= call.mesh.size(m);
  }
  return call.inputs[1].meta.shape[static_cast<size_t>(t)] % parts == 0;
}

// Whether nll_loss's forward may split a Replicate self dim `d` on this mesh
// dim to follow a target sharded on its dim `t` there (PyTorch 2.15 does;
// 2.11 followed self only), or move self's split of the class dim there (one
// all_to_all where gathering self and the target takes two, as 2.15:
// y18_0504). Not a Partial self (2.15 all_reduces it rather than
// reduce_scattering it, g18_02300), not for "mean" (Note [Mean losses over
// shards]), and not when another mesh dim splits `d` already: the nested
// split would need the target resharded too (g18_01985).
bool follows_target(const OpCall& call, int mesh_dim, int64_t d, int64_t t, int64_t channel, int64_t reduction) {
  const Placement& self = placement_of(call, 0, mesh_dim);
  if (placement_of(call, 1, mesh_dim) != Shard(t) || !(self.is_replicate() || self == Shard(channel))) return false;
  if (reduction == kReductionMean) return false;
  for (int m = 0; m < call.mesh_ndim(); ++m) {
    if (m != mesh_dim && placement_of(call, 0, m).is_shard(d)) return false;
  }
  return true;
}

DimRule nll_forward_dim_rule() {
  return [](const OpCall& call, int mesh_dim) {
    const int64_t channel = channel_dim(call, 0);
    const int64_t reduction = detail::int_arg(call, NllArgs::kReduction, kReductionMean);
    std::vector<DimStrategy> candidates{detail::all_replicate(call)};
    for (int64_t d = 0; d < detail::input_ndim(call, 0); ++d) {
      if (d == channel) continue;
      const int64_t t = target_dim(d, channel);
      // A shard that self already has, or the target's (follows_target).
      const Placement& self = placement_of(call, 0, mesh_dim);
      if (self != Shard(d) && !follows_target(call, mesh_dim, d, t, channel, reduction)) continue;
      DimStrategy s = detail::all_replicate(call);
      s.inputs[0] = Shard(d);
      s.inputs[1] = Shard(t);
      if (reduction == kReductionNone) {
        s.outputs[0] = Shard(t);
      } else if (reduction == kReductionSum) {
        s.outputs = {Partial(), Partial()};
      } else {
        if (!evenly_split(call, mesh_dim, d, t)) continue;
        s.outputs = {Partial(ReduceOp::kAvg), Partial()};
      }
      candidates.push_back(s);
    }
    // Linear in self: a Partial(sum) self with everything else replicated.
    const Placement& p = placement_of(call, 0, mesh_dim);
    if (p.is_partial() && p.reduce_op() == ReduceOp::kSum) {
      DimStrategy s = detail::all_replicate(call);
      s.inputs[0] = p;
      s.outputs[0] = p;
      candidates.push_back(s);
    }
    return candidates;
  };
}

// The local rows of `target` (given whole) that line up with self's block.
at::Tensor target_block(const at::Tensor& target, const DTensorSpec& self, int64_t channel) {
  const std::vector<int64_t> offset = self.global_offset(), shape = self.local_shape();
  at::Tensor out = target;
  for (int64_t d = 0; d < self.ndim(); ++d) {
    if (d == channel) continue;
    out = out.narrow(target_dim(d, channel), offset[static_cast<size_t>(d)], shape[static_cast<size_t>(d)]);
  }
  return out;
}

// Global total weight from the whole target, as the op counts it.
at::Tensor total_weight_of(const at::Tensor& target, const c10::IValue& weight, int64_t ignore_index,
                           c10::ScalarType dtype) {
  at::Tensor counted = target.ne(ignore_index);
  if (weight.isTensor() && weight.toTensor().defined()) {
    at::Tensor w = weight.toTensor().index_select(0, target.reshape(-1).clamp_min(0)).view(target.sizes());
    return w.mul(counted).sum().to(dtype);
  }
  return counted.sum().to(dtype);
}

constexpr const char* kNllMeanOverShards = "dtensor::nll_loss_mean_over_shards";

// The local arguments: self's block, the whole target, reduction=sum.
void nll_mean_over_shards(const LocalCall& local, std::vector<c10::IValue>* stack) {
  const DTensorSpec self = local.call.inputs[0].with_placements(local.plan.input_placements[0]);
  const int64_t channel = channel_dim(local.call, 0);
  std::vector<c10::IValue>& args = *stack;
  const at::Tensor target = args[NllArgs::kTarget].toTensor();
  const at::Tensor x = args[NllArgs::kSelf].toTensor();
  at::Tensor total = total_weight_of(target, args[NllArgs::kWeight], args[NllArgs::kIgnore].toInt(),
                                     x.scalar_type());
  args[NllArgs::kSelf] = x.div(total);
  args[NllArgs::kTarget] = target_block(target, self, channel);
  local.call.op->callBoxed(stack);
}

ShardingRule nll_forward_rule() {
  DimRule dim_rule = nll_forward_dim_rule();
  return [dim_rule](const OpCall& call) {
    ShardingPlan plan = expand_per_mesh_dim(call, dim_rule);
    if (detail::int_arg(call, NllArgs::kReduction, kReductionMean) != kReductionMean) return plan;
    bool exact = true, averaged = false;
    for (int d = 0; d < call.mesh_ndim(); ++d) {
      if (plan.output_placements[0][static_cast<size_t>(d)] != Partial(ReduceOp::kAvg)) continue;
      averaged = true;
      exact = exact && call.inputs[1].placements[static_cast<size_t>(d)].is_replicate();
    }
    if (!averaged || !exact) return plan;
    // See Note [Mean losses over shards]: the target stays whole.
    plan.input_placements[1] = Placements(static_cast<size_t>(call.mesh_ndim()), Replicate());
    for (auto& p : plan.output_placements[0]) {
      if (p.is_partial()) p = Partial();
    }
    plan.local_arg_overrides.emplace_back(NllArgs::kReduction, c10::IValue(kReductionSum));
    plan.local_kernel = kNllMeanOverShards;
    return plan;
  };
}

// nll_loss_backward(grad_output, self, target, weight?, reduction,
// ignore_index, total_weight): total_weight replicated for "mean" (it divides
// the gradient); for "sum" and "none" the kernel ignores it, so a Partial(sum)
// one stays as it is (as in PyTorch 2.15); grad_output sharded like the
// target for "none".
DimRule nll_backward_rule() {
  return [](const OpCall& call, int mesh_dim) {
    const int64_t channel = channel_dim(call, 1);
    const int64_t reduction = detail::int_arg(call, 4, kReductionMean);
    std::vector<DimStrategy> candidates{detail::all_replicate(call)};
    for (int64_t d = 0; d < detail::input_ndim(call, 1); ++d) {
      if (d == channel) continue;
      const int64_t t = target_dim(d, channel);
      DimStrategy s = detail::all_replicate(call);
      s.inputs[0] = reduction == kReductionNone ? Shard(t) : Replicate();
      s.inputs[1] = Shard(d);
      s.inputs[2] = Shard(t);
      s.outputs[0] = Shard(d);
      candidates.push_back(s);
    }
    const Placement& g = placement_of(call, 0, mesh_dim);
    if (g.is_partial() && g.reduce_op() == ReduceOp::kSum) {
      DimStrategy s = detail::all_replicate(call);
      s.inputs[0] = g;
      s.outputs[0] = g;
      candidates.push_back(s);
    }
    const size_t total_weight = call.inputs.size() - 1;
    if (reduction != kReductionMean && placement_of(call, total_weight, mesh_dim) == Partial()) {
      for (DimStrategy& s : candidates) s.inputs[total_weight] = Partial();
    }
    return candidates;
  };
}

// mse_loss(self, target, reduction): both sharded alike; "sum" -> Partial(sum),
// "mean" -> Partial(avg) over even shards (every element weighs the same).
DimRule mse_rule() {
  return [](const OpCall& call, int mesh_dim) {
    const int64_t reduction = detail::int_arg(call, 2, kReductionMean);
    std::vector<DimStrategy> candidates{detail::all_replicate(call)};
    if (call.inputs[0].meta.shape != call.inputs[1].meta.shape) return candidates;
    for (size_t i = 0; i < 2; ++i) {
      const Placement& p = placement_of(call, i, mesh_dim);
      if (!p.is_shard()) continue;
      DimStrategy s = detail::every_tensor_as(call, p);
      if (reduction == kReductionSum) {
        s.outputs[0] = Partial();
      } else if (reduction == kReductionMean) {
        if (!detail::evenly_sharded(call, i, p.shard_dim())) continue;
        s.outputs[0] = Partial(ReduceOp::kAvg);
      }
      candidates.push_back(s);
    }
    return candidates;
  };
}

// The dim rule checks evenness one mesh dim at a time against the inputs'
// current placements, but the plan may combine the two inputs' shardings
// (self [S(0), S(1)], target [S(1), S(0)] can plan [S(0), S(0)]). A mean over
// uneven shards is not the average of the local means, so such a plan falls
// back to replicated inputs.
bool evenly_sharded_as(const OpCall& call, const Placements& placements) {
  const std::vector<int64_t>& shape = call.inputs[0].meta.shape;
  for (size_t d = 0; d < shape.size(); ++d) {
    int64_t parts = 1;
    for (int m = 0; m < call.mesh_ndim(); ++m) {
      if (placements[static_cast<size_t>(m)].is_shard(static_cast<int64_t>(d))) parts *= call.mesh.size(m);
    }
    if (shape[d] % parts != 0) return false;
  }
  return true;
}

ShardingRule mse_forward_rule() {
  return [](const OpCall& call) {
    ShardingPlan plan = expand_per_mesh_dim(call, mse_rule());
    if (detail::int_arg(call, 2, kReductionMean) != kReductionMean ||
        evenly_sharded_as(call, plan.input_placements[0])) {
      return plan;
    }
    return expand_per_mesh_dim(call, [](const OpCall& c, int) {
      return std::vector<DimStrategy>{detail::all_replicate(c)};
    });
  };
}

// mse_loss_backward(grad_output, self, target, reduction): 2 (x - y) g / N.
// Sharded, the local op would divide by the local N: it runs with
// reduction=sum on g / N_global instead (the local kernel
// kMseBackwardMeanOverShards). Linear in grad_output.
constexpr const char* kMseBackwardMeanOverShards = "dtensor::mse_loss_backward_mean_over_shards";

void mse_backward_mean_over_shards(const LocalCall& local, std::vector<c10::IValue>* stack) {
  int64_t numel = 1;
  for (int64_t s : local.call.inputs[1].meta.shape) numel *= s;
  (*stack)[0] = (*stack)[0].toTensor().div(static_cast<double>(numel));
  local.call.op->callBoxed(stack);
}

ShardingRule mse_backward_rule() {
  DimRule dim_rule = [](const OpCall& call, int mesh_dim) {
    const int64_t reduction = detail::int_arg(call, 3, kReductionMean);
    std::vector<DimStrategy> candidates{detail::all_replicate(call)};
    if (call.inputs[1].meta.shape == call.inputs[2].meta.shape) {
      for (size_t i = 0; i < 3; ++i) {
        const Placement& p = placement_of(call, i, mesh_dim);
        if (!p.is_shard() || (i == 0 && reduction != kReductionNone)) continue;
        DimStrategy s = detail::every_tensor_as(call, p);
        if (reduction != kReductionNone) s.inputs[0] = Replicate();
        candidates.push_back(s);
      }
    }
    const Placement& g = placement_of(call, 0, mesh_dim);
    if (g.is_partial() && g.reduce_op() == ReduceOp::kSum) {
      DimStrategy s = detail::all_replicate(call);
      s.inputs[0] = g;
      s.outputs[0] = g;
      candidates.push_back(s);
    }
    // Linear in (self - target) given grad_output: a Partial(sum|avg) self
    // and target give that Partial, as in PyTorch (a Replicate one becomes
    // the Partial locally). An average also takes the other operand
    // Replicate (avg_r(x_r) - y = avg_r(x_r - y)), PyTorch 2.15's {avg, avg,
    // R} rows: a sharded operand is then gathered, not gathered and
    // re-partitioned (g18_00670: one all_gather, where reduce-scattering the
    // P(avg) target onto the other's shards took two collectives).
    for (size_t i = 1; i < 3; ++i) {
      const Placement& p = placement_of(call, i, mesh_dim);
      if (!p.is_partial() || (p.reduce_op() != ReduceOp::kSum && p.reduce_op() != ReduceOp::kAvg)) continue;
      DimStrategy s = detail::all_replicate(call);
      s.inputs[1] = s.inputs[2] = p;
      s.outputs[0] = p;
      candidates.push_back(s);
      if (p.reduce_op() == ReduceOp::kAvg) {
        s.inputs[3 - i] = Replicate();
        candidates.push_back(s);
      }
      break;
    }
    return candidates;
  };
  return [dim_rule](const OpCall& call) {
    ShardingPlan plan = expand_per_mesh_dim(call, dim_rule);
    bool sharded = false;
    for (const Placement& p : plan.input_placements[1]) sharded = sharded || p.is_shard();
    if (sharded && detail::int_arg(call, 3, kReductionMean) == kReductionMean) {
      plan.local_arg_overrides.emplace_back(3, c10::IValue(kReductionSum));
      plan.local_kernel = kMseBackwardMeanOverShards;
    }
    return plan;
  };
}

}  // namespace

void register_loss_rules(ShardingRegistry& registry) {
  registry.add({"aten::nll_loss_forward", "aten::nll_loss2d_forward"}, nll_forward_rule());
  registry.add_local_kernel(kNllMeanOverShards, nll_mean_over_shards);
  registry.add({"aten::nll_loss_backward", "aten::nll_loss2d_backward"}, per_mesh_dim(nll_backward_rule()));
  registry.add({"aten::mse_loss"}, mse_forward_rule());
  registry.add({"aten::mse_loss_backward"}, mse_backward_rule());
  registry.add_local_kernel(kMseBackwardMeanOverShards, mse_backward_mean_over_shards);
}

}  // namespace dtensor
