// The viewer's window: GLFW + OpenGL 3 + Dear ImGui setup, the interactive
// loop (with file drag-and-drop) and the headless --screenshot mode.
//   ViewerOptions options = parse_viewer_options(args).options;
//   return run_viewer(options);
#pragma once

#include "gui/model/viewer_options.h"

namespace dtensor::gui {

// Runs the viewer with `options` and returns the process exit code: 0 on a
// normal close or a written screenshot; 2 when no window can be opened (no
// X display: the message suggests xvfb-run); 1 when the screenshot cannot be
// rendered or written. A trace that fails to load is reported on stderr and
// in the window, not fatal.
int run_viewer(const ViewerOptions& options);

}  // namespace dtensor::gui
