// Helpers shared by the newer rule families.
#include "core/ops/op_rule_helpers.h"

#include <algorithm>

namespace dtensor::detail {

int64_t input_at_arg(const OpCall& call, size_t arg) {
  for (size_t i = 0; i < call.positions.size(); ++i) {
    if (call.positions[i].arg_index == arg && call.positions[i].list_index < 0) {
      return static_cast<int64_t>(i);
    }
  }
  return -1;
}

int64_t int_arg(const OpCall& call, size_t arg, int64_t fallback) {
  if (arg >= call.num_args()) return fallback;
  const c10::IValue& v = call.arg(arg);
  return v.isInt() ? v.toInt() : fallback;
}

bool bool_arg(const OpCall& call, size_t arg, bool fallback) {
  if (arg >= call.num_args()) return fallback;
  const c10::IValue& v = call.arg(arg);
  return v.isBool() ? v.toBool() : fallback;
}

DimStrategy uniform(const OpCall& call, const Placement& p) {
  return DimStrategy{std::vector<Placement>(call.inputs.size(), p),
                     std::vector<Placement>(call.outputs.size(), p)};
}

Placement reduced(const Placement& p) { return p.is_partial() ? Placement(Replicate()) : p; }

bool evenly_sharded(const OpCall& call, size_t i, int64_t dim) {
  const DTensorSpec& spec = call.inputs[i];
  int64_t parts = 1;
  for (int m : spec.mesh_dims_sharding(dim)) parts *= spec.mesh.size(m);
  return spec.meta.shape[static_cast<size_t>(dim)] % parts == 0;
}

int64_t dim_after_removal(int64_t d, const std::vector<int64_t>& removed) {
  if (std::find(removed.begin(), removed.end(), d) != removed.end()) return -1;
  return d - std::count_if(removed.begin(), removed.end(), [d](int64_t r) { return r < d; });
}

std::string placement_text(const OpCall& call, size_t i, int mesh_dim) {
  return call.inputs[i].placements[static_cast<size_t>(mesh_dim)].to_string();
}

}  // namespace dtensor::detail
