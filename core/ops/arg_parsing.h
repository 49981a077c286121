// Reading an operator call as the rule families need it: tensor inputs by
// index or by schema position, their ranks and placements, non-tensor
// arguments (ints, bools, dims) with fallbacks, and dim arithmetic.
//   int64_t dim = detail::wrap_dim(detail::int_arg(call, 1, /*fallback=*/0), detail::input_ndim(call, 0));
//   int64_t w = detail::input_at_arg(call, 2);   // -1 when weight is None
#pragma once

#include <vector>

#include "core/dispatch/sharding_registry.h"

namespace dtensor::detail {

// ------------------------------------------------------------ tensor inputs

/// Placement of input `i` on `mesh_dim`. Example: placement_of(call, 0, 1) == Shard(0).
inline const Placement& placement_of(const OpCall& call, size_t i, int mesh_dim) {
  return call.inputs[i].placements[static_cast<size_t>(mesh_dim)];
}

/// Rank of input `i`'s global tensor.
inline int64_t input_ndim(const OpCall& call, size_t i) {
  return static_cast<int64_t>(call.inputs[i].meta.shape.size());
}

/// Rank of output `o` (0 for an undefined output). Only during propagation,
/// when call.outputs is filled.
inline int64_t output_ndim(const OpCall& call, size_t o) {
  return static_cast<int64_t>(call.outputs[o].shape.size());
}

/// Index in call.inputs of the tensor at schema argument `arg` (not a list),
/// or -1 when that argument is None / undefined / absent.
/// Example: input_at_arg(layer_norm_call, 2) is the weight's index, or -1.
int64_t input_at_arg(const OpCall& call, size_t arg);

// --------------------------------------------------------- other arguments

/// Integer argument `arg`, or `fallback` when absent or None.
int64_t int_arg(const OpCall& call, size_t arg, int64_t fallback);
/// Dim argument `arg` (or `fallback`) wrapped against input 0's rank.
/// Example: dim_arg(slice_scatter_call, 2, 0) == 1 for dim=-1 of a 2-D self.
int64_t dim_arg(const OpCall& call, size_t arg, int64_t fallback);
/// Bool argument `arg`, or `fallback` when absent or None.
bool bool_arg(const OpCall& call, size_t arg, bool fallback);

/// The dims of an int[]? / int argument, wrapped against `ndim` (all dims
/// when None or empty and `empty_means_all`). Throws on a dim out of range.
/// Example: dims_arg(sum_call, 1, /*ndim=*/3, /*empty_means_all=*/true) == {0, 1, 2} for sum(x).
std::vector<int64_t> dims_arg(const OpCall& call, size_t arg, int64_t ndim, bool empty_means_all);

// -------------------------------------------------------------------- dims

/// Normalises a possibly negative dim against `ndim` (0-dim tensors take dim
/// 0 or -1). Throws when out of range. Example: wrap_dim(-1, 3) == 2.
int64_t wrap_dim(int64_t dim, int64_t ndim);

/// The position of input dim `d` after `removed` (sorted, distinct) dims are
/// dropped, or -1 when `d` itself is dropped. Example: dim_after_removal(2, {0}) == 1.
int64_t dim_after_removal(int64_t d, const std::vector<int64_t>& removed);

}  // namespace dtensor::detail
