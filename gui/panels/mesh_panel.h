// Mesh panel: the playground's device mesh as a grid of ranks (1-D: a row,
// 2-D: rows x columns, 3-D: one grid per index of mesh dim 0; pickers choose
// which dims are rows, columns and grids, and 4+-D meshes fix the other dims
// at an index), each cell in its rank colour with rank id and coordinate.
// Hovering a rank highlights what it holds in the Layout panel. The selected
// call of the trace draws as arrows between ranks with the bytes each sends
// (Note [Pairwise bytes of a collective]).
//   draw_mesh_panel(state, frame);   // once per frame
#pragma once

#include "gui/model/viewer_state.h"
#include "gui/panels/draw_util.h"

namespace dtensor::gui {

// Draws the "Mesh" window. Reads state.playground's mesh and layout; sets the
// hover to the rank under the mouse.
void draw_mesh_panel(ViewerState& state, const PanelFrame& frame);

}  // namespace dtensor::gui
