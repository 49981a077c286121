// Executes redistribute plans step by step. Uneven shards are padded to the
// largest chunk for the collective and unpadded after (torch.chunk layout).
#include "core/redistribute.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <mutex>
#include <unordered_map>

#include "core/layout/layout_error.h"
#include "core/layout/redistribute_plan.h"
#include "core/layout/shard_layout.h"

namespace dtensor {
namespace {

// Extent of tensor dim `dim` on this rank if mesh dim `mesh_dim` were
// Replicate: the length the group along `mesh_dim` chunks.
int64_t group_extent(const DTensorSpec& spec, int mesh_dim, int64_t dim) {
  Placements unsharded = spec.placements;
  unsharded[static_cast<size_t>(mesh_dim)] = Replicate();
  ShardLayout layout = local_shape_and_offset(spec.meta.shape, spec.mesh.mesh_shape(), unsharded,
                                              spec.mesh.get_coordinate());
  return layout.local_shape[static_cast<size_t>(dim)];
}

int64_t ceil_div(int64_t a, int64_t b) { return b == 0 ? 0 : (a + b - 1) / b; }

// `x` zero-padded at the end of `dim` to `size`.
at::Tensor pad_dim(const at::Tensor& x, int64_t dim, int64_t size) {
  if (x.size(dim) == size) return x;
  std::vector<int64_t> shape = x.sizes().vec();
  shape[static_cast<size_t>(dim)] = size;
  at::Tensor out = at::zeros(shape, x.options());
  out.narrow(dim, 0, x.size(dim)).copy_(x);
  return out;
}

at::Tensor all_gather_dim(const at::Tensor& local, const DTensorSpec& spec, int mesh_dim,
                          int64_t dim) {
  Communicator& comm = spec.mesh.communicator(mesh_dim);
  const int64_t n = comm.size();
  const int64_t extent = group_extent(spec, mesh_dim, dim);
  const int64_t chunk = ceil_div(extent, n);
  at::Tensor send = pad_dim(local.movedim(dim, 0), 0, chunk).contiguous();
  std::vector<int64_t> out_shape = send.sizes().vec();
  out_shape[0] = chunk * n;
  at::Tensor gathered = at::empty(out_shape, send.options());
  comm.all_gather_into_tensor(gathered, send);
  if (chunk * n != extent) {  // uneven: drop each piece's padding
    std::vector<at::Tensor> pieces;
    for (int64_t j = 0; j < n; ++j) {
      ChunkSpan span = chunk_span(extent, n, j);
      pieces.push_back(gathered.narrow(0, j * chunk, span.size));
    }
    gathered = at::cat(pieces, 0);
  }
  return gathered.movedim(0, dim).contiguous();
}

at::Tensor reduce_scatter_dim(const at::Tensor& local, const DTensorSpec& spec, int mesh_dim,
                              int64_t dim, ReduceOp op) {
  Communicator& comm = spec.mesh.communicator(mesh_dim);
  const int64_t n = comm.size();
  const int64_t extent = local.size(dim);
  const int64_t chunk = ceil_div(extent, n);
  at::Tensor send = pad_dim(local.movedim(dim, 0), 0, chunk * n).contiguous();
  std::vector<int64_t> out_shape = send.sizes().vec();
  out_shape[0] = chunk;
  at::Tensor out = at::empty(out_shape, send.options());
  ReduceScatterOptions options;
  options.reduce_op = op;
  comm.reduce_scatter_tensor(out, send, options);
  ChunkSpan mine = chunk_span(extent, n, comm.rank());
  return out.narrow(0, 0, mine.size).movedim(0, dim).contiguous();
}

// S(from_dim) -> S(to_dim) on one mesh dim with all_to_all_single: every rank
// sends chunk j of `to_dim` to rank j and receives rank j's piece of `from_dim`.
at::Tensor all_to_all_dims(const at::Tensor& local, const DTensorSpec& spec, int mesh_dim,
                           int64_t from_dim, int64_t to_dim) {
  Communicator& comm = spec.mesh.communicator(mesh_dim);
  const int64_t n = comm.size();
  const int64_t from_extent = group_extent(spec, mesh_dim, from_dim);
  const int64_t from_chunk = ceil_div(from_extent, n);
  const int64_t to_extent = local.size(to_dim);
  const int64_t to_chunk = ceil_div(to_extent, n);
  at::Tensor padded = pad_dim(pad_dim(local, from_dim, from_chunk), to_dim, to_chunk * n);
  std::vector<int64_t> split = {n, to_chunk};
  at::Tensor send = padded.unflatten(to_dim, split).movedim(to_dim, 0).contiguous();
  at::Tensor received = at::empty_like(send);
  comm.all_to_all_single(received, send);
  std::vector<at::Tensor> pieces;
  for (int64_t j = 0; j < n; ++j) {
    pieces.push_back(received[j].narrow(from_dim, 0, chunk_span(from_extent, n, j).size));
  }
  ChunkSpan mine = chunk_span(to_extent, n, comm.rank());
  return at::cat(pieces, from_dim).narrow(to_dim, 0, mine.size).contiguous();
}

at::Tensor local_chunk(const at::Tensor& local, const DTensorSpec& spec, int mesh_dim, int64_t dim) {
  const int64_t n = spec.mesh.size(mesh_dim);
  ChunkSpan span = chunk_span(local.size(dim), n, spec.mesh.get_local_rank(mesh_dim));
  return local.narrow(dim, span.offset, span.size).contiguous();
}

at::Tensor run_step(const at::Tensor& local, const DTensorSpec& before, const RedistributeStep& step) {
  const int i = step.mesh_dim;
  switch (step.kind) {
    case StepKind::kAllGather:
      return all_gather_dim(local, before, i, step.from.shard_dim());
    case StepKind::kAllToAll:
      return all_to_all_dims(local, before, i, step.from.shard_dim(), step.to.shard_dim());
    case StepKind::kAllReduce: {
      at::Tensor out = local.contiguous().clone();
      AllReduceOptions options;
      options.reduce_op = step.from.reduce_op();
      before.mesh.communicator(i).all_reduce(out, options);
      return out;
    }
    case StepKind::kReduceScatter:
      return reduce_scatter_dim(local, before, i, step.to.shard_dim(), step.from.reduce_op());
    case StepKind::kLocalChunk:
      return local_chunk(local, before, i, step.to.shard_dim());
    case StepKind::kLocalPartition:
      // Replicate -> Partial(sum): every rank holds value / n so the sum is the value.
      if (step.to.reduce_op() == ReduceOp::kSum) return local / before.mesh.size(i);
      return local;
    case StepKind::kLocalRelabel:
      return local;
  }
  TORCH_INTERNAL_ASSERT(false, "unknown redistribute step");
}

// Note [Redistribute plan cache]
// The planner (a Dijkstra search over placements, core/layout) costs far more
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

using PlanMap = std::unordered_map<PlanKey, RedistributePlan, PlanKeyHash>;

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
  try {
    return plan_redistribute(key.shape, key.element_size, from.mesh.mesh_shape(), key.from, key.to);
  } catch (const LayoutError& e) {
    TORCH_CHECK(false, "redistribute from ", to_string(key.from), " to ", to_string(key.to), " of ",
                c10::toString(from.meta.dtype), c10::IntArrayRef(from.meta.shape), " on ",
                from.mesh.to_string(), " (rank ", from.mesh.global_rank(), "): ", e.what());
  }
}

RedistributePlan shared_plan(const PlanKey& key, const DTensorSpec& from) {
  SharedPlanCache& shared = shared_plan_cache();
  std::lock_guard<std::mutex> lock(shared.mutex);
  auto it = shared.plans.find(key);
  if (it != shared.plans.end()) return it->second;
  RedistributePlan plan = compute_plan(key, from);
  if (shared.plans.size() >= kMaxSharedPlans) shared.plans.clear();
  shared.plans.emplace(key, plan);
  return plan;
}

const RedistributePlan& cached_plan(const DTensorSpec& from, const Placements& to) {
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
  RedistributePlan plan = shared_plan(key, from);
  if (cache.plans.size() >= kMaxCachedPlans) cache.plans.clear();
  return cache.plans.emplace(std::move(key), std::move(plan)).first->second;
}

}  // namespace

at::Tensor redistribute_local(const at::Tensor& local, const DTensorSpec& from,
                              const Placements& to) {
  if (from.placements == to) return local;
  const RedistributePlan& plan = cached_plan(from, to);
  at::Tensor current = local;
  DTensorSpec spec = from;
  for (const RedistributeStep& step : plan.steps) {
    current = run_step(current, spec, step);
    spec.placements = step.after;
  }
  return current;
}

const RedistributePlan& redistribute_plan(const DTensorSpec& from, const Placements& to) {
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
