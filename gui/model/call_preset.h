// Call preset: the redistribute playground inputs that replay one traced
// collective's transition (the trace's mesh, the origin's from and to
// placements, and the tensor's global shape), so that clicking a call in the
// comm table or the timeline opens its plan. No ImGui.
//   Parsed<CallPreset> preset = call_preset(trace, trace.collectives[3]);
//   if (preset.ok()) { inputs.mesh = preset.value->mesh; ... }
#pragma once

#include <string>

#include "gui/model/shape_text.h"
#include "trace/trace_model.h"

namespace dtensor::gui {

// Texts for the playground's fields.
struct CallPreset {
  std::string mesh;        // "dp=2, tp=2"
  std::string tensor;      // "8, 6"; empty when the event has no shape (keep the field)
  std::string placements;  // "[S(0), R]"
  std::string target;      // "[R, R]"
};

// The trace's mesh as playground text: "dp=2, tp=2" or "2, 2"; empty when
// the trace names no mesh.
std::string trace_mesh_text(const trace::CommTrace& trace);

// The preset of `event`, or why there is none (no origin, no mesh in the
// trace, placements the mesh does not accept). The global shape is the
// collective's input shape with every dim sharded by the from placements
// multiplied by its mesh dims' sizes: exact for the first collective of a
// redistribution over evenly divisible dims, which is what the plan replays.
// A one-placement redistribution on a mesh of more dims (a 1-D sub-mesh)
// replays on the event's mesh dim alone ("tp=2").
// Example: input [4, 6] on Mesh(dp=2, tp=2) from [S(0), R] -> tensor "8, 6".
Parsed<CallPreset> call_preset(const trace::CommTrace& trace, const trace::CollectiveRecord& event);

}  // namespace dtensor::gui
