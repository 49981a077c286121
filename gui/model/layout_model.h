// Layout model of the viewer: a tensor shape + mesh + placements turned into
// rectangles (one per distinct block, with the ranks holding it; under a
// _StridedShard a rank holds several), ready for a
// panel to draw. Tensors of more than two dims show two chosen dims; the
// others are sliced at an index. No ImGui here.
//   LayoutRequest request{{8, 6}, MeshShape::create({2, 2}), {Shard(0), Shard(1)}};
//   LayoutResult result = compute_layout(request);
//   result.view->blocks.size();   // 4: rows [0,4) x cols [0,3) held by rank 0, ...
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "layout/mesh_shape.h"
#include "layout/placement.h"

namespace dtensor::gui {

// Which tensor dims are drawn (rows down, columns across) and, for every other
// dim, which index the drawing slices at.
struct DrawSelection {
  // Tensor dim drawn vertically; -1 when the tensor has fewer than 2 dims.
  int row_dim = -1;
  // Tensor dim drawn horizontally; -1 for a 0-D tensor.
  int col_dim = -1;
  // One index per tensor dim; only the entries of dims not drawn matter.
  std::vector<int64_t> slice_index;

  friend bool operator==(const DrawSelection& a, const DrawSelection& b) {
    return a.row_dim == b.row_dim && a.col_dim == b.col_dim && a.slice_index == b.slice_index;
  }
  friend bool operator!=(const DrawSelection& a, const DrawSelection& b) { return !(a == b); }
};

// The dims a person most likely wants to see: for 2+ dims, the sharded dims
// first (in increasing order), then the last dims, shown in increasing order
// (rows = the smaller dim); a 1-D tensor is one row across; slices at 0.
// Example: ({4, 8, 16}, [S(0), R]) -> rows dim 0, cols dim 2.
DrawSelection default_draw_selection(const std::vector<int64_t>& global_shape,
                                     const Placements& placements);

// `selection` made valid for `global_shape`: dims in range and distinct (else
// the default), slice indices clamped to [0, size - 1] (0 for empty dims).
DrawSelection sanitize_selection(const DrawSelection& selection,
                                 const std::vector<int64_t>& global_shape,
                                 const Placements& placements);

// One distinct block of the tensor and every rank holding it. Coordinates are
// element indices in the drawn plane: rows [row_begin, row_end) of the row dim
// and cols [col_begin, col_end) of the col dim (0..1 for an absent dim).
struct LayoutBlock {
  int64_t row_begin = 0;
  int64_t row_end = 1;
  int64_t col_begin = 0;
  int64_t col_end = 1;
  // Ranks holding this block, ascending: more than one means replicas (or
  // partial holders when the view is partial).
  std::vector<int64_t> ranks;
  // The N-D local shape and global offset of the block.
  std::vector<int64_t> local_shape;
  std::vector<int64_t> global_offset;
  // Bytes of the block on each rank holding it.
  int64_t bytes = 0;
};

// Everything a panel needs to draw one layout.
struct LayoutView {
  std::vector<int64_t> global_shape;
  MeshShape mesh;
  // Validated and normalized (no negative shard dims).
  Placements placements;
  DrawSelection selection;
  int64_t element_size = 4;
  // Extents of the drawn plane (1 for an absent dim).
  int64_t rows = 1;
  int64_t cols = 1;
  // Non-empty blocks that meet the drawn slice, ordered by (row, col).
  std::vector<LayoutBlock> blocks;
  // Blocks with no elements (uneven sharding: trailing torch.chunk pieces).
  std::vector<LayoutBlock> empty_blocks;
  // Ranks with data whose block lies outside the drawn slice (>2-D tensors).
  std::vector<int64_t> ranks_outside_slice;
  // True when some placement is Partial: every rank holds partial values.
  bool partial = false;
  // Human notes: "P(sum) over mesh dim 1 (tp)", "replicated over mesh dim 0 (dp)".
  std::vector<std::string> notes;

  // Index into `blocks` of the (first) block `rank` holds, or -1 (empty or off-slice).
  int block_of_rank(int64_t rank) const;
  // Every block `rank` holds: one, or several under a _StridedShard.
  std::vector<int> blocks_of_rank(int64_t rank) const;
  // True when `rank` holds a block with no elements.
  bool rank_is_empty(int64_t rank) const;
};

// What to lay out.
struct LayoutRequest {
  std::vector<int64_t> global_shape;
  MeshShape mesh;
  Placements placements;
  // Sanitized by compute_layout; a default-constructed one means "choose".
  DrawSelection selection;
  // Bytes per element (4 for float32).
  int64_t element_size = 4;
};

// A layout or the reason there is none. Exactly one of the two is set.
struct LayoutResult {
  std::optional<LayoutView> view;
  std::string error;
};

// Computes the blocks of `request`. Never throws: invalid placements, shapes
// or meshes (and more than kMaxPlaygroundRanks ranks) give `error`, with
// layout/'s message. Example: 13 on Mesh(4) with [S(0)] gives blocks of
// 4, 4, 4 and 1 columns; 6 on Mesh(4) gives 3 blocks and rank 3 empty.
LayoutResult compute_layout(const LayoutRequest& request);

}  // namespace dtensor::gui
