// Tensor shapes and meshes as people type them: the viewer's playground and
// the planner's command line read them here. Errors are LayoutErrors that
// quote the offending token.
//   parse_extents("8, 6");           // {8, 6}; also "[8, 6]", "(8, 6)", "8x6"
//   parse_mesh_shape("dp=2, tp=4");  // Mesh(dp=2, tp=4); also "2x4", "dp:2"
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "layout/mesh_shape.h"

namespace dtensor {

// Non-negative extents separated by commas, 'x' between digits or spaces,
// optionally inside one pair of [] or (). Each has at most 15 digits. Throws
// LayoutError for an empty list or a token that is not a whole number >= 0.
// Example: parse_extents("[8, 6]") == {8, 6}.
std::vector<int64_t> parse_extents(std::string_view text);

// A mesh: sizes as parse_extents reads them ("2, 2", "2x4"), or all dims
// named ("dp=2, tp=4", "dp:2 tp:4", spaces around '=' allowed). Throws
// LayoutError for an empty list, a size that is not a whole number >= 1,
// names on some dims only, or what MeshShape::create refuses.
// Example: parse_mesh_shape("tp=4") == MeshShape::create({4}, {"tp"}).
MeshShape parse_mesh_shape(std::string_view text);

}  // namespace dtensor
