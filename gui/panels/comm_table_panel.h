// Comm table panel: the loaded trace's module tree (collapsible) with forward
// and backward collective counts per kind, bytes, a filter box and sortable
// columns; modules whose collectives differ between ranks are highlighted;
// below, the parameters' sharding and the per-rank totals.
//   draw_comm_table_panel(state, frame);   // once per frame
#pragma once

#include "gui/model/viewer_state.h"
#include "gui/panels/draw_util.h"

namespace dtensor::gui {

// Draws the "Comm table" window for state.trace (a hint when none is loaded).
void draw_comm_table_panel(ViewerState& state, const PanelFrame& frame);

}  // namespace dtensor::gui
