// Fused optimizer steps (_fused_adam(_), _fused_adamw(_), what PyTorch's
// Adam(fused=True) calls): elementwise over lists of parameters, so each
// parameter's step runs on its own shards with no communication, as PyTorch
// 2.15's pointwise list rule. (AMP's _amp_foreach_non_finite_check_and_unscale_
// has no rule: its found_inf flag, written in place as Replicate, would hold
// each rank's own answer; the true flag is their maximum.)
//   _fused_adam_([p [S(0)], q [R]], grads, exp_avgs, ...) -> every list element keeps its parameter's placements
#include <c10/util/Exception.h>

#include <string>
#include <vector>

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

}  // namespace

void register_optimizer_rules(ShardingRegistry& registry) {
  registry.add({"aten::_fused_adam_", "aten::_fused_adam", "aten::_fused_adamw_", "aten::_fused_adamw"},
               fused_adam_rule());
}

}  // namespace dtensor
