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
//   - every input with a _StridedShard holds its rows as the first one does
//     (the same kinds of split of dims of the same extent on every mesh
//     dim, so the same permutation of rows: mm's backward contracts a
//     strided gradient with a strided input over those rows);
//     every other input is a Replicate scalar or a "companion" with no
//     _StridedShard (mm's weight beside a strided activation);
//   - the rule keeps every strided input as S(d), and makes every companion
//     Replicate on the strided mesh dims (gathering it there if it is
//     sharded, which the rule prices) or, where it is Replicate already,
//     S(e) along a dim of d's extent (which becomes _S(e, sf), a local
//     slice: the contraction of mm(grad^T, x) over a strided x splits
//     grad^T's columns the same way, as PyTorch's placeholders do);
//     a rule that pairs S(d) with whole or co-sharded operands says each
//     row of d is computed from its own rows, so it is for strided rows;
//     it rewrites no arguments and names no local kernel (those read shard
//     offsets and sizes, which differ) except one that reads only global
//     metadata (ShardingPlan::local_kernel_any_layout: squeeze) and the
//     local output shape (ShardingPlan::local_shape_arg: expand's size,
//     recomputed from the strided output placements; sum's backward
//     expands a strided gradient, v18_0095);
//   - every output is S(e) with the extent of d (it becomes _S(e, sf): e
//     differs from d when the op renumbers dims, as a transpose), or
//     Partial (a reduction, whatever the order of the rows);
//   - where one layout is even and the other is not, every Partial output
//     is a P(sum): a rule's choice that depends on evenness (a mean as
//     P(avg), an extremum of a piece that may be empty) is not taken.
// Otherwise the strided mesh dims are offered to the rule as Replicate, and
// with them every later mesh dim splitting the same tensor dim (the gather
// undoes those first, so keeping one is a fresh chunk, not free): the op's
// redistribution gathers them (one all_gather each), which is exact for
// every op, except an in-place op on a strided tensor, which is
// refused (it would write the gathered copy). Views that merge a sharded
// inner dim make _StridedShard outputs (Note [Strided shards through a
// merge]), as in PyTorch 2.15, and views read them back (view,
// _unsafe_view, view_copy and _reshape_alias see their strided inputs as
// they are: a strided dim that is only renumbered stays strided), as do the
// new_* factories (a result shaped like its input takes its placements).

// Runs `rule` for `call` as Note [Operators on strided shards] says: the
// plan's input placements are what each input must be redistributed to
// (from its real, strided placements); outputs may be _StridedShard.
// Calls `rule` directly when no input is strided, and for `_foreach_` ops,
// whose derived rule calls this for each element (different parameters have
// different shapes, and each element is judged alone).
ShardingPlan plan_with_strided_inputs(const ShardingRule& rule, const OpCall& call);

}  // namespace dtensor
