// Redistribute planning: the cheapest sequence of single-mesh-dim steps
// (collectives or local ops) taking a tensor from one placements list to another.
//   auto mesh = MeshShape::create({2, 2});
//   auto plan = plan_redistribute({8, 8}, /*element_size=*/4, mesh,
//                                 {Shard(0), Shard(1)}, {Shard(0), Shard(0)});
//   plan.num_collectives();   // 1: one all_to_all_single on mesh dim 1
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "layout/comm_cost.h"
#include "layout/mesh_shape.h"
#include "layout/placement.h"
#include "layout/transitions.h"

namespace dtensor {

// Note [Redistribute step legality]
// The table itself is Note [Placement transitions] in transitions.h; this is
// why its conditions are what they are.
// A step changes ONE mesh dim i from `from` to `to`; n = mesh.size(i). Mesh
// dims nest left to right (See Note [Nested sharding order] in shard_layout.h),
// so a step may only touch the innermost split of a tensor dim: "i is
// innermost for d" means no mesh dim j > i with size > 1 shards d, with a
// Shard or a _StridedShard (size-1 mesh dims split nothing, so their order
// does not matter).
//   S(d) -> R      all_gather          if i is innermost for d
//   S(d) -> S(e)   all_to_all          if i is innermost for d and for e
//   R    -> S(d)   local chunk         if i is innermost for d
//   P    -> R      all_reduce(op)      always
//   P    -> S(d)   reduce_scatter(op)  if i is innermost for d
//   R    -> P(sum) local: divide by n (PyTorch's Partial._partition_value)
//   R    -> P(avg|max|min) local: keep the value (the avg, max or min of n
//                  equal values; PyTorch 2.15 too)
//   R    -> P(product)  refused: no redistribute can create it
//   P(a) -> P(b), a != b        no direct edge; the search routes it as
//                  all_reduce(a) to R, then R -> P(b) (local), b not product:
//                  what PyTorch 2.15's sharding strategies do (addmm keeping a
//                  P(sum) bias reduces a P(max) input into P(sum)). Its
//                  DTensor.redistribute refuses it, and so does ours (Note
//                  [Redistribute to Partial is internal] in core/dtensor.cc)
//   S(d) -> P(sum) local zero-fill (PyTorch 2.15's explicit-only step)  if i is
//                  innermost for d and P(sum) is the target on mesh dim i:
//                  the shard at its offset in zeros, so the sum over the
//                  group is the gathered tensor. Moves nothing, but each rank
//                  holds the full extent of d; never an intermediate step
//   _S(d, sf) -> R all_gather, then a reorder   if i is innermost for d
//   R -> _S(d, sf) local strided chunk          if i is innermost for d
//                  (Note [Strided shards] in shard_layout.h; every other
//                  change of a _StridedShard goes through R)
//   S(d) -> P(avg|max|min) no direct edge; the search routes it as S(d) -> R
//                  (all_gather) then R -> P(...) (local)
// On a size-1 mesh dim every change (including P(a) -> P(b) and R -> P(max),
// which are exact when one rank holds the whole value) is a local relabel
// (StepKind::kLocalRelabel): recorded so that executors track placements, but
// never a collective.
// Note [No P(sum) under a pending P(product)]
// R -> P(sum) divides every rank's value by n (S -> P(sum) by zero-fill does
// not, and stays legal). That is exact under pending
// P(sum|avg|max|min) on other mesh dims (they commute with a positive
// scale), but not under a pending P(product) on another mesh dim of size > 1:
// each of its m factors would be divided, dividing the product by n^m. So
// that step is illegal while such a P(product) is pending (the search reduces
// the product first), and a target keeping P(product) on one mesh dim while
// creating P(sum) on another is refused. Found by
// tests/reliability/redistribute_property_test.
//
// Partials on several mesh dims are reduced in plan order. That is exact when
// the ops commute (sum with avg, or all the same op); for a mix such as
// [P(sum), P(max)] the result depends on that order: avoid such mixes.

// Note [Redistribute plan search]
// States are full placements lists; edges are the legal steps of Note
// [Redistribute step legality] with every mesh dim ranging over R, S(0..ndim-1),
// the Partial placements that occur in `from` or `to`, then the _StridedShards
// that occur there (a strided shard is only ever left to R or made from R, so
// others never help). Dijkstra finds the
// plan that is smallest LEXICOGRAPHICALLY by (number of collectives, total
// bytes per rank, number of steps, then the sequence of (mesh dim, target)
// pairs, R < S(0) < S(1) < ... < Partial ops in ReduceOp order). Every key is
// non-decreasing along a path and the graph is finite, so the search always
// terminates, and the tie-break makes plans deterministic. The state space is
// at most (ndim + 1 + #partials)^mesh_ndim: 216 states for a 3-D tensor with
// two Partial kinds on a 3-D mesh. The CommCostModel only fills estimated_us;
// it never changes which plan wins.

// One step of a plan: mesh dim `mesh_dim` goes from `from` to `to` through
// `kind`; the placements are `before` and then `after` (which differ only at
// mesh_dim). bytes_per_rank follows Note [Comm cost model] in comm_cost.h.
// Example: {mesh_dim=1, S(0) -> R, kAllGather, [S(0), S(0)] -> [S(0), R]}.
struct RedistributeStep {
  int mesh_dim = 0;
  Placement from;
  Placement to;
  StepKind kind = StepKind::kLocalRelabel;
  int64_t group_size = 1;  // ranks along mesh_dim: the collective's group
  Placements before;
  Placements after;
  int64_t bytes_per_rank = 0;
  double estimated_us = 0.0;

  // One line, stable: "mesh dim 1: S(0) -> R via all_gather_into_tensor,
  // 64 bytes/rank, 5.501 us; [S(0), S(0)] -> [S(0), R]".
  std::string to_string() const;
};

// A redistribute plan: apply `steps` in order to go from `from` to `to`
// (both normalized: no negative shard dims). An empty plan means from == to.
struct RedistributePlan {
  Placements from;
  Placements to;
  std::vector<RedistributeStep> steps;

  // Steps whose kind is_collective. Example: 2 for [P, P] -> [R, R] on Mesh(2, 2).
  int num_collectives() const;
  // Sum of the steps' bytes_per_rank (saturating at INT64_MAX).
  int64_t total_bytes_per_rank() const;
  // Sum of the steps' estimated_us.
  double estimated_us() const;
  // Multi-line, stable: a header "[from] -> [to]: k steps, c collectives,
  // b bytes/rank, t us" then one indented "step i: ..." line per step.
  std::string to_string() const;
};

// Options of plan_redistribute. `cost` only fills RedistributeStep::estimated_us.
struct PlanOptions {
  CommCostModel cost;
};

// The cheapest plan (See Note [Redistribute plan search]) moving a tensor of
// `global_shape` with elements of `element_size` bytes from placements `from`
// to `to` on `mesh`. Negative shard dims are normalized.
// Throws LayoutError, naming the placements, shape and mesh, when
// element_size < 1, an extent is negative, a placements list does not have
// one entry per mesh dim or shards a dim the tensor lacks, or the transition is
// refused (Partial(a) -> Partial(b), or creating Partial(max|min|product);
// See Note [Redistribute step legality]); the message says what to do instead.
// Example: ({8, 8}, 4, Mesh(2, 2), [S(0), S(1)], [S(1), S(0)]) gives 2
// collectives: all_gather on mesh dim 1, all_to_all on mesh dim 0, then a
// local chunk on mesh dim 1.
RedistributePlan plan_redistribute(const std::vector<int64_t>& global_shape, int64_t element_size,
                                   const MeshShape& mesh, const Placements& from,
                                   const Placements& to, const PlanOptions& options = {});

// REFERENCE MODEL ONLY, never used for execution: PyTorch's greedy planner
// (torch/distributed/tensor/_redistribute.py, _gen_transform_infos, ~2.4), for
// benchmarks and tests to compare against. 1-D meshes: one direct step.
// Otherwise, when `from` shards anything: walk mesh dims from LAST to FIRST;
// a dim whose target is Shard(d) but whose outer mesh dims shard d differently
// now than in `to` first goes to R (all_gather), else straight to its target;
// then walk mesh dims FIRST to LAST applying every remaining change. Like
// PyTorch, changes on size-1 mesh dims issue no collective (local relabel);
// S -> P, which PyTorch refuses, is emitted as S -> R then R -> P as ours is.
// Same inputs, validation and refusals as plan_redistribute; steps carry
// bytes and estimates from the same cost model.
// Example: [S(0), S(0)] -> [R, S(0)] on Mesh(2, 2): all_gather on mesh dim 1,
// all_gather on mesh dim 0, local chunk on mesh dim 1.
RedistributePlan greedy_reference_plan(const std::vector<int64_t>& global_shape,
                                       int64_t element_size, const MeshShape& mesh,
                                       const Placements& from, const Placements& to,
                                       const PlanOptions& options = {});

// Time of one step under `cost`: estimate_us of its kind, bytes and group
// size. Example: estimate_us(local_chunk_step) == 0.0.
double estimate_us(const RedistributeStep& step, const CommCostModel& cost = {});

}  // namespace dtensor
