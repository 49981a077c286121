// Candidates of per-mesh-dim rules and the checks that allow them.
#include "core/ops/strategy_builders.h"

#include "core/ops/arg_parsing.h"

namespace dtensor::detail {

DimStrategy all_replicate(const OpCall& call) { return every_tensor_as(call, Replicate()); }

DimStrategy every_tensor_as(const OpCall& call, const Placement& p) {
  return DimStrategy{std::vector<Placement>(call.inputs.size(), p),
                     std::vector<Placement>(call.outputs.size(), p)};
}

DimStrategy follow_first_input(const OpCall& call, int mesh_dim) {
  DimStrategy s;
  for (size_t i = 0; i < call.inputs.size(); ++i) s.inputs.push_back(placement_of(call, i, mesh_dim));
  Placement first = call.inputs.empty() ? Replicate() : placement_of(call, 0, mesh_dim);
  s.outputs.assign(call.outputs.size(), first);
  return s;
}

Placement partial_to_replicate(const Placement& p) { return p.is_partial() ? Placement(Replicate()) : p; }

bool evenly_sharded(const OpCall& call, size_t i, int64_t dim) {
  const DTensorSpec& spec = call.inputs[i];
  int64_t parts = 1;
  for (int m : spec.mesh_dims_sharding(dim)) parts *= spec.mesh.size(m);
  return spec.meta.shape[static_cast<size_t>(dim)] % parts == 0;
}

}  // namespace dtensor::detail
