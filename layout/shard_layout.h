// Where each rank's shard lives: torch.chunk spans, every rank's local shape
// and global offset under a mesh + placements, and the inverse (global shape
// from local shapes).
//   auto mesh = MeshShape::create({2, 2});
//   local_shape_and_offset({5, 4}, mesh, {Shard(0), Shard(1)}, /*rank=*/2);  // {[2, 2], [3, 0]}
#pragma once

#include <cstdint>
#include <vector>

#include "layout/mesh_shape.h"
#include "layout/placement.h"

namespace dtensor {

// Note [Chunk semantics]
// Sharding follows torch.chunk, as DTensor does: a dim of size n split into k
// pieces uses pieces of ceil(n / k) elements, so trailing pieces are smaller or
// empty: 13 on 4 -> 4,4,4,1; 5 on 4 -> 2,2,1,0; 6 on 4 -> 2,2,2,0; 0 on 3 ->
// 0,0,0. An empty piece's offset is clamped to n (PyTorch's
// _local_shard_size_and_offset returns the same), so every box stays within
// the tensor's bounds.

// Note [Nested sharding order]
// When several mesh dims shard the same tensor dim, e.g. [S(0), S(0)] on
// Mesh(2, 2), the mesh dims nest left to right, as PyTorch's
// compute_local_shape_and_global_offset does: mesh dim 0 chunks the full dim,
// then mesh dim 1 chunks the piece that mesh dim 0 left, and the offsets add.
// With 8 rows, rank (i, j) holds rows [4i + 2j, 4i + 2j + 2). With 5 rows the
// mesh dim 0 pieces are 3 and 2 rows, split again into 2+1 and 1+1. (Older
// PyTorch replaced the offset instead of adding when the new offset was larger;
// current PyTorch adds, and so do we.)

// Note [Strided shards]
// StridedShard(d, sf) (PyTorch's _StridedShard) on a mesh dim of n ranks
// splits what earlier mesh dims left of tensor dim d as PyTorch 2.15's
// _StridedShard._split_tensor does: torch.chunk it into sf pieces, torch.chunk
// each piece into n, and rank r holds the r-th sub-piece of every piece, in
// order. It says "this mesh dim was applied after sf later shards", which is
// how FSDP shards a tensor-parallel parameter: with 8 rows on a (dp=2, tp=2)
// mesh, [_S(0, 2), S(0)] gives rank (i, j) rows [4j + 2i, 4j + 2i + 2), the
// dp chunk i of the tp chunk j, where [S(0), S(0)] would give rows 4i + 2j.
// A rank then may hold several separate spans of a tensor dim ([_S(0, 2), R]:
// rank 0 holds rows 0-1 and 4-5), so local_spans() lists them;
// local_shape_and_offset() refuses such a layout, as it has no single offset.
// Later mesh dims chunk the concatenation of the spans (the rank's local
// tensor), as they chunk a plain shard.

// One piece of a torch.chunk split: elements [offset, offset + size).
struct ChunkSpan {
  int64_t offset = 0;
  int64_t size = 0;

  friend bool operator==(const ChunkSpan& a, const ChunkSpan& b) {
    return a.offset == b.offset && a.size == b.size;
  }
  friend bool operator!=(const ChunkSpan& a, const ChunkSpan& b) { return !(a == b); }
};

// Piece `index` of a dim of `dim_size` elements split into `num_chunks` with
// torch.chunk semantics (See Note [Chunk semantics]). Throws LayoutError unless
// dim_size >= 0, num_chunks >= 1 and 0 <= index < num_chunks.
// Example: chunk_span(5, 4, 2) == {4, 1}; chunk_span(5, 4, 3) == {5, 0}.
ChunkSpan chunk_span(int64_t dim_size, int64_t num_chunks, int64_t index);

// The spans of a dim of `extent` elements that member `index` of
// `num_chunks` holds under a StridedShard with `split_factor`, in the order it
// concatenates them, positions relative to the dim (Note [Strided shards]):
// sub-piece `index` of each of the split_factor torch.chunk pieces. Empty
// sub-pieces are listed too (size 0), so the list always has split_factor
// entries. Throws LayoutError as chunk_span does, or for split_factor < 1.
// Example: strided_chunk_spans(9, 2, 4, 0) == {{0, 2}, {5, 1}}.
std::vector<ChunkSpan> strided_chunk_spans(int64_t extent, int64_t split_factor,
                                           int64_t num_chunks, int64_t index);

// The block of the global tensor that one rank holds: elements
// [global_offset[d], global_offset[d] + local_shape[d]) along every tensor dim d.
struct ShardLayout {
  std::vector<int64_t> local_shape;
  std::vector<int64_t> global_offset;

  friend bool operator==(const ShardLayout& a, const ShardLayout& b) {
    return a.local_shape == b.local_shape && a.global_offset == b.global_offset;
  }
  friend bool operator!=(const ShardLayout& a, const ShardLayout& b) { return !(a == b); }
};

// The local shape and global offset of `rank` for a tensor of `global_shape`
// laid out with `placements` on `mesh` (PyTorch's
// compute_local_shape_and_global_offset). Replicate and Partial keep the shape;
// See Note [Nested sharding order] for several Shard on one tensor dim.
// Throws LayoutError for a negative extent, invalid placements
// (validate_placements), a rank outside the mesh, or a strided layout under
// which the rank holds separate spans of a dim (Note [Strided shards]: use
// local_spans or local_shape there).
// Example: ({6}, Mesh(4), [S(0)], rank 3) -> local_shape [0], global_offset [6].
ShardLayout local_shape_and_offset(const std::vector<int64_t>& global_shape,
                                   const MeshShape& mesh, const Placements& placements,
                                   int64_t rank);

// Same, for the rank at `coordinate` (one entry per mesh dim). Throws
// LayoutError if the coordinate is not on the mesh.
ShardLayout local_shape_and_offset(const std::vector<int64_t>& global_shape,
                                   const MeshShape& mesh, const Placements& placements,
                                   const std::vector<int64_t>& coordinate);

// For each tensor dim, the spans of the global tensor that the rank at
// `coordinate` holds, in the order its local tensor concatenates them
// (Note [Strided shards]). Without StridedShard every dim has one span, the
// one local_shape_and_offset gives; an empty dim has one empty span. Throws
// as local_shape_and_offset does, except for several spans.
// Example: ({8}, Mesh(2), [_S(0, 2)], {0}) -> {{{0, 2}, {4, 2}}}.
std::vector<std::vector<ChunkSpan>> local_spans(const std::vector<int64_t>& global_shape,
                                                const MeshShape& mesh,
                                                const Placements& placements,
                                                const std::vector<int64_t>& coordinate);

// The local shape of the rank at `coordinate` (or `rank`): what
// local_shape_and_offset gives, for strided layouts too.
std::vector<int64_t> local_shape(const std::vector<int64_t>& global_shape, const MeshShape& mesh,
                                 const Placements& placements,
                                 const std::vector<int64_t>& coordinate);
std::vector<int64_t> local_shape(const std::vector<int64_t>& global_shape, const MeshShape& mesh,
                                 const Placements& placements, int64_t rank);

// The blocks of the global tensor that `rank` holds: one block (what
// local_shape_and_offset gives), or under a StridedShard one per combination
// of its spans (local_spans), in local order.
// Example: ({8, 2}, Mesh(2), [_S(0, 2)], 1) -> {[2, 2] at [2, 0], [2, 2] at [6, 0]}.
std::vector<ShardLayout> local_blocks(const std::vector<int64_t>& global_shape,
                                      const MeshShape& mesh, const Placements& placements,
                                      int64_t rank);

// True when some placement is a StridedShard (on a mesh dim of any size).
bool has_strided_shard(const Placements& placements);

// Note [Strided shards that split last]
// FSDP over TP gives [_S(d, sf), S(d)] with sf = the tp size: data-wise the
// tp shard was cut first and dp cut each tp piece (Note [Strided shards]), so
// dp's split is the innermost one although dp is the outer mesh dim. Where
// every rank's piece is exactly "dp chunk of the tp chunk" (the nested
// torch.chunk), gathering dp first is a plain all_gather inside each tp
// piece, and R -> _S on dp a plain local chunk of it: [_S(0, 2), S(0)] ->
// [R, S(0)] is then one all_gather, as PyTorch 2.15 does it (gathering tp
// first took two and a local chunk). That holds for every extent a multiple
// of sf * n and for most others, not all: 9 rows on (dp=4, tp=2) put row 8
// on rank (3, 0) under the strided layout and on (3, 1) when nested, so the
// ranks are compared one by one there.
// True when placements[mesh_dim] is a StridedShard(d, sf), the other mesh
// dims that split d are plain Shard(d), the later ones' sizes multiply to sf,
// and every rank's span of d is the nested chunk: the earlier shards, the
// later ones (each in mesh order), then mesh_dim. False for meshes where that
// comparison would visit more than 65,536 coordinates with an uneven extent.
// Example: ({7}, Mesh(2, 2), [_S(0, 2), S(0)], 0) -> true;
//          ({9}, Mesh(4, 2), [_S(0, 2), S(0)], 0) -> false.
bool strided_shard_splits_last(const std::vector<int64_t>& global_shape, const MeshShape& mesh,
                               const Placements& placements, int mesh_dim);

// Reconstructs the global shape from the local shapes of all ranks
// (`local_shapes_by_rank[r]` is rank r's shape), the inverse of
// local_shape_and_offset for uneven shards too. Throws LayoutError, naming the
// ranks involved, when the count differs from mesh.num_ranks(), ranks disagree
// on the tensor rank, or the shapes are not the torch.chunk shards of any one
// global shape (e.g. rank 0 holds 2 rows and rank 1 holds 3 under [S(0)]).
// Example: ({[4], [4], [4], [1]}, Mesh(4), [S(0)]) -> [13].
std::vector<int64_t> global_shape_from_local(
    const std::vector<std::vector<int64_t>>& local_shapes_by_rank, const MeshShape& mesh,
    const Placements& placements);

// Global shape from one rank's local shape, assuming even sharding: each
// sharded extent is multiplied by the sizes of the mesh dims sharding it.
// Cheaper than global_shape_from_local but wrong for uneven shards (it cannot
// tell 13 rows on 4 ranks from 16); use it only when the global sizes are
// known to divide evenly (see is_evenly_sharded).
// Example: ([2, 3], Mesh(2, 2), [S(0), S(0)]) -> [8, 3].
std::vector<int64_t> global_shape_from_even_local(const std::vector<int64_t>& local_shape,
                                                  const MeshShape& mesh,
                                                  const Placements& placements);

// True when every Shard splits evenly, i.e. every tensor dim's size divides by
// the product of the sizes of the mesh dims sharding it, so that all ranks
// hold equally shaped blocks. Throws LayoutError for invalid placements.
// Example: ({13}, Mesh(4), [S(0)]) -> false; ({16}, Mesh(4), [S(0)]) -> true.
bool is_evenly_sharded(const std::vector<int64_t>& global_shape, const MeshShape& mesh,
                       const Placements& placements);

// Number of elements of a shape (1 for a 0-D shape). Throws LayoutError for a
// negative extent or int64 overflow.
int64_t shape_numel(const std::vector<int64_t>& shape);

// Number of elements `rank` holds locally.
int64_t local_numel(const std::vector<int64_t>& global_shape, const MeshShape& mesh,
                    const Placements& placements, int64_t rank);

// Bytes `rank` holds locally for elements of `element_size` bytes (e.g. 4 for
// float32). Throws LayoutError for element_size < 1 or overflow.
int64_t local_bytes(const std::vector<int64_t>& global_shape, const MeshShape& mesh,
                    const Placements& placements, int64_t rank, int64_t element_size);

}  // namespace dtensor
