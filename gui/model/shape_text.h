// Parsing of what a user types into the viewer's playground: tensor shapes,
// mesh shapes (optionally with dim names) and placements. Errors come back as
// text, never as exceptions, so that a panel can show them next to the field.
//   parse_shape_text("8, 6").value;          // {8, 6}
//   parse_mesh_text("dp=2, tp=2").value;     // Mesh(dp=2, tp=2)
//   parse_mesh_text("2, x").error;           // "mesh: 'x' is not a size ..."
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "layout/mesh_shape.h"
#include "layout/placement.h"

namespace dtensor::gui {

// The result of parsing user text: a value, or an error message for the user.
// Exactly one of the two is set.
template <typename T>
struct Parsed {
  std::optional<T> value;
  std::string error;

  // True when `value` holds a result.
  bool ok() const { return value.has_value(); }
};

// Largest tensor rank the playground accepts.
inline constexpr int kMaxTensorDims = 6;
// Largest mesh rank the playground accepts (the Mesh panel draws two dims as
// rows and columns, a third as grids side by side, and fixes the others).
inline constexpr int kMaxMeshDims = 5;
// Most ranks the playground draws; bigger meshes are refused with a message.
inline constexpr int64_t kMaxPlaygroundRanks = 1024;

// Parses a tensor shape such as "8, 6", "[8, 6]", "(8, 6)" or "8x6": 1 to
// kMaxTensorDims non-negative extents separated by commas, 'x' or spaces.
// The element count must fit in int64. Example: parse_shape_text("13").value == {13}.
Parsed<std::vector<int64_t>> parse_shape_text(std::string_view text);

// Parses a mesh: "2, 2", "2x4", or named "dp=2, tp=4" (also "dp:2"); either all
// dims are named or none. 1 to kMaxMeshDims dims of size >= 1 and at most
// kMaxPlaygroundRanks ranks in all. Example: parse_mesh_text("tp=4").value ==
// MeshShape::create({4}, {"tp"}).
Parsed<MeshShape> parse_mesh_text(std::string_view text);

// Parses placements ("S(0), R", "[Shard(1), Partial(avg)]") and validates
// them for a tensor of rank `tensor_ndim` on `mesh`; the result is normalized
// (negative shard dims resolved). The error names the field, e.g.
// "placements: expected 2 placements (one per mesh dim), got 1".
// `field` prefixes the error ("placements" or "target").
Parsed<Placements> parse_placements_text(std::string_view text, const MeshShape& mesh,
                                         int64_t tensor_ndim, std::string_view field);

// Placements as PyTorch prints a tuple, "(Shard(dim=0), Replicate())" or
// "(Shard(dim=0),)", rewritten in the list form parse_placements reads
// ("[Shard(dim=0), Replicate()]"); other text is returned trimmed.
std::string normalize_placements_text(std::string_view text);

}  // namespace dtensor::gui
