// Ring-formula bytes and the alpha-beta estimate of redistribute steps.
// See comm_cost.h, Note [Comm cost model].
#include "layout/comm_cost.h"

#include <algorithm>
#include <limits>

#include "layout/layout_error.h"

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

}  // namespace

double CommCostModel::collective_us(int64_t bytes_per_rank, int64_t ring_steps) const {
  // GB/s = 1e9 bytes per second = 1e3 bytes per microsecond.
  return latency_us + static_cast<double>(ring_steps) * step_latency_us +
         static_cast<double>(bytes_per_rank) / (bandwidth_gbytes_per_s * 1e3);
}

int64_t ring_steps(CollectiveKind kind, int64_t n) {
  if (n <= 1) return 0;
  return kind == CollectiveKind::kAllReduce ? 2 * (n - 1) : n - 1;
}

int64_t padded_extent(int64_t size, int64_t n) { return saturating_mul((size + n - 1) / n, n); }

int64_t buffer_bytes(const std::vector<int64_t>& shape, int64_t element_size) {
  int64_t bytes = element_size;
  for (int64_t extent : shape) bytes = saturating_mul(bytes, extent);
  return bytes;
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

int64_t padded_split_extent(int64_t size, int64_t n, const Placement& split) {
  if (!split.is_strided_shard()) return (size + n - 1) / n;
  const int64_t sf = split.split_factor();
  int64_t largest = 0;
  for (int64_t j = 0; j < sf; ++j) {
    // torch.chunk of size into sf: ceil(size / sf)-sized pieces, the last ones shorter.
    const int64_t chunk = (size + sf - 1) / sf;
    const int64_t piece = std::max<int64_t>(0, std::min(chunk, size - chunk * j));
    largest += (piece + n - 1) / n;
  }
  return largest;
}

std::vector<int64_t> padded_local_shape(const std::vector<int64_t>& global_shape,
                                        const MeshShape& mesh, const Placements& placements) {
  std::vector<int64_t> shape = global_shape;
  for (size_t i = 0; i < placements.size(); ++i) {
    if (!placements[i].splits_dim()) continue;
    // torch.chunk's first piece is the largest: ceil(size / n), nested left to right.
    const int64_t n = mesh.size(static_cast<int>(i));
    int64_t& extent = shape[static_cast<size_t>(placements[i].shard_dim())];
    extent = padded_split_extent(extent, n, placements[i]);
  }
  return shape;
}

int64_t ring_bytes_per_rank(CollectiveKind kind, int64_t input_bytes, int64_t output_bytes,
                            int64_t n) {
  if (n <= 1) return 0;
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return all_reduce_bytes_per_rank(input_bytes, n);
    case CollectiveKind::kAllGatherIntoTensor:
      return all_gather_bytes_per_rank(output_bytes, n);
    case CollectiveKind::kReduceScatterTensor:
      return reduce_scatter_bytes_per_rank(input_bytes, n);
    case CollectiveKind::kAllToAllSingle:
      return all_to_all_bytes_per_rank(input_bytes, n);
    case CollectiveKind::kBarrier:
      return 0;
    case CollectiveKind::kBroadcast:
    case CollectiveKind::kScatter:
      break;
  }
  return input_bytes;  // broadcast, scatter: what this rank contributed
}

}  // namespace dtensor
