// Plan panel: a capacity planner report (dtensor_plan --json, loaded like a
// trace): the selected plan's memory per category as a bar against the cap,
// what its step time is made of (compute, exposed comm, pipeline bubble),
// tokens/s per GPU and MFU, and for a sweep the table of plans (click a row
// to draw it).
//   draw_plan_panel(state, frame);   // once per frame
#pragma once

#include "gui/model/viewer_state.h"
#include "gui/panels/draw_util.h"

namespace dtensor::gui {

// Draws the "Plan" window for state.plan.
void draw_plan_panel(ViewerState& state, const PanelFrame& frame);

}  // namespace dtensor::gui
