// Small helpers shared by the rule families.
#pragma once

#include <vector>

#include "core/dispatch/sharding_registry.h"

namespace dtensor::detail {

/// Placement of input `i` on `mesh_dim`.
inline const Placement& placement_of(const OpCall& call, size_t i, int mesh_dim) {
  return call.inputs[i].placements[static_cast<size_t>(mesh_dim)];
}

/// Normalises a possibly negative dim against `ndim` (0-dim tensors take dim 0 or -1).
int64_t wrap_dim(int64_t dim, int64_t ndim);

/// The dims of an int[]? / int argument (all dims when None or empty and `empty_means_all`).
std::vector<int64_t> dims_arg(const OpCall& call, size_t arg, int64_t ndim, bool empty_means_all);

/// A candidate with every input and output Replicate.
DimStrategy all_replicate(const OpCall& call);

/// A rule that keeps every input where it is and gives every output the first
/// input's placements (ops that do not move data: detach, clone, alias...).
DimStrategy follow_first_input(const OpCall& call, int mesh_dim);

}  // namespace dtensor::detail
