// Which block of a global tensor each rank writes to a checkpoint, and which
// saved blocks a rank must read to fill its own. Pure layout arithmetic (no
// LibTorch), shared by save and load.
//   auto chunks = write_chunks({8, 4}, MeshShape::create({2, 2}), {Shard(0), Replicate()});
//   // two chunks: rows [0, 4) written by rank 0, rows [4, 8) by rank 2
//   intersect(Box{{2, 0}, {4, 4}}, chunks[1].box);   // rows [4, 6)
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "layout/mesh_shape.h"
#include "layout/placement.h"

namespace dtensor::checkpoint {

/// Elements [offsets[d], offsets[d] + sizes[d]) along every dim d.
struct Box {
  std::vector<int64_t> offsets;
  std::vector<int64_t> sizes;

  int64_t numel() const;
  friend bool operator==(const Box& a, const Box& b) {
    return a.offsets == b.offsets && a.sizes == b.sizes;
  }
};

/// The common part of two boxes of the same rank, nullopt when it is empty.
std::optional<Box> intersect(const Box& a, const Box& b);

/// One block of a tensor and the mesh rank (index into the mesh's row-major
/// rank order, not a global rank) that writes it.
struct WriteChunk {
  int64_t mesh_rank = 0;
  Box box;
};

// Note [Who writes a chunk]
// Ranks that differ only in their coordinate on Replicate (or Partial, which
// save reduces first) mesh dims hold the same block: the one at coordinate 0
// on those dims writes it, so every element is written exactly once. Empty
// blocks (uneven shards past the end) are not written. A tensor of zero
// elements still gets its one chunk from mesh rank 0, so that load can tell
// "saved, empty" from "missing".

/// The distinct non-empty blocks of a tensor of `global_shape` laid out with
/// `placements` on `mesh`, each with its writer (Note [Who writes a chunk]),
/// in writer order. Throws LayoutError for invalid placements.
std::vector<WriteChunk> write_chunks(const std::vector<int64_t>& global_shape,
                                     const MeshShape& mesh, const Placements& placements);

}  // namespace dtensor::checkpoint
