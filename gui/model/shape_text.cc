// Implementation of the playground's text parsing. See shape_text.h.
#include "gui/model/shape_text.h"

#include <exception>

#include "layout/shape_text.h"
#include "layout/shard_layout.h"
#include "layout/text.h"

namespace dtensor::gui {

Parsed<std::vector<int64_t>> parse_shape_text(std::string_view text) {
  Parsed<std::vector<int64_t>> result;
  std::vector<int64_t> shape;
  try {
    shape = parse_extents(text);
  } catch (const std::exception& e) {
    result.error = std::string("tensor shape: ") + e.what();
    return result;
  }
  if (shape.size() > static_cast<size_t>(kMaxTensorDims)) {
    result.error = "tensor shape: at most " + std::to_string(kMaxTensorDims) + " dims, got " +
                   std::to_string(shape.size());
    return result;
  }
  try {
    shape_numel(shape);
  } catch (const std::exception& e) {
    result.error = std::string("tensor shape: too many elements: ") + e.what();
    return result;
  }
  result.value = std::move(shape);
  return result;
}

Parsed<MeshShape> parse_mesh_text(std::string_view text) {
  Parsed<MeshShape> result;
  try {
    MeshShape mesh = parse_mesh_shape(text);
    if (mesh.ndim() > kMaxMeshDims) {
      result.error = "mesh: enter 1 to " + std::to_string(kMaxMeshDims) + " dim sizes, got " +
                     std::to_string(mesh.ndim());
    } else if (mesh.num_ranks() > kMaxPlaygroundRanks) {
      result.error = "mesh: at most " + std::to_string(kMaxPlaygroundRanks) + " ranks can be drawn";
    } else {
      result.value = std::move(mesh);
    }
  } catch (const std::exception& e) {
    result.error = std::string("mesh: ") + e.what();
  }
  return result;
}

std::string normalize_placements_text(std::string_view text) {
  std::string body = trim_space(text);
  if (body.size() < 2 || body.front() != '(' || body.back() != ')') return body;
  body = trim_space(body.substr(1, body.size() - 2));
  if (!body.empty() && body.back() == ',') body.pop_back();
  return "[" + body + "]";
}

Parsed<Placements> parse_placements_text(std::string_view text, const MeshShape& mesh,
                                         int64_t tensor_ndim, std::string_view field) {
  Parsed<Placements> result;
  try {
    Placements placements = parse_placements(text);
    if (static_cast<int>(placements.size()) != mesh.ndim()) {
      result.error = std::string(field) + ": expected " + std::to_string(mesh.ndim()) +
                     " placements (one per mesh dim), got " + std::to_string(placements.size());
      return result;
    }
    result.value = validate_placements(placements, mesh, tensor_ndim);
  } catch (const std::exception& e) {
    result.error = std::string(field) + ": " + e.what();
  }
  return result;
}

}  // namespace dtensor::gui
