// Timeline panel: the trace's collectives as one lane per rank over sequence
// number, coloured by kind (hatched in backward), with red markers where the
// ranks disagree; hover an event for its details.
//   draw_timeline_panel(state, frame);   // once per frame
#pragma once

#include "gui/model/viewer_state.h"
#include "gui/panels/draw_util.h"

namespace dtensor::gui {

// Draws the "Timeline" window for state.trace / state.timeline.
void draw_timeline_panel(ViewerState& state, const PanelFrame& frame);

}  // namespace dtensor::gui
