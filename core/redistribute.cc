// Executes redistribute plans step by step through core/collectives (which
// pads uneven torch.chunk pieces for the collective and unpads after).
#include "core/redistribute.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <mutex>
#include <sstream>
#include <unordered_map>

#include "core/collectives.h"
#include "core/log.h"
#include "core/redistribution_origin.h"
#include "core/torch_errors.h"
#include "layout/merged_collectives.h"
#include "layout/redistribute_plan.h"
#include "layout/shard_layout.h"
#include "layout/transitions.h"

namespace dtensor {
namespace {

// Extent of tensor dim `dim` on this rank if mesh dim `mesh_dim` were
// Replicate: the length the group along `mesh_dim` chunks.
int64_t group_extent(const DTensorSpec& spec, int mesh_dim, int64_t dim) {
  Placements unsharded = spec.placements;
  unsharded[static_cast<size_t>(mesh_dim)] = Replicate();
  return local_shape(spec.meta.shape, spec.mesh.mesh_shape(), unsharded,
                     spec.mesh.get_coordinate())[static_cast<size_t>(dim)];
}

at::Tensor local_chunk(const at::Tensor& local, const DTensorSpec& spec, int mesh_dim, int64_t dim) {
  const int64_t n = spec.mesh.size(mesh_dim);
  ChunkSpan span = chunk_span(local.size(dim), n, spec.mesh.get_local_rank(mesh_dim));
  return local.narrow(dim, span.offset, span.size).contiguous();
}

// _StridedShard(dim, sf) -> R along mesh dim `mesh_dim`: gather every group
// rank's sub-pieces, then put them back in tensor order (piece by piece, and
// within a piece rank by rank), as PyTorch's _StridedShard._to_replicate_tensor.
at::Tensor strided_gather(const at::Tensor& local, const DTensorSpec& spec, int mesh_dim,
                          const Placement& from) {
  const int64_t dim = from.shard_dim();
  const int64_t extent = group_extent(spec, mesh_dim, dim);
  const int64_t n = spec.mesh.size(mesh_dim);
  std::vector<std::vector<ChunkSpan>> spans_of(static_cast<size_t>(n));
  std::vector<int64_t> sizes(static_cast<size_t>(n), 0);
  for (int64_t r = 0; r < n; ++r) {
    spans_of[static_cast<size_t>(r)] = strided_chunk_spans(extent, from.split_factor(), n, r);
    for (const ChunkSpan& span : spans_of[static_cast<size_t>(r)]) sizes[static_cast<size_t>(r)] += span.size;
  }
  const at::Tensor gathered = collectives::all_gather_sized(local, spec.mesh, mesh_dim, dim, sizes);
  // Where each rank's data starts in `gathered`, advanced piece by piece.
  std::vector<int64_t> cursor(static_cast<size_t>(n), 0);
  for (int64_t r = 1; r < n; ++r) cursor[static_cast<size_t>(r)] = cursor[static_cast<size_t>(r - 1)] + sizes[static_cast<size_t>(r - 1)];
  std::vector<at::Tensor> ordered;
  for (int64_t j = 0; j < from.split_factor(); ++j) {
    for (int64_t r = 0; r < n; ++r) {
      const int64_t size = spans_of[static_cast<size_t>(r)][static_cast<size_t>(j)].size;
      ordered.push_back(gathered.narrow(dim, cursor[static_cast<size_t>(r)], size));
      cursor[static_cast<size_t>(r)] += size;
    }
  }
  return at::cat(ordered, dim).contiguous();
}

// Shard(dim) -> Partial(sum) along mesh dim `mesh_dim`: this rank's shard at
// its torch.chunk offset in zeros of the group's extent, so the sum over the
// group is the gathered tensor (PyTorch 2.15's Shard._to_partial_tensor).
at::Tensor local_zero_fill(const at::Tensor& local, const DTensorSpec& spec, int mesh_dim, int64_t dim) {
  const int64_t extent = group_extent(spec, mesh_dim, dim);
  ChunkSpan span = chunk_span(extent, spec.mesh.size(mesh_dim), spec.mesh.get_local_rank(mesh_dim));
  TORCH_INTERNAL_ASSERT(span.size == local.size(dim), "local_zero_fill: rank ", spec.mesh.global_rank(),
                        " holds ", local.size(dim), " of dim ", dim, ", its chunk of ", extent,
                        " is ", span.size);
  std::vector<int64_t> shape = local.sizes().vec();
  shape[static_cast<size_t>(dim)] = extent;
  at::Tensor out = at::zeros(shape, local.options());
  out.narrow(dim, span.offset, span.size).copy_(local);
  return out;
}

// One step of a plan: the transition's collective (core/collectives) or local op.
// See Note [Placement transitions] in layout/transitions.h.
at::Tensor run_step(const at::Tensor& local, const DTensorSpec& before, const RedistributeStep& step) {
  const int i = step.mesh_dim;
  const DeviceMesh& mesh = before.mesh;
  switch (step.kind) {
    case StepKind::kAllGather: {
      // Note [Strided shards that split last]: such a _StridedShard gathers as a plain shard.
      if (step.from.is_strided_shard() &&
          !strided_shard_splits_last(before.meta.shape, mesh.mesh_shape(), before.placements, i)) {
        return strided_gather(local, before, i, step.from);
      }
      const int64_t d = step.from.shard_dim();
      return collectives::all_gather_dim(local, mesh, i, d, group_extent(before, i, d));
    }
    case StepKind::kAllToAll: {
      const int64_t d = step.from.shard_dim();
      return collectives::all_to_all_dims(local, mesh, i, d, group_extent(before, i, d),
                                          step.to.shard_dim());
    }
    case StepKind::kAllReduce:
      return collectives::all_reduce(local, mesh, i, step.from.reduce_op());
    case StepKind::kReduceScatter:
      return collectives::reduce_scatter_dim(local, mesh, i, step.to.shard_dim(),
                                             step.from.reduce_op());
    case StepKind::kLocalChunk:
      if (step.to.is_strided_shard() &&
          !strided_shard_splits_last(before.meta.shape, mesh.mesh_shape(), step.after, i)) {
        // Note [Strided shards] in layout/shard_layout.h.
        return collectives::strided_piece(local, step.to.shard_dim(), step.to.split_factor(),
                                          mesh.size(i), mesh.get_local_rank(i));
      }
      return local_chunk(local, before, i, step.to.shard_dim());
    case StepKind::kLocalPartition:
      // Replicate -> Partial(sum): every rank holds value / n so the sum is the value;
      // avg, max and min of n equal values are the value.
      if (step.to.reduce_op() == ReduceOp::kSum) return local / mesh.size(i);
      return local;
    case StepKind::kLocalZeroFill:
      return local_zero_fill(local, before, i, step.from.shard_dim());
    case StepKind::kLocalRelabel:
      return local;
  }
  TORCH_INTERNAL_ASSERT(false, "unknown redistribute step");
}

// Steps [merged.first, merged.first + merged.count) of a plan as one
// collective over `flat`, the mesh the user flattened their mesh dims into
// (Note [Merged collectives over a flattened mesh] in
// layout/merged_collectives.h). `after` is the placements after the run.
at::Tensor run_merged(const at::Tensor& local, const DTensorSpec& before, const Placements& after,
                      const RedistributeStep& head, const MergedCollective& merged, const DeviceMesh& flat) {
  at::Tensor out;
  switch (merged.kind) {
    case StepKind::kAllGather: {
      const int64_t d = head.from.shard_dim();
      const int64_t extent = local_shape(before.meta.shape, before.mesh.mesh_shape(), after,
                                         before.mesh.get_coordinate())[static_cast<size_t>(d)];
      out = collectives::all_gather_dim(local, flat, 0, d, extent);
      break;
    }
    case StepKind::kReduceScatter:
      out = collectives::reduce_scatter_dim(local, flat, 0, head.to.shard_dim(), merged.op);
      break;
    case StepKind::kAllReduce:
      out = collectives::all_reduce(local, flat, 0, merged.op);
      break;
    default:
      TORCH_INTERNAL_ASSERT(false, "run_merged: ", step_kind_name(merged.kind), " does not merge");
  }
  return merged.divide_by > 1 ? out / merged.divide_by : out;
}

// Note [Redistribute plan cache]
// The planner (a Dijkstra search over placements, layout/) costs far more
// than the collectives of a small tensor, and the same transitions repeat
// every step of a training loop (and every full_tensor call). Plans depend
// only on (global shape, element size, mesh shape, from, to), so each thread
// (each fake-world rank is one) keeps the plans it made. Bounded: cleared when
// full, so ever-changing shapes cost recomputation, never unbounded memory.
// Behind the per-thread caches sits one process-wide cache under a mutex: the
// ranks of a fake world (threads of one process) ask for the same plans at the
// same moment, and only the first computes each. Lookups that hit the
// thread's own cache never take the lock.
struct PlanKey {
  std::vector<int64_t> shape;
  int64_t element_size = 0;
  std::vector<int64_t> mesh_shape;
  Placements from;
  Placements to;
  size_t hash = 0;

  bool operator==(const PlanKey& o) const {
    return hash == o.hash && element_size == o.element_size && shape == o.shape &&
           mesh_shape == o.mesh_shape && from == o.from && to == o.to;
  }
};

struct PlanKeyHash {
  size_t operator()(const PlanKey& key) const { return key.hash; }
};

size_t hash_plan_key(const PlanKey& key) {
  size_t h = static_cast<size_t>(key.element_size);
  for (int64_t s : key.shape) h = h * 1000003u ^ static_cast<size_t>(s);
  for (int64_t s : key.mesh_shape) h = h * 31 + static_cast<size_t>(s);
  h = h * 131 + PlacementsHash()(key.from);
  return h * 131 + PlacementsHash()(key.to);
}

constexpr size_t kMaxCachedPlans = 1024;
constexpr size_t kMaxSharedPlans = 8192;

// Plans are shared and immutable, so a caller's plan outlives the cache's
// clearing (a full cache clears itself on the next insert).
using PlanPtr = std::shared_ptr<const RedistributePlan>;
using PlanMap = std::unordered_map<PlanKey, PlanPtr, PlanKeyHash>;

struct PlanCache {
  PlanMap plans;
  RedistributePlanCacheStats stats;
};

PlanCache& plan_cache() {
  thread_local PlanCache cache;
  return cache;
}

struct SharedPlanCache {
  std::mutex mutex;
  PlanMap plans;
};

SharedPlanCache& shared_plan_cache() {
  static SharedPlanCache* cache = new SharedPlanCache();  // never destroyed: used by exiting threads
  return *cache;
}

RedistributePlan compute_plan(const PlanKey& key, const DTensorSpec& from) {
  return rethrow_as_torch_error(
      [&] {
        return plan_redistribute(key.shape, key.element_size, from.mesh.mesh_shape(), key.from,
                                 key.to);
      },
      "redistribute from ", to_string(key.from), " to ", to_string(key.to), " of ",
      c10::toString(from.meta.dtype), c10::IntArrayRef(from.meta.shape), " on ",
      from.mesh.to_string(), " (rank ", from.mesh.global_rank(), ")");
}

PlanPtr shared_plan(const PlanKey& key, const DTensorSpec& from) {
  SharedPlanCache& shared = shared_plan_cache();
  std::lock_guard<std::mutex> lock(shared.mutex);
  auto it = shared.plans.find(key);
  if (it != shared.plans.end()) return it->second;
  PlanPtr plan = std::make_shared<const RedistributePlan>(compute_plan(key, from));
  if (shared.plans.size() >= kMaxSharedPlans) shared.plans.clear();
  shared.plans.emplace(key, plan);
  return plan;
}

PlanPtr cached_plan(const DTensorSpec& from, const Placements& to) {
  PlanCache& cache = plan_cache();
  PlanKey key{from.meta.shape, static_cast<int64_t>(c10::elementSize(from.meta.dtype)),
              from.mesh.shape(), from.placements, to};
  key.hash = hash_plan_key(key);
  auto it = cache.plans.find(key);
  if (it != cache.plans.end()) {
    ++cache.stats.hits;
    return it->second;
  }
  ++cache.stats.misses;
  PlanPtr plan = shared_plan(key, from);
  if (cache.plans.size() >= kMaxCachedPlans) cache.plans.clear();
  cache.plans.emplace(std::move(key), plan);
  return plan;
}

// The DTENSOR_LOG line of one redistribution: who asked (the origin frame),
// the tensor, and every step with its collective and bytes.
void log_redistribution(const DTensorSpec& from, const RedistributePlan& plan) {
  std::ostringstream out;
  out << "redistribute " << c10::toString(from.meta.dtype) << c10::IntArrayRef(from.meta.shape) << " "
      << to_string(plan.from) << " -> " << to_string(plan.to);
  if (const OriginFrame* frame = OriginFrame::current()) {
    out << " (" << (frame->is_explicit() ? "explicit " : "implicit, ");
    if (frame->is_explicit()) out << frame->cause() << ", ";
    out << frame->op();
    if (frame->input_index() >= 0) out << " input " << frame->input_index();
    out << ")";
  }
  out << ":";
  for (size_t k = 0; k < plan.steps.size(); ++k) {
    const RedistributeStep& step = plan.steps[k];
    out << (k ? ";" : "") << " mesh dim " << step.mesh_dim << " " << step.from.to_string() << " -> "
        << step.to.to_string() << " " << step_kind_name(step.kind);
    if (is_collective(step.kind)) out << " " << step.bytes_per_rank << " B/rank";
  }
  detail::emit_log_line(from.mesh.global_rank(), out.str());
}

// The runs of `plan` that merge over meshes the user flattened.
std::vector<MergedCollective> merged_runs(const RedistributePlan& plan, const DTensorSpec& from) {
  return merged_collectives(plan, from.meta.shape, from.mesh.mesh_shape(), from.mesh.get_coordinate(),
                            [&](const std::vector<int>& dims) { return from.mesh.flattened_over(dims).has_value(); });
}

// What `plan` costs once its merged runs are one collective each, as Note
// [Choosing among candidates] counts it: bytes per rank plus each
// collective's latency (a merged run's over the product of its groups).
double merged_plan_cost(const RedistributePlan& plan, const DTensorSpec& from,
                        const std::vector<MergedCollective>& runs) {
  double cost = 0;
  std::size_t next = 0;
  for (std::size_t k = 0; k < plan.steps.size();) {
    const RedistributeStep& step = plan.steps[k];
    if (next < runs.size() && runs[next].first == k) {
      const MergedCollective& run = runs[next++];
      int64_t group = 1;
      for (int d : run.mesh_dims) group *= from.mesh.size(d);
      cost += step_latency_bytes(run.kind, group);
      for (std::size_t j = k; j < k + run.count; ++j) cost += static_cast<double>(plan.steps[j].bytes_per_rank);
      k += run.count;
      continue;
    }
    if (is_collective(step.kind)) {
      cost += static_cast<double>(step.bytes_per_rank) + step_latency_bytes(step.kind, step.group_size);
    }
    ++k;
  }
  return cost;
}

double merged_plan_cost(const RedistributePlan& plan, const DTensorSpec& from) {
  return merged_plan_cost(plan, from, plan.num_collectives() > 1 ? merged_runs(plan, from)
                                                                : std::vector<MergedCollective>{});
}

// Note [Reducing a flattened group first]
// The planner costs each mesh dim's step alone and knows nothing of the
// meshes the user flattened, so [P(avg), P(avg)] -> [R, S(0)] on a 2 x 2
// mesh whose dims were flattened is planned as a reduce_scatter and an
// all_reduce (two collectives, different kinds: no merge), where one
// all_reduce over the flattened mesh and a local chunk do it (f18_0074;
// PyTorch reduces there). So when some flattened group of mesh dims holds
// Partials that the target changes, the plan that first reduces that group
// to Replicate (its all_reduces adjacent, so one merged collective) and then
// goes on to the target is compared with the direct plan, by their costs
// after merging (bytes plus latencies, so a large tensor keeps its
// reduce_scatters); the direct plan wins ties. Exact only where the reductions
// commute: every Partial of the tensor is a sum or an avg, or all have one
// op (P(max) then P(sum) is not P(sum) then P(max)).
std::optional<Placements> flattened_group_first(const DTensorSpec& from, const Placements& to,
                                                const RedistributePlan& plan,
                                                const std::vector<MergedCollective>& merged) {
  int reduced = 0;  // Partial mesh dims the target changes: a group needs two
  for (size_t d = 0; d < to.size(); ++d) {
    reduced += from.placements[d].is_partial() && from.placements[d] != to[d] ? 1 : 0;
  }
  if (reduced < 2) return std::nullopt;
  bool linear = true, one_op = true;
  std::optional<ReduceOp> op;
  for (const Placement& p : from.placements) {
    if (!p.is_partial()) continue;
    linear = linear && (p.reduce_op() == ReduceOp::kSum || p.reduce_op() == ReduceOp::kAvg);
    one_op = one_op && (!op || *op == p.reduce_op());
    op = p.reduce_op();
  }
  if (!linear && !one_op) return std::nullopt;
  const int ndim = from.mesh.ndim();
  std::optional<Placements> best;
  double best_cost = merged_plan_cost(plan, from, merged);  // the direct plan's
  for (unsigned mask = 1; mask < (1u << ndim); ++mask) {
    std::vector<int> dims;
    for (int d = 0; d < ndim; ++d) {
      if (mask & (1u << d)) dims.push_back(d);
    }
    if (dims.size() < 2) continue;
    Placements mid = from.placements;
    bool all_reduced = true;
    for (int d : dims) {
      const Placement& p = from.placements[static_cast<size_t>(d)];
      all_reduced = all_reduced && p.is_partial() && to[static_cast<size_t>(d)] != p;
      mid[static_cast<size_t>(d)] = Replicate();
    }
    if (!all_reduced || mid == to || !from.mesh.flattened_over(dims)) continue;
    try {
      DTensorSpec mid_spec = from;
      mid_spec.placements = mid;
      const double cost = merged_plan_cost(*cached_plan(from, mid), from) +
                          merged_plan_cost(*cached_plan(mid_spec, to), mid_spec);
      if (cost < best_cost) {
        best = mid;
        best_cost = cost;
      }
    } catch (const std::exception&) {
      // a refused plan is no alternative
    }
  }
  return best;
}

}  // namespace

at::Tensor redistribute_local(const at::Tensor& local, const DTensorSpec& from,
                              const Placements& to) {
  if (from.placements == to) return local;
  const PlanPtr plan = cached_plan(from, to);
  // One atomic load unless the user flattened part of this mesh.
  std::vector<MergedCollective> merged;
  if (from.mesh.has_flattened_meshes() && plan->num_collectives() > 1) {
    merged = merged_runs(*plan, from);
    if (std::optional<Placements> mid = flattened_group_first(from, to, *plan, merged)) {
      DTensorSpec mid_spec = from;
      mid_spec.placements = *mid;
      return redistribute_local(redistribute_local(local, from, *mid), mid_spec, to);
    }
  }
  if (log_enabled(LogLevel::kInfo)) log_redistribution(from, *plan);  // Note [Logging costs nothing when off]
  at::Tensor current = local;
  DTensorSpec spec = from;
  RedistributionProgress progress(from.placements, to);  // See Note [Collective origins]
  std::size_t next_merged = 0;
  for (std::size_t k = 0; k < plan->steps.size();) {
    const RedistributeStep& step = plan->steps[k];
    progress.step(step.mesh_dim, step.from, step.to);
    if (next_merged < merged.size() && merged[next_merged].first == k) {
      const MergedCollective& run = merged[next_merged++];
      const Placements& after = plan->steps[k + run.count - 1].after;
      current = run_merged(current, spec, after, step, run, *from.mesh.flattened_over(run.mesh_dims));
      spec.placements = after;
      k += run.count;
      continue;
    }
    current = run_step(current, spec, step);
    spec.placements = step.after;
    ++k;
  }
  return current;
}

std::shared_ptr<const RedistributePlan> redistribute_plan(const DTensorSpec& from,
                                                          const Placements& to) {
  return cached_plan(from, to);
}

RedistributePlanCacheStats redistribute_plan_cache_stats() {
  RedistributePlanCacheStats stats = plan_cache().stats;
  stats.size = plan_cache().plans.size();
  return stats;
}

void clear_redistribute_plan_cache() {
  plan_cache().plans.clear();
  SharedPlanCache& shared = shared_plan_cache();
  std::lock_guard<std::mutex> lock(shared.mutex);
  shared.plans.clear();
}

}  // namespace dtensor
