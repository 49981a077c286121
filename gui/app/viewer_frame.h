// One frame of the viewer: the tiled overview (open bar on top, Playground on
// the left, Mesh and Layout top right, Comm table and Timeline bottom right)
// or a single panel filling the display. Needs an ImGui frame, no GLFW.
//   state.begin_frame();
//   draw_viewer_frame(state, PanelId::kAll, io.DisplaySize, /*relayout=*/resized);
#pragma once

#include <imgui.h>

#include "gui/model/viewer_options.h"
#include "gui/model/viewer_state.h"

namespace dtensor::gui {

// Draws the windows of `panel` (kAll: every panel, tiled) for a display of
// `display` pixels. With `relayout` the tiles are re-applied (after a resize);
// otherwise windows keep where the user put them.
void draw_viewer_frame(ViewerState& state, PanelId panel, ImVec2 display, bool relayout);

}  // namespace dtensor::gui
