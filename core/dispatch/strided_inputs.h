// How operators see _StridedShard inputs (FSDP over tensor parallelism):
// rules are written for Shard / Replicate / Partial, so a strided input is
// either carried through as a Shard stand-in where that is exact, or
// gathered to Replicate on its mesh dim first.
//   ShardingPlan plan = plan_with_strided_inputs(rule, call);
#pragma once

#include "core/dispatch/op_call.h"
#include "core/dispatch/sharding_registry.h"

namespace dtensor {

// Note [Operators on strided shards]
// A _StridedShard(d, sf) holds a permutation of the rows of d that a
// Shard(d) would hold (Note [Strided shards] in layout/shard_layout.h). An
// op that treats rows of d independently, at the same positions in every
// operand (pointwise ops, an optimizer's foreach step, reductions over d),
// computes the same on either, so on a mesh dim where some input is
// _S(d, sf) the rule is asked with S(d) in its place, and its answer is
// taken when it is exact for the strided rows too:
//   - every input on that mesh dim is the same _S(d, sf) with the same extent
//     of d, or Replicate with extent 1 along d (broadcast), or a scalar;
//   - the rule keeps every strided input as S(d), rewrites no arguments and
//     names no local kernel (those read shard offsets and sizes, which differ);
//   - every output is S(d) with the same extent of d (it becomes _S(d, sf)),
//     or Partial (a reduction, whatever the order of the rows);
//   - both layouts are even, or both uneven, so no rule's choice that
//     depends on evenness (a mean as P(avg)) differs between them.
// Otherwise the strided mesh dims are offered to the rule as Replicate: the
// op's redistribution gathers them first (one all_gather each), which is
// exact for every op, except an in-place op on a strided tensor, which is
// refused (it would write the gathered copy). PyTorch 2.15 carries _StridedShard through more ops
// (views that flatten a nested shard); those are divergences of the corpus.

// Runs `rule` for `call` as Note [Operators on strided shards] says: the
// plan's input placements are what each input must be redistributed to
// (from its real, strided placements); outputs may be _StridedShard.
// Calls `rule` directly when no input is strided, and for `_foreach_` ops,
// whose derived rule calls this for each element (different parameters have
// different shapes, and each element is judged alone).
ShardingPlan plan_with_strided_inputs(const ShardingRule& rule, const OpCall& call);

}  // namespace dtensor
