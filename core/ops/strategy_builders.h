// Building the candidates (DimStrategy) a per-mesh-dim rule returns: common
// candidates, placement transforms and the checks that decide whether a
// candidate is allowed.
//   std::vector<DimStrategy> c{detail::all_replicate(call)};
//   if (p.is_shard()) c.push_back(detail::every_tensor_as(call, p));
#pragma once

#include <functional>
#include <set>

#include "core/dispatch/sharding_registry.h"

namespace dtensor::detail {

/// A candidate with every input and output Replicate.
/// Example: all_replicate(mm_call) == {{R, R}, {R}}.
DimStrategy all_replicate(const OpCall& call);

/// A candidate where every input and output takes `p`.
/// Example: every_tensor_as(add_call, Shard(0)) == {{S(0), S(0)}, {S(0)}}.
DimStrategy every_tensor_as(const OpCall& call, const Placement& p);

/// Keeps every input where it is and gives every output the first input's
/// placement (ops that do not move data: detach, clone, alias...).
DimStrategy follow_first_input(const OpCall& call, int mesh_dim);

/// Replaces a Partial placement by Replicate (the values must be reduced
/// first); other placements are returned as they are.
/// Example: partial_to_replicate(Partial()) == Replicate().
Placement partial_to_replicate(const Placement& p);

/// True when tensor dim `dim` of input `i` splits evenly over every mesh dim
/// sharding it (torch.chunk would give every rank the same size).
bool evenly_sharded(const OpCall& call, size_t i, int64_t dim);

/// Candidates for ops that keep some dims of input 0 whole: all-Replicate,
/// then `row(d)` for every other dim d of input 0, then the `partial_rows`
/// that keep some input's current Partial.
/// Example: shard_dims_except(slice_scatter_call, 0, {0}, row) == {all R, row(1)} for 2-D inputs.
std::vector<DimStrategy> shard_dims_except(const OpCall& call, int mesh_dim, const std::vector<int64_t>& kept,
                                           const std::function<DimStrategy(int64_t)>& row,
                                           const std::vector<DimStrategy>& partial_rows = {});

/// The placement of an operand of shape `operand`, broadcast against an
/// output of `out_ndim` dims, that lines up with the output sharded on
/// `out_dim`: Shard of the matching operand dim, or Replicate where the
/// operand lacks that dim or broadcasts along it (size 1).
/// Example: broadcast_operand_shard({4}, 2, 1) == Shard(0); ({1, 4}, 2, 0) == Replicate().
Placement broadcast_operand_shard(const std::vector<int64_t>& operand, int64_t out_ndim, int64_t out_dim);

/// Drops every candidate that shards an input when no input of the call is
/// sharded on any mesh dim (See Note [Matrix products shard only what is
/// sharded]).
/// Example: mm of a P(max) [12, 2] by a Replicate [2, 4] keeps R and Partial candidates only.
void drop_shards_unless_an_input_is_sharded(const OpCall& call, std::vector<DimStrategy>& candidates);

/// `rule` with drop_shards_unless_an_input_is_sharded applied: how PyTorch
/// 2.15 expands a single-dim strategy, whose shard placeholders become the
/// shard kinds the inputs have (none: only its Replicate and Partial rows).
/// Example: max_pool2d of a P(sum) input all_reduces it (no reduce_scatter onto the batch dim).
DimRule single_dim_strategy(DimRule rule);
/// Whether no input of the plan splits a dim over more ranks than it has
/// elements: PyTorch's is_tensor_shardable, applied to every whole-mesh
/// strategy its single-dim expansion makes; with `allow_uneven` (the
/// strategy's allow_uneven_sharding) an input left as it is passes.
bool tensor_shardable(const OpCall& call, const std::vector<Placements>& inputs, bool allow_uneven);

/// What PyTorch 2.15's single-dim strategy expansion allows of a rule.
struct SingleDimOptions {
  bool allow_uneven = false;  // the strategy's allow_uneven_sharding
  PlanCheck check = nullptr;  // a further whole-mesh check
};

/// per_mesh_dim(single_dim_strategy(rule)) with tensor_shardable (and
/// `options.check`) as its whole-mesh check: the rule of an op PyTorch 2.15
/// shards with a single-dim strategy.
ShardingRule single_dim_rule(DimRule rule, SingleDimOptions options = {});

/// The distinct sizes of the pieces of tensor dim `dim` of `shape` under
/// `placements` (torch.chunk at each mesh dim splitting it, in mesh order).
/// Example: piece_sizes({6}, mesh of 4, {S(0)}, 0) == {0, 2} (2, 2, 2, 0).
std::set<int64_t> piece_sizes(const std::vector<int64_t>& shape, const DeviceMesh& mesh, const Placements& placements,
                              int64_t dim);

/// Whether no input placed as `inputs` leaves some rank an empty piece of a
/// dim other than a batch dim 0 (`batch_may_be_empty`), which the spatial
/// and normalization kernels refuse (Note [Empty pieces of spatial ops]).
/// Example: a [2, 5, 4, 4] input [S(1)] on 4 ranks is refused: 5 channels are 2, 2, 1, 0.
bool no_empty_pieces(const OpCall& call, const std::vector<Placements>& inputs, bool batch_may_be_empty);
/// no_empty_pieces as a whole-mesh plan check (Note [Whole-mesh plan checks]).
PlanCheck no_empty_pieces_check(bool batch_may_be_empty);

}  // namespace dtensor::detail
