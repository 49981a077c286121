// Playground panel: edit the mesh, tensor shape, dtype, placements and target
// placements; see the redistribute plan step by step (collective, mesh dim,
// bytes per rank, estimated time) with the layouts before and after the
// selected step. Invalid input is framed in red with the error text below.
//   draw_playground_panel(state, frame);   // once per frame
#pragma once

#include "gui/model/viewer_state.h"
#include "gui/panels/draw_util.h"

namespace dtensor::gui {

// Draws the "Playground" window. Edits state.playground.inputs(); the
// derived state follows at the next ViewerState::begin_frame.
void draw_playground_panel(ViewerState& state, const PanelFrame& frame);

}  // namespace dtensor::gui
