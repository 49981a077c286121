// Ring-formula bytes and the alpha-beta estimate of redistribute steps.
// See comm_cost.h, Note [Comm cost model].
#include "core/layout/comm_cost.h"

#include <limits>

#include "core/layout/layout_error.h"

namespace dtensor {
namespace {

constexpr int64_t kMaxBytes = std::numeric_limits<int64_t>::max();

int64_t saturating_mul(int64_t a, int64_t b) {
  int64_t out = 0;
  return __builtin_mul_overflow(a, b, &out) ? kMaxBytes : out;
}

int64_t saturating_add(int64_t a, int64_t b) {
  int64_t out = 0;
  return __builtin_add_overflow(a, b, &out) ? kMaxBytes : out;
}

// ceil(bytes * numerator / n) without overflowing the intermediate product.
int64_t ring_fraction(int64_t bytes, int64_t numerator, int64_t n) {
  DTENSOR_LAYOUT_CHECK(bytes >= 0 && n >= 1, "comm cost: bytes ", bytes, " and group size ", n,
                       " must be >= 0 and >= 1");
  const int64_t whole = saturating_mul(bytes / n, numerator);
  const int64_t rest = ((bytes % n) * numerator + n - 1) / n;  // (bytes % n) < n: no overflow
  return saturating_add(whole, rest);
}

// n * ceil(size / n): a dim of `size` elements padded so that n equal pieces cover it.
int64_t padded_extent(int64_t size, int64_t n) { return saturating_mul((size + n - 1) / n, n); }

int64_t buffer_bytes(const std::vector<int64_t>& shape, int64_t element_size) {
  int64_t bytes = element_size;
  for (int64_t extent : shape) bytes = saturating_mul(bytes, extent);
  return bytes;
}

}  // namespace

const char* step_kind_name(StepKind kind) {
  switch (kind) {
    case StepKind::kAllGather:
      return "all_gather_into_tensor";
    case StepKind::kAllToAll:
      return "all_to_all_single";
    case StepKind::kAllReduce:
      return "all_reduce";
    case StepKind::kReduceScatter:
      return "reduce_scatter_tensor";
    case StepKind::kLocalChunk:
      return "local_chunk";
    case StepKind::kLocalPartition:
      return "local_partition";
    case StepKind::kLocalRelabel:
      return "local";
  }
  return "unknown";
}

bool is_collective(StepKind kind) {
  return kind == StepKind::kAllGather || kind == StepKind::kAllToAll ||
         kind == StepKind::kAllReduce || kind == StepKind::kReduceScatter;
}

double CommCostModel::estimate_us(StepKind kind, int64_t bytes_per_rank) const {
  if (!is_collective(kind)) return 0.0;
  // GB/s = 1e9 bytes per second = 1e3 bytes per microsecond.
  return latency_us + static_cast<double>(bytes_per_rank) / (bandwidth_gbytes_per_s * 1e3);
}

int64_t all_gather_bytes_per_rank(int64_t output_bytes, int64_t n) {
  return ring_fraction(output_bytes, n - 1, n);
}

int64_t reduce_scatter_bytes_per_rank(int64_t input_bytes, int64_t n) {
  return ring_fraction(input_bytes, n - 1, n);
}

int64_t all_reduce_bytes_per_rank(int64_t bytes, int64_t n) {
  return ring_fraction(bytes, 2 * (n - 1), n);
}

int64_t all_to_all_bytes_per_rank(int64_t input_bytes, int64_t n) {
  return ring_fraction(input_bytes, n - 1, n);
}

std::vector<int64_t> padded_local_shape(const std::vector<int64_t>& global_shape,
                                        const MeshShape& mesh, const Placements& placements) {
  std::vector<int64_t> shape = global_shape;
  for (size_t i = 0; i < placements.size(); ++i) {
    if (!placements[i].is_shard()) continue;
    // torch.chunk's first piece is the largest: ceil(size / n), nested left to right.
    const int64_t n = mesh.size(static_cast<int>(i));
    int64_t& extent = shape[static_cast<size_t>(placements[i].shard_dim())];
    extent = (extent + n - 1) / n;
  }
  return shape;
}

int64_t step_bytes_per_rank(const std::vector<int64_t>& global_shape, int64_t element_size,
                            const MeshShape& mesh, const Placements& before, int mesh_dim,
                            const Placement& to, StepKind kind) {
  if (!is_collective(kind)) return 0;  // local ops move nothing
  const int64_t n = mesh.size(mesh_dim);
  const Placement& from = before[static_cast<size_t>(mesh_dim)];
  // The logical shape this mesh dim works on: what the other mesh dims leave.
  Placements others = before;
  others[static_cast<size_t>(mesh_dim)] = Replicate();
  std::vector<int64_t> shape = padded_local_shape(global_shape, mesh, others);
  switch (kind) {
    case StepKind::kAllGather: {  // S(d)->R: all_gather, (n-1)/n * padded output bytes
      auto d = static_cast<size_t>(from.shard_dim());
      shape[d] = padded_extent(shape[d], n);
      return all_gather_bytes_per_rank(buffer_bytes(shape, element_size), n);
    }
    case StepKind::kAllToAll: {  // S(d)->S(e): all_to_all, (n-1)/n * padded input bytes
      auto d = static_cast<size_t>(from.shard_dim());
      auto e = static_cast<size_t>(to.shard_dim());
      shape[d] = (shape[d] + n - 1) / n;
      shape[e] = padded_extent(shape[e], n);
      return all_to_all_bytes_per_rank(buffer_bytes(shape, element_size), n);
    }
    case StepKind::kReduceScatter: {  // P->S(d): reduce_scatter, (n-1)/n * padded input bytes
      auto d = static_cast<size_t>(to.shard_dim());
      shape[d] = padded_extent(shape[d], n);
      return reduce_scatter_bytes_per_rank(buffer_bytes(shape, element_size), n);
    }
    case StepKind::kAllReduce:  // P->R: all_reduce, 2(n-1)/n * bytes (no padding needed)
      return all_reduce_bytes_per_rank(buffer_bytes(shape, element_size), n);
    default:
      return 0;
  }
}

}  // namespace dtensor
