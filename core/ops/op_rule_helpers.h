// Helpers for the rule families added after the first five (concat/split,
// math, vector products, nn, losses): argument access by schema position and
// candidates that shard every input on one dim.
//   int64_t dim = detail::int_arg(call, 1, /*fallback=*/0);
//   int64_t w = detail::input_at_arg(call, 2);   // -1 when weight is None
#pragma once

#include <optional>
#include <vector>

#include "core/dispatch/sharding_registry.h"

namespace dtensor::detail {

/// Index in call.inputs of the tensor at schema argument `arg` (not a list),
/// or -1 when that argument is None / undefined / absent.
int64_t input_at_arg(const OpCall& call, size_t arg);

/// Integer argument `arg`, or `fallback` when absent or None.
int64_t int_arg(const OpCall& call, size_t arg, int64_t fallback);
/// Bool argument `arg`, or `fallback` when absent or None.
bool bool_arg(const OpCall& call, size_t arg, bool fallback);

/// Rank of input `i`'s global tensor.
inline int64_t ndim_of(const OpCall& call, size_t i) {
  return static_cast<int64_t>(call.inputs[i].meta.shape.size());
}

/// Rank of output `o` (0 for an undefined output).
inline int64_t out_ndim_of(const OpCall& call, size_t o) {
  return static_cast<int64_t>(call.outputs[o].shape.size());
}

/// A candidate where every input and output takes `p`.
DimStrategy uniform(const OpCall& call, const Placement& p);

/// Replaces Partial placements by Replicate (values must be reduced first).
Placement reduced(const Placement& p);

/// True when tensor dim `dim` of input `i` splits evenly over every mesh dim
/// sharding it (torch.chunk would give every rank the same size).
bool evenly_sharded(const OpCall& call, size_t i, int64_t dim);

/// The position of a shard of input dim `d` after `removed` (sorted, distinct)
/// dims are dropped, or -1 when `d` itself is dropped.
int64_t dim_after_removal(int64_t d, const std::vector<int64_t>& removed);

/// Human-readable placement of input `i` on `mesh_dim`, for error messages.
std::string placement_text(const OpCall& call, size_t i, int mesh_dim);

}  // namespace dtensor::detail
