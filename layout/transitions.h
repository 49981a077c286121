// The placement transitions: what changing ONE mesh dim from one placement to
// another means. For every (from, to) pair this file is the one place that
// says whether the change is legal, which collective (or local op) does it,
// how many bytes each rank moves and what it costs. The redistribute planner
// (redistribute_plan.cc), the sharding-strategy cost (core/dispatch) and the
// executor (core/redistribute.cc, through core/collectives) all read it.
//   std::optional<StepKind> k = transition_kind(Shard(0), Replicate(), /*n=*/4);
//   // k == StepKind::kAllGather; step_collective(*k) == kAllGatherIntoTensor
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "layout/collective_kind.h"
#include "layout/comm_cost.h"
#include "layout/mesh_shape.h"
#include "layout/placement.h"

namespace dtensor {

// What one change on one mesh dim does: a collective over the group along
// that mesh dim, or a local op (no communication).
enum class StepKind {
  kAllGather,       // S(d) -> R
  kAllToAll,        // S(d) -> S(e)
  kAllReduce,       // P(op) -> R
  kReduceScatter,   // P(op) -> S(d)
  kLocalChunk,      // R -> S(d): keep this rank's torch.chunk piece
  kLocalPartition,  // R -> P(sum): divide by the mesh dim size; R -> P(avg|max|min): keep
  kLocalZeroFill,   // S(d) -> P(sum): the shard at its offset in zeros of the full extent
  kLocalRelabel,    // any change on a size-1 mesh dim: data unchanged
};

// Note [Placement transitions]
// The table (kTransitions in transitions.cc), one row per direct change of a
// mesh dim of size n > 1. "innermost" is Note [Redistribute step legality]'s
// nesting rule (no later mesh dim of size > 1 shards that tensor dim):
//   from   to          step             collective              needs
//   S(d)   R           all_gather       all_gather_into_tensor  d innermost
//   S(d)   S(e)        all_to_all       all_to_all_single       d and e innermost
//   R      S(d)        local chunk      -                       d innermost
//   R      P(op)       local partition  -                       op not product; no pending P(product) for sum
//   S(d)   P(sum)      local zero-fill  -                       d innermost; destination only
//   P(op)  R           all_reduce(op)   all_reduce              -
//   P(op)  S(d)        reduce_scatter   reduce_scatter_tensor   d innermost
//   _S(d)  R           all_gather       all_gather_into_tensor  d innermost; reordered after
//   R      _S(d)       local chunk      -                       d innermost; strided pieces
// "Innermost" counts a later _S(d) as a split of d too. A _S(d) whose later
// S(d)s were cut first (Note [Strided shards that split last] in
// shard_layout.h: FSDP over TP) is the innermost split itself: its gather
// and chunk are then the plain S(d) ones inside the later mesh dims' piece. A _StridedShard
// (Note [Strided shards] in shard_layout.h) has only those two rows: every
// other change goes through R, as PyTorch's does.
// Pairs with no row have no direct step: S -> P(avg|max|min) and
// P(a) -> P(b) (the planner routes them through R; a strategy prices the
// latter as its all_reduce), and R -> P(product) (refused).
// R -> P(max|min) keeps the value, as PyTorch 2.15's Partial._partition_value
// (the max of n equal values is the value).
// "Destination only" (PyTorch 2.15's explicit-only Shard -> Partial("sum")):
// a plan may take that step only on a mesh dim whose TARGET is P(sum), never
// as an intermediate, and strategies never pay for it (transition_kind has no
// kind for it, as 2.15 gives it infinite strategy cost): it moves no bytes but
// allocates the full extent on every rank. Zero-fill is exact under any other
// pending Partial (the zeros add nothing, and each shard sits apart).
// On a size-1 mesh dim every change is a local relabel. Bytes per rank follow
// Note [Comm cost model] in comm_cost.h on the padded buffer the executor
// sends; the cost is CommCostModel's alpha-beta time of those bytes.
// To add a transition: a row here and in kTransitions, its bytes in
// step_bytes_per_rank, and its execution in core/redistribute.cc's run_step
// (a call into core/collectives).

// The name PyTorch's functional collectives (and CommDebugMode) use for the
// collective kinds; local kinds give "local_chunk", "local_partition",
// "local_zero_fill" and "local". Example: step_kind_name(StepKind::kAllToAll) == "all_to_all_single".
const char* step_kind_name(StepKind kind);

// True for the four kinds that communicate. Example: is_collective(kLocalChunk) == false.
bool is_collective(StepKind kind);

// The collective a step issues; nullopt for local steps.
// Example: step_collective(StepKind::kReduceScatter) == kReduceScatterTensor.
std::optional<CollectiveKind> step_collective(StepKind kind);

// The kind of changing a mesh dim of size n from `from` to `to`, ignoring
// nesting (the table's row); nullopt when no direct step exists or the row is
// destination only (what a sharding strategy may ask for). A change to the
// same placement is not a transition: callers skip it.
// Example: transition_kind(Partial(), Shard(1), 2) == kReduceScatter.
std::optional<StepKind> transition_kind(const Placement& from, const Placement& to, int64_t n);

// The kind of changing mesh dim i of `state` to `to` in a plan towards `goal`,
// with the nesting, P(product) and destination-only conditions of the table;
// nullopt when illegal. Without a goal, destination-only rows are illegal.
// Example: ([S(0), S(0)], Mesh(2, 2), 0, R) -> nullopt (mesh dim 1 still splits dim 0).
// Example: ([R, S(0)], Mesh(2, 2), 1, P(sum), goal [R, P(sum)]) -> kLocalZeroFill.
// With the tensor's global shape, a _StridedShard that splits last (Note
// [Strided shards that split last] in shard_layout.h) counts as innermost.
std::optional<StepKind> legal_step(const Placements& state, const MeshShape& mesh, int i,
                                   const Placement& to, const Placements* goal = nullptr,
                                   const std::vector<int64_t>* global_shape = nullptr);

// True for the Partials that R can be turned into locally: P(sum) (divide by
// n), P(avg), P(max), P(min) (keep the value); not P(product).
bool is_creatable_partial(const Placement& p);

// Bytes one rank moves when mesh dim `mesh_dim` goes from before[mesh_dim] to
// `to` with `kind`, computed from the CURRENT logical shape: the extents that
// the other mesh dims of `before` leave (padded, max over ranks), then the ring
// formula of the step's collective on the padded buffer. Local kinds give 0.
// Preconditions: placements normalized, element_size >= 1, and `kind` matches
// the transition (e.g. kAllGather needs a Shard before).
// Example: ({5}, 4 bytes, Mesh(4), [S(0)], 0, R, kAllGather) -> 3/4 * (4*2*4) = 24.
int64_t step_bytes_per_rank(const std::vector<int64_t>& global_shape, int64_t element_size,
                            const MeshShape& mesh, const Placements& before, int mesh_dim,
                            const Placement& to, StepKind kind);

// Time of a step over a group of n ranks: 0 for local kinds, else
// model.collective_us with the collective's ring steps.
// Example: estimate_us(StepKind::kAllReduce, 50'000, 2, CommCostModel{}) == 7.0.
double estimate_us(StepKind kind, int64_t bytes_per_rank, int64_t n, const CommCostModel& model = {});

// A step's latency in bytes (CommCostModel::latency_bytes of its ring steps
// over n ranks); 0 for local kinds. Example: (kAllGather, 2) -> 275'000.
double step_latency_bytes(StepKind kind, int64_t n, const CommCostModel& model = {});

// What changing mesh dim `mesh_dim` of `before` to `to` costs, in bytes: the
// step's bytes per rank plus, for a collective, its latency expressed in
// bytes (step_latency_bytes). nullopt when the table has no direct
// step (nesting is not checked: strategies are compared one mesh dim at a
// time). The same on every rank. 0 when to == before[mesh_dim].
// Example: ({8}, 4, Mesh(4), [S(0)], 0, R) -> 250'000 + 3 * 25'000 + 24.
std::optional<double> transition_cost_bytes(const std::vector<int64_t>& global_shape,
                                            int64_t element_size, const MeshShape& mesh,
                                            const Placements& before, int mesh_dim,
                                            const Placement& to, const CommCostModel& model = {});

}  // namespace dtensor
