#include "core/checkpoint/chunks.h"

#include <algorithm>

#include "layout/shard_layout.h"

namespace dtensor::checkpoint {

int64_t Box::numel() const {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

std::optional<Box> intersect(const Box& a, const Box& b) {
  Box out;
  for (size_t d = 0; d < a.offsets.size(); ++d) {
    const int64_t begin = std::max(a.offsets[d], b.offsets[d]);
    const int64_t end = std::min(a.offsets[d] + a.sizes[d], b.offsets[d] + b.sizes[d]);
    if (end <= begin) return std::nullopt;
    out.offsets.push_back(begin);
    out.sizes.push_back(end - begin);
  }
  return out;
}

std::vector<WriteChunk> write_chunks(const std::vector<int64_t>& global_shape,
                                     const MeshShape& mesh, const Placements& placements) {
  std::vector<WriteChunk> chunks;
  for (int64_t rank = 0; rank < mesh.num_ranks(); ++rank) {
    const std::vector<int64_t> coordinate = mesh.coordinate_of(rank);
    bool writer = true;
    for (size_t d = 0; d < placements.size(); ++d) {
      if (!placements[d].splits_dim() && coordinate[d] != 0) writer = false;
    }
    if (!writer) continue;
    ShardLayout layout = local_shape_and_offset(global_shape, mesh, placements, coordinate);
    Box box{std::move(layout.global_offset), std::move(layout.local_shape)};
    if (box.numel() == 0 && !(rank == 0 && shape_numel(global_shape) == 0)) continue;
    chunks.push_back({rank, std::move(box)});
  }
  return chunks;
}

}  // namespace dtensor::checkpoint
