// Open bar: the strip at the top of the overview with the trace path box, the
// Load button, the load status (or error) and "Use trace mesh".
//   draw_open_bar(state, frame);   // once per frame, overview only
#pragma once

#include "gui/model/viewer_state.h"
#include "gui/panels/draw_util.h"

namespace dtensor::gui {

// Draws the bar; Enter in the path box or Load calls state.load_trace.
void draw_open_bar(ViewerState& state, const PanelFrame& frame);

}  // namespace dtensor::gui
