// Text table of which rank holds which block of a 1-D or 2-D tensor, like
// PyTorch's visualize_sharding (tabulate "grid" style, ASCII only).
//   auto mesh = MeshShape::create({2});
//   std::cout << visualize_sharding({4, 4}, mesh, {Shard(0)}, "weight");
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "layout/mesh_shape.h"
#include "layout/placement.h"

namespace dtensor {

// Draws the layout of a tensor of `global_shape` (1-D or 2-D) with
// `placements` on `mesh` as an ASCII grid with one row per distinct block:
// - "Row range" (and "Col range" for 2-D): inclusive index ranges "0-3";
//   "(empty)" where the block has no elements along that dim (an empty shard);
// - "Ranks": every rank holding that block, ascending; replicas and partial
//   holders share a row; runs of 3+ consecutive ranks are shortened to "4-7";
// - "Note", only when some placement is Partial: e.g.
//   "partial(sum) over mesh dim 1 (tp)": the ranks of a row hold partial values.
// Rows are sorted by offset, empty blocks last; the output is deterministic and
// ends with a newline. A non-empty `header` is printed on its own first line.
// Throws LayoutError for tensors of other ranks ("only 1-D and 2-D tensors are
// drawn") and for invalid placements. Example, {4} on Mesh(2) with [S(0)]:
//   +-----------+-------+
//   | Row range | Ranks |
//   +===========+=======+
//   | 0-1       | 0     |
//   +-----------+-------+
//   | 2-3       | 1     |
//   +-----------+-------+
std::string visualize_sharding(const std::vector<int64_t>& global_shape, const MeshShape& mesh,
                               const Placements& placements, std::string_view header = "");

}  // namespace dtensor
