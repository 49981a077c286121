// See Note [Merged collectives over a flattened mesh] in merged_collectives.h.
#include "layout/merged_collectives.h"

#include <algorithm>

#include "layout/shard_layout.h"

namespace dtensor {
namespace {

bool mergeable_kind(const RedistributeStep& step) {
  switch (step.kind) {
    case StepKind::kAllGather:
      return step.from.is_shard();  // not a _StridedShard (PyTorch: no comm type, never merged)
    case StepKind::kAllReduce:
    case StepKind::kReduceScatter:
      return true;
    default:
      return false;
  }
}

bool sum_or_avg(const Placement& p) {
  return p.is_partial() && (p.reduce_op() == ReduceOp::kSum || p.reduce_op() == ReduceOp::kAvg);
}

// PyTorch's are_placements_mergeable: the same change, or two Partial(sum |
// avg) sources going to the same placement.
bool same_change(const RedistributeStep& a, const RedistributeStep& b) {
  if (a.kind != b.kind || !(a.to == b.to)) return false;
  return a.from == b.from || (sum_or_avg(a.from) && sum_or_avg(b.from));
}

// True when the torch.chunk pieces of `extent` nested over `sizes` (outer
// first) are the pieces of one chunking over their product, rank by rank in
// row-major order: then a flat all_gather puts every nested piece in place.
bool nested_is_flat(int64_t extent, const std::vector<int64_t>& sizes) {
  int64_t total = 1;
  for (int64_t n : sizes) total *= n;
  for (int64_t k = 0; k < total; ++k) {
    // Rank k's nested piece: chunk its coordinate along each mesh dim in turn.
    int64_t offset = 0, size = extent, rest = k, stride = total;
    for (int64_t n : sizes) {
      stride /= n;
      const ChunkSpan span = chunk_span(size, n, rest / stride);
      rest %= stride;
      offset += span.offset;
      size = span.size;
    }
    const ChunkSpan flat = chunk_span(extent, total, k);
    if (size != flat.size || (size > 0 && offset != flat.offset)) return false;
  }
  return true;
}

// The merged collective of steps[first, first + count), or one with count 0
// when PyTorch's conditions (or ours for uneven all_gathers) fail.
MergedCollective try_merge(const RedistributePlan& plan, std::size_t first, std::size_t count,
                           const std::vector<int64_t>& global_shape, const MeshShape& mesh,
                           const std::vector<int64_t>& coordinate,
                           const std::function<bool(const std::vector<int>&)>& flattened) {
  MergedCollective merged;
  if (count < 2) return merged;
  const RedistributeStep& head = plan.steps[first];
  std::vector<int> in_order;
  for (std::size_t k = first; k < first + count; ++k) in_order.push_back(plan.steps[k].mesh_dim);
  std::vector<int> ascending = in_order;
  std::sort(ascending.begin(), ascending.end());
  if (head.kind == StepKind::kAllGather &&
      !std::equal(in_order.begin(), in_order.end(), ascending.rbegin(), ascending.rend())) {
    return merged;
  }
  if (head.kind == StepKind::kReduceScatter && in_order != ascending) return merged;
  if (!flattened(ascending)) return merged;
  std::vector<int64_t> sizes;
  int64_t group = 1;
  for (int d : ascending) {
    sizes.push_back(mesh.size(d));
    group *= mesh.size(d);
  }
  if (head.kind == StepKind::kAllGather) {
    // The extent the group shares: dim d with the group's mesh dims replicated.
    const int64_t d = head.from.shard_dim();
    const int64_t extent =
        local_shape(global_shape, mesh, plan.steps[first + count - 1].after, coordinate)[static_cast<size_t>(d)];
    if (!nested_is_flat(extent, sizes)) return merged;
  } else if (head.kind == StepKind::kReduceScatter) {
    const int64_t d = head.to.shard_dim();
    const int64_t extent = local_shape(global_shape, mesh, head.before, coordinate)[static_cast<size_t>(d)];
    if (extent % group != 0) return merged;
  }
  merged.first = first;
  merged.count = count;
  merged.mesh_dims = ascending;
  merged.kind = head.kind;
  if (head.from.is_partial()) {
    merged.op = head.from.reduce_op();
    for (std::size_t k = first; k < first + count; ++k) {
      const RedistributeStep& step = plan.steps[k];
      if (step.from.reduce_op() == ReduceOp::kAvg) merged.divide_by *= mesh.size(step.mesh_dim);
    }
    if (merged.divide_by > 1) merged.op = ReduceOp::kSum;
  }
  return merged;
}

}  // namespace

std::vector<MergedCollective> merged_collectives(const RedistributePlan& plan,
                                                 const std::vector<int64_t>& global_shape,
                                                 const MeshShape& mesh,
                                                 const std::vector<int64_t>& coordinate,
                                                 const std::function<bool(const std::vector<int>&)>& flattened) {
  std::vector<MergedCollective> out;
  std::size_t i = 0;
  while (i < plan.steps.size()) {
    if (!mergeable_kind(plan.steps[i])) {
      ++i;
      continue;
    }
    std::size_t j = i + 1;
    while (j < plan.steps.size() && mergeable_kind(plan.steps[j]) && same_change(plan.steps[j], plan.steps[i])) ++j;
    MergedCollective merged = try_merge(plan, i, j - i, global_shape, mesh, coordinate, flattened);
    if (merged.count > 0) out.push_back(std::move(merged));
    i = j;
  }
  return out;
}

}  // namespace dtensor
