// The placement transition table and what reads it: legality, bytes, cost.
// See transitions.h, Note [Placement transitions].
#include "layout/transitions.h"

#include "layout/shard_layout.h"

namespace dtensor {
namespace {

using Kind = Placement::Kind;

// The bytes a rank contributes to and receives from one collective.
struct Buffers {
  int64_t input = 0;
  int64_t output = 0;
};

// Each row's buffers, from the logical shape the mesh dim works on (what the
// other mesh dims leave, padded), as core/collectives pads them.
Buffers gather_buffers(std::vector<int64_t> shape, int64_t n, const Placement& from,
                       const Placement&, int64_t element_size) {
  auto d = static_cast<size_t>(from.shard_dim());
  shape[d] = padded_extent(shape[d], n);
  const int64_t out = buffer_bytes(shape, element_size);
  return {out / n, out};
}

// _S(d, sf) -> R: each rank sends its padded strided piece (the largest one,
// rank 0's: padded_split_extent), as core/redistribute pads it.
Buffers strided_gather_buffers(std::vector<int64_t> shape, int64_t n, const Placement& from,
                               const Placement&, int64_t element_size) {
  auto d = static_cast<size_t>(from.shard_dim());
  shape[d] = padded_split_extent(shape[d], n, from);
  const int64_t in = buffer_bytes(shape, element_size);
  return {in, in * n};
}

Buffers all_to_all_buffers(std::vector<int64_t> shape, int64_t n, const Placement& from,
                           const Placement& to, int64_t element_size) {
  auto d = static_cast<size_t>(from.shard_dim());
  auto e = static_cast<size_t>(to.shard_dim());
  shape[d] = (shape[d] + n - 1) / n;
  shape[e] = padded_extent(shape[e], n);
  const int64_t bytes = buffer_bytes(shape, element_size);
  return {bytes, bytes};
}

Buffers reduce_scatter_buffers(std::vector<int64_t> shape, int64_t n, const Placement&,
                               const Placement& to, int64_t element_size) {
  auto d = static_cast<size_t>(to.shard_dim());
  shape[d] = padded_extent(shape[d], n);
  const int64_t in = buffer_bytes(shape, element_size);
  return {in, in / n};
}

Buffers all_reduce_buffers(std::vector<int64_t> shape, int64_t, const Placement&, const Placement&,
                           int64_t element_size) {
  const int64_t bytes = buffer_bytes(shape, element_size);  // no padding needed
  return {bytes, bytes};
}

bool creates_allowed_partial(const Placement&, const Placement& to) {
  return is_creatable_partial(to);
}

bool makes_sum_partial(const Placement&, const Placement& to) {
  return to.reduce_op() == ReduceOp::kSum;
}

// One direct change of a mesh dim of size > 1. See Note [Placement transitions].
struct TransitionRow {
  Kind from;
  Kind to;
  StepKind step;
  bool from_shard_innermost;  // the S(d) left must be the innermost split of d
  bool to_shard_innermost;    // the S(d) made must be the innermost split of d
  bool destination_only;      // only where `to` is the plan's target on that mesh dim
  bool (*allowed)(const Placement& from, const Placement& to);  // extra condition, or null
  Buffers (*buffers)(std::vector<int64_t> shape, int64_t n, const Placement& from,
                     const Placement& to, int64_t element_size);  // null: a local step
};

constexpr TransitionRow kTransitions[] = {
    {Kind::kShard, Kind::kReplicate, StepKind::kAllGather, true, false, false, nullptr,
     gather_buffers},
    {Kind::kShard, Kind::kShard, StepKind::kAllToAll, true, true, false, nullptr,
     all_to_all_buffers},
    {Kind::kReplicate, Kind::kShard, StepKind::kLocalChunk, false, true, false, nullptr, nullptr},
    {Kind::kReplicate, Kind::kPartial, StepKind::kLocalPartition, false, false, false,
     creates_allowed_partial, nullptr},
    {Kind::kShard, Kind::kPartial, StepKind::kLocalZeroFill, true, false, true, makes_sum_partial,
     nullptr},
    {Kind::kPartial, Kind::kReplicate, StepKind::kAllReduce, false, false, false, nullptr,
     all_reduce_buffers},
    {Kind::kPartial, Kind::kShard, StepKind::kReduceScatter, false, true, false, nullptr,
     reduce_scatter_buffers},
    {Kind::kStridedShard, Kind::kReplicate, StepKind::kAllGather, true, false, false, nullptr,
     strided_gather_buffers},
    {Kind::kReplicate, Kind::kStridedShard, StepKind::kLocalChunk, false, true, false, nullptr,
     nullptr},
};

const TransitionRow* find_row(const Placement& from, const Placement& to) {
  for (const TransitionRow& row : kTransitions) {
    if (row.from != from.kind() || row.to != to.kind()) continue;
    if (row.allowed && !row.allowed(from, to)) return nullptr;
    return &row;
  }
  return nullptr;
}

const TransitionRow* find_row(StepKind step) {
  for (const TransitionRow& row : kTransitions) {
    if (row.step == step) return &row;
  }
  return nullptr;
}

// True when a mesh dim other than i (of size > 1) holds P(product) in `state`.
bool has_pending_product(const Placements& state, const MeshShape& mesh, int i) {
  for (int j = 0; j < mesh.ndim(); ++j) {
    const Placement& p = state[static_cast<size_t>(j)];
    if (j != i && mesh.size(j) > 1 && p.is_partial() && p.reduce_op() == ReduceOp::kProduct) return true;
  }
  return false;
}

// True when no mesh dim after `i` (of size > 1) shards tensor dim `d`.
bool is_innermost(const Placements& state, const MeshShape& mesh, int i, int64_t d) {
  for (int j = i + 1; j < mesh.ndim(); ++j) {
    if (mesh.size(j) > 1 && state[static_cast<size_t>(j)].splits_dim(d)) return false;
  }
  return true;
}

}  // namespace

const char* step_kind_name(StepKind kind) {
  if (std::optional<CollectiveKind> collective = step_collective(kind)) {
    return collective_name(*collective);
  }
  switch (kind) {
    case StepKind::kLocalChunk:
      return "local_chunk";
    case StepKind::kLocalPartition:
      return "local_partition";
    case StepKind::kLocalZeroFill:
      return "local_zero_fill";
    case StepKind::kLocalRelabel:
      return "local";
    default:
      return "unknown";
  }
}

std::optional<CollectiveKind> step_collective(StepKind kind) {
  switch (kind) {
    case StepKind::kAllGather:
      return CollectiveKind::kAllGatherIntoTensor;
    case StepKind::kAllToAll:
      return CollectiveKind::kAllToAllSingle;
    case StepKind::kAllReduce:
      return CollectiveKind::kAllReduce;
    case StepKind::kReduceScatter:
      return CollectiveKind::kReduceScatterTensor;
    case StepKind::kLocalChunk:
    case StepKind::kLocalPartition:
    case StepKind::kLocalZeroFill:
    case StepKind::kLocalRelabel:
      return std::nullopt;
  }
  return std::nullopt;
}

bool is_collective(StepKind kind) { return step_collective(kind).has_value(); }

bool is_creatable_partial(const Placement& p) {
  return p.is_partial() && p.reduce_op() != ReduceOp::kProduct;
}

std::optional<StepKind> transition_kind(const Placement& from, const Placement& to, int64_t n) {
  if (n == 1) return StepKind::kLocalRelabel;  // one rank: data unchanged
  const TransitionRow* row = find_row(from, to);
  if (!row || row->destination_only) return std::nullopt;
  return row->step;
}

std::optional<StepKind> legal_step(const Placements& state, const MeshShape& mesh, int i,
                                   const Placement& to, const Placements* goal,
                                   const std::vector<int64_t>* global_shape) {
  const Placement& from = state[static_cast<size_t>(i)];
  if (mesh.size(i) == 1) return StepKind::kLocalRelabel;
  const TransitionRow* row = find_row(from, to);
  if (!row) return std::nullopt;
  if (row->destination_only && (!goal || (*goal)[static_cast<size_t>(i)] != to)) return std::nullopt;
  // Note [Strided shards that split last]: such a _StridedShard is the innermost split of its dim.
  auto splits_last = [&](const Placements& layout) {
    return global_shape != nullptr && strided_shard_splits_last(*global_shape, mesh, layout, i);
  };
  if (row->from_shard_innermost && !is_innermost(state, mesh, i, from.shard_dim()) && !splits_last(state)) {
    return std::nullopt;
  }
  if (row->to_shard_innermost && !is_innermost(state, mesh, i, to.shard_dim())) {
    Placements after = state;
    after[static_cast<size_t>(i)] = to;
    if (!splits_last(after)) return std::nullopt;
  }
  // See Note [No P(sum) under a pending P(product)] in redistribute_plan.h.
  if (row->step == StepKind::kLocalPartition && to.reduce_op() == ReduceOp::kSum &&
      has_pending_product(state, mesh, i)) {
    return std::nullopt;
  }
  return row->step;
}

int64_t step_bytes_per_rank(const std::vector<int64_t>& global_shape, int64_t element_size,
                            const MeshShape& mesh, const Placements& before, int mesh_dim,
                            const Placement& to, StepKind kind) {
  const std::optional<CollectiveKind> collective = step_collective(kind);
  if (!collective) return 0;  // local ops move nothing
  const TransitionRow* row = find_row(kind);
  const int64_t n = mesh.size(mesh_dim);
  // The logical shape this mesh dim works on: what the other mesh dims leave.
  Placements others = before;
  others[static_cast<size_t>(mesh_dim)] = Replicate();
  // A _StridedShard that splits last is gathered as a plain shard of what the others leave.
  const bool plain = kind == StepKind::kAllGather && before[static_cast<size_t>(mesh_dim)].is_strided_shard() &&
                     strided_shard_splits_last(global_shape, mesh, before, mesh_dim);
  const Buffers buffers = (plain ? gather_buffers : row->buffers)(padded_local_shape(global_shape, mesh, others), n,
                                                                   before[static_cast<size_t>(mesh_dim)], to,
                                                                   element_size);
  return ring_bytes_per_rank(*collective, buffers.input, buffers.output, n);
}

double estimate_us(StepKind kind, int64_t bytes_per_rank, int64_t n, const CommCostModel& model) {
  const std::optional<CollectiveKind> collective = step_collective(kind);
  return collective ? model.collective_us(bytes_per_rank, ring_steps(*collective, n)) : 0.0;
}

double step_latency_bytes(StepKind kind, int64_t n, const CommCostModel& model) {
  const std::optional<CollectiveKind> collective = step_collective(kind);
  return collective ? model.latency_bytes(ring_steps(*collective, n)) : 0.0;
}

std::optional<double> transition_cost_bytes(const std::vector<int64_t>& global_shape,
                                            int64_t element_size, const MeshShape& mesh,
                                            const Placements& before, int mesh_dim,
                                            const Placement& to, const CommCostModel& model) {
  const Placement& from = before[static_cast<size_t>(mesh_dim)];
  if (from == to) return 0.0;
  const std::optional<StepKind> kind = transition_kind(from, to, mesh.size(mesh_dim));
  if (!kind) return std::nullopt;
  if (!is_collective(*kind)) return 0.0;
  const int64_t bytes =
      step_bytes_per_rank(global_shape, element_size, mesh, before, mesh_dim, to, *kind);
  return step_latency_bytes(*kind, mesh.size(mesh_dim), model) + static_cast<double>(bytes);
}

}  // namespace dtensor
