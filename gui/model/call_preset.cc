// Call preset: playground inputs from a traced collective. See call_preset.h.
#include "gui/model/call_preset.h"

#include <exception>

#include "layout/placement.h"

namespace dtensor::gui {

std::string trace_mesh_text(const trace::CommTrace& trace) {
  if (!trace.mesh || trace.mesh->shape.empty()) return "";
  const trace::MeshRecord& mesh = *trace.mesh;
  bool named = mesh.dim_names.size() == mesh.shape.size();
  std::string text;
  for (size_t i = 0; i < mesh.shape.size(); ++i) {
    if (i > 0) text += ", ";
    if (named) text += mesh.dim_names[i] + "=";
    text += std::to_string(mesh.shape[i]);
  }
  return text;
}

Parsed<CallPreset> call_preset(const trace::CommTrace& trace,
                               const trace::CollectiveRecord& event) {
  Parsed<CallPreset> result;
  if (!event.origin) {
    result.error = "call #" + std::to_string(event.seq) +
                   " has no origin (traces before schema 2 do not record one)";
    return result;
  }
  const CollectiveOrigin& origin = *event.origin;
  CallPreset preset;
  preset.mesh = trace_mesh_text(trace);
  if (preset.mesh.empty()) {
    result.error = "the trace names no mesh, so the transition cannot be replayed";
    return result;
  }
  if (origin.from_placements.empty() || origin.to_placements.empty()) {
    result.error = "call #" + std::to_string(event.seq) + "'s origin names no placements to replay";
    return result;
  }
  preset.placements = to_string(origin.from_placements);
  preset.target = to_string(origin.to_placements);
  // A redistribution on a 1-D sub-mesh (a TP style on the tp dim of a 2-D
  // mesh) has one placement: replay it on that dim alone.
  if (origin.from_placements.size() == 1 && trace.mesh->shape.size() > 1 && event.mesh_dim >= 0 &&
      static_cast<size_t>(event.mesh_dim) < trace.mesh->shape.size()) {
    const size_t d = static_cast<size_t>(event.mesh_dim);
    const trace::MeshRecord& m = *trace.mesh;
    preset.mesh = (m.dim_names.size() == m.shape.size() ? m.dim_names[d] + "=" : std::string()) +
                  std::to_string(m.shape[d]);
  }
  Parsed<MeshShape> mesh = parse_mesh_text(preset.mesh);
  if (!mesh.ok()) {
    result.error = mesh.error;
    return result;
  }
  if (!event.input_shapes.empty() && !event.input_shapes.front().empty()) {
    const std::vector<int64_t>& shape = event.input_shapes.front();
    const int64_t ndim = static_cast<int64_t>(shape.size());
    Parsed<Placements> from = parse_placements_text(preset.placements, *mesh.value, ndim, "from");
    if (!from.ok()) {
      result.error = from.error;
      return result;
    }
    std::vector<int64_t> global = shape;
    for (size_t i = 0; i < from.value->size(); ++i) {
      const Placement& p = (*from.value)[i];
      if (p.splits_dim()) global[static_cast<size_t>(p.shard_dim())] *= mesh.value->shape()[i];
    }
    for (size_t d = 0; d < global.size(); ++d)
      preset.tensor += (d ? ", " : "") + std::to_string(global[d]);
  }
  result.value = preset;
  return result;
}

}  // namespace dtensor::gui
