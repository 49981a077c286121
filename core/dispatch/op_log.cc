// Formats the per-op decision lines of DTENSOR_LOG (core/log.h).
#include "core/dispatch/op_log.h"

#include <c10/core/ScalarType.h>

#include <sstream>

#include "core/log.h"

namespace dtensor {
namespace {

void put_tensor(std::ostringstream& out, const Placements& placements, const TensorMeta& meta) {
  out << to_string(placements) << " " << c10::toString(meta.dtype) << c10::IntArrayRef(meta.shape);
}

bool plan_moves_inputs(const OpCall& call, const ShardingPlan& plan) {
  for (size_t i = 0; i < call.inputs.size(); ++i) {
    if (plan.input_placements[i] != call.inputs[i].placements) return true;
  }
  return false;
}

}  // namespace

void log_op_decision(const OpCall& call, const PropagationResult& result, bool cache_hit) {
  const ShardingPlan& plan = result.plan;
  std::ostringstream out;
  out << call.name << ": ";
  for (size_t i = 0; i < call.inputs.size(); ++i) {
    if (i) out << ", ";
    put_tensor(out, call.inputs[i].placements, call.inputs[i].meta);
  }
  out << " -> ";
  for (size_t o = 0; o < plan.output_placements.size() && o < result.output_metas.size(); ++o) {
    if (o) out << ", ";
    put_tensor(out, plan.output_placements[o], result.output_metas[o]);
  }
  if (plan.output_placements.empty()) out << "(no tensor output)";
  if (plan_moves_inputs(call, plan)) {
    out << "; plan ";
    for (size_t i = 0; i < plan.input_placements.size(); ++i) {
      out << (i ? ", " : "") << to_string(plan.input_placements[i]);
    }
    out << " -> ";
    for (size_t o = 0; o < plan.output_placements.size(); ++o) {
      out << (o ? ", " : "") << to_string(plan.output_placements[o]);
    }
  }
  if (!plan.local_kernel.empty()) out << "; local kernel " << plan.local_kernel;
  if (log_enabled(LogLevel::kDebug)) {
    out << "; sharding cache " << (cache_hit ? "hit" : "miss");
    for (size_t d = 0; d < plan.strategy_choices.size(); ++d) {
      const StrategyChoice& c = plan.strategy_choices[d];
      out << "; mesh dim " << d << " chose " << c.chosen << " (cost " << c.chosen_cost << ")";
      if (!c.rejected.empty()) out << " over " << c.rejected << " (cost " << c.rejected_cost << ")";
    }
  }
  detail::emit_log_line(call.mesh.global_rank(), out.str());
}

}  // namespace dtensor
