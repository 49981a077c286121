// Command line of dtensor-viewer: an optional trace path, the headless
// screenshot mode and fixed playground inputs for reproducible screenshots.
//   ParsedOptions parsed = parse_viewer_options({"trace.json", "--screenshot", "out.png"});
//   if (!parsed.error.empty()) { print(parsed.error, viewer_usage()); }
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dtensor::gui {

// The panels of the viewer; kAll is the tiled overview.
enum class PanelId { kAll, kMesh, kLayout, kPlayground, kCommTable, kTimeline, kPlan };

// "all", "mesh", "layout", "playground", "comm_table", "timeline", "plan".
const char* panel_name(PanelId panel);

// Parses a panel name (also "comm" for the comm table), ignoring case.
std::optional<PanelId> parse_panel_name(const std::string& name);

// Everything the command line can set.
struct ViewerOptions {
  // Trace JSON to load at start; empty for none.
  std::string trace_path;
  // When set: render headless frames, write this PNG and exit.
  std::string screenshot_path;
  // Panel shown alone filling the window (screenshots), or the tiled overview.
  PanelId panel = PanelId::kAll;
  int width = 1280;
  int height = 800;
  // Frames rendered before the screenshot is read (layout settles in 2-3).
  int frames = 4;
  // Playground inputs (unset: the built-in defaults).
  std::optional<std::string> mesh, tensor, placements, target, dtype;
  // Plan step selected in the playground.
  int step = 0;
  // Rank highlighted as if the mouse hovered it (-1: none).
  int64_t hover_rank = -1;
  // Call (sequence number) selected at start, as if clicked (-1: none).
  int64_t call_seq = -1;
  // Comm table and timeline start with the implicit-only filter on.
  bool implicit_only = false;
  bool show_help = false;
};

// Options or an error message. `error` is empty on success.
struct ParsedOptions {
  ViewerOptions options;
  std::string error;
};

// Parses arguments (without argv[0]). Accepts "--flag value" and
// "--flag=value". Errors name the flag: "--size: expected WxH such as 1000x700".
ParsedOptions parse_viewer_options(const std::vector<std::string>& args);

// The usage text printed by --help and after an error.
std::string viewer_usage();

}  // namespace dtensor::gui
