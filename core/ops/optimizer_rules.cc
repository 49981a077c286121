// Fused optimizer steps (_fused_adam(_), _fused_adamw(_), what PyTorch's
// Adam(fused=True) calls): elementwise over lists of parameters, so each
// parameter's step runs on its own shards with no communication, as PyTorch
// 2.15's pointwise list rule. AMP's gradient unscaling
// (_amp_foreach_non_finite_check_and_unscale_) likewise, with its found_inf
// flag made true on every rank (Note [Unscaling sharded gradients]).
//   _fused_adam_([p [S(0)], q [R]], grads, exp_avgs, ...) -> every list element keeps its parameter's placements
//   _amp_foreach_non_finite_check_and_unscale_([g [S(0)]], found_inf [R], inv_scale [R]) -> 1 all_reduce(max)
#include <c10/util/Exception.h>

#include <string>
#include <vector>

#include "core/collectives.h"
#include "core/ops/builtin_rules.h"
#include "core/ops/strategy_builders.h"

namespace dtensor {
namespace {

Placements replicated(const OpCall& call) { return Placements(static_cast<size_t>(call.mesh_ndim()), Replicate()); }

// Note [Fused optimizer steps]
// _fused_adam_(self, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs,
// state_steps, *, lr, ..., grad_scale?, found_inf?) updates element i of the
// first five lists from element i of each: the five are laid out like
// parameter i (a Partial parameter is reduced first: Adam is not linear),
// the step counts, a tensor lr, grad_scale and found_inf are replicated. The
// in-place form writes all five lists, so none may move: elements laid out
// differently from their parameter are refused, naming them. The functional
// form returns the five lists (an empty max_exp_avg_sqs unless amsgrad),
// each element laid out like its parameter.
ShardingRule fused_adam_rule() {
  return [](const OpCall& call) {
    const bool in_place = call.self_input >= 0;
    std::vector<Placements> element;  // parameter i's placements
    for (size_t i = 0; i < call.inputs.size(); ++i) {
      const TensorArgPosition& pos = call.positions[i];
      if (pos.arg_index != 0) continue;
      Placements p = call.inputs[i].placements;
      for (Placement& q : p) q = detail::partial_to_replicate(q);
      if (element.size() <= static_cast<size_t>(pos.list_index)) element.resize(static_cast<size_t>(pos.list_index) + 1);
      element[static_cast<size_t>(pos.list_index)] = p;
    }
    ShardingPlan plan;
    for (size_t i = 0; i < call.inputs.size(); ++i) {
      const TensorArgPosition& pos = call.positions[i];
      if (pos.arg_index > 4 || pos.list_index < 0) {
        plan.input_placements.push_back(replicated(call));
        continue;
      }
      const Placements& target = element.at(static_cast<size_t>(pos.list_index));
      TORCH_CHECK(!in_place || call.inputs[i].placements == target, call.describe(), ": element ", pos.list_index,
                  " of argument ", call.op->schema().arguments()[pos.arg_index].name(), " is ",
                  to_string(call.inputs[i].placements), " but its parameter is ", to_string(target),
                  "; a fused optimizer step updates every state tensor in place, so each must be laid out like "
                  "its parameter (create the optimizer state with zeros_like of the DTensor parameters)");
      plan.input_placements.push_back(target);
    }
    const size_t n = element.size();
    for (size_t o = 0; o < call.outputs.size(); ++o) plan.output_placements.push_back(element.at(o % n));
    return plan;
  };
}

// Note [Unscaling sharded gradients]
// _amp_foreach_non_finite_check_and_unscale_(grads, found_inf, inv_scale)
// multiplies every gradient by inv_scale in place and sets found_inf to 1 if
// any element is inf or NaN. On shards, each rank sees only its pieces, so
// the flag it writes is its own; PyTorch 2.15 runs it as a pointwise op and
// leaves the ranks disagreeing (under LocalTensorMode it raises instead), so
// one rank may skip the optimizer step another takes. Here the gradients
// keep their placements, and after the local kernel found_inf is all_reduced
// with max over every mesh dim that shards a gradient: one collective of one
// element per such mesh dim, and every rank holds the true flag. A
// Partial gradient is refused: finite pieces may sum to inf, which no check
// of the pieces sees; GradScaler unscales reduced gradients.
ShardingRule unscale_rule() {
  return [](const OpCall& call) {
    ShardingPlan plan;
    for (size_t i = 0; i < call.inputs.size(); ++i) {
      const DTensorSpec& in = call.inputs[i];
      const TensorArgPosition& pos = call.positions[i];
      if (pos.arg_index == 0) {
        for (const Placement& p : in.placements) {
          TORCH_CHECK(!p.is_partial(), call.describe(), ": gradient ", pos.list_index, " is ",
                      to_string(in.placements), "; the non-finite check must see reduced values (finite "
                      "partial sums may add up to inf), so redistribute Partial gradients to Replicate or Shard "
                      "before unscaling");
        }
        plan.input_placements.push_back(in.placements);
        continue;
      }
      TORCH_CHECK(pos.arg_index != 1 || in.placements == replicated(call), call.describe(),
                  ": found_inf is ", to_string(in.placements), "; it is written in place and must be Replicate");
      plan.input_placements.push_back(replicated(call));
    }
    plan.local_kernel = "dtensor::unscale_and_agree";
    return plan;
  };
}

void unscale_and_agree(const LocalCall& c, std::vector<c10::IValue>* stack) {
  at::Tensor found_inf = (*stack)[1].toTensor();
  c.call.op->callBoxed(stack);
  for (int d = 0; d < c.call.mesh_ndim(); ++d) {
    bool sharded = false;
    for (size_t i = 0; i < c.call.inputs.size(); ++i) {
      const Placement& p = c.call.inputs[i].placements[static_cast<size_t>(d)];
      sharded = sharded || (c.call.positions[i].arg_index == 0 && p.splits_dim());
    }
    if (sharded && c.call.mesh.size(d) > 1) {
      found_inf.copy_(collectives::all_reduce(found_inf, c.call.mesh, d, ReduceOp::kMax));
    }
  }
}

}  // namespace

void register_optimizer_rules(ShardingRegistry& registry) {
  registry.add({"aten::_fused_adam_", "aten::_fused_adam", "aten::_fused_adamw_", "aten::_fused_adamw"},
               fused_adam_rule());
  registry.add({"aten::_amp_foreach_non_finite_check_and_unscale_"}, unscale_rule());
  registry.add_local_kernel("dtensor::unscale_and_agree", unscale_and_agree);
}

}  // namespace dtensor
