// ViewerState: everything the panels share (the playground, the loaded trace
// and what is derived from it, the open box's text, the comm table's filter,
// the timeline zoom and the cross-panel hover). Plain data, no ImGui, so a
// test can drive it without a window.
//   ViewerState state;
//   state.load_trace("comm_trace.json");   // false + state.trace_error on failure
//   state.begin_frame();                    // once per frame, before the panels
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gui/model/call_exchange.h"
#include "gui/model/comm_table_model.h"
#include "gui/model/mesh_grid_model.h"
#include "gui/model/plan_model.h"
#include "gui/model/playground_state.h"
#include "gui/model/timeline_model.h"
#include "gui/model/trace_loader.h"
#include "gui/model/viewer_options.h"
#include "trace/trace_model.h"

namespace dtensor::gui {

// Ranks highlighted across panels: hovering a rank in the Mesh panel or a
// block in the Layout panel highlights the same ranks everywhere.
struct HoverState {
  // Ascending; empty when nothing is hovered.
  std::vector<int64_t> ranks;

  // True when `rank` is highlighted.
  bool has(int64_t rank) const;
  // True when any rank is highlighted.
  bool active() const { return !ranks.empty(); }
};

// Shared state of all panels.
class ViewerState {
 public:
  ViewerState() = default;

  // Applies the playground inputs and the selected step of `options`, and
  // forces `options.hover_rank`. Unknown dtype names leave float32 and return
  // false with a message in *error.
  bool apply_options(const ViewerOptions& options, std::string* error);

  // Loads the trace at `path` (also put into the open box). On success
  // replaces the trace, clears trace_error and rebuilds the derived tables; on
  // failure keeps the previous trace and sets trace_error. A capacity
  // planner report (dtensor_plan --json) loads into `plan` instead, the
  // trace kept. Never throws.
  bool load_trace(const std::string& path);

  // Sets the playground mesh to the trace's mesh ("dp=2, tp=2"); false when
  // the trace has none.
  bool use_trace_mesh();

  // Starts a frame: applies last frame's playground edits (refresh), and the
  // hover collected during the last frame becomes the one panels read now (a
  // forced hover rank wins). Panels only edit inputs, so derived state stays
  // valid for the whole frame.
  void begin_frame();
  // Ranks highlighted this frame.
  const HoverState& hover() const { return hover_; }
  // Called by a panel whose item is under the mouse; shown from next frame.
  void set_hover(std::vector<int64_t> ranks);

  PlaygroundState playground;
  std::optional<LoadedTrace> loaded;
  // Why the last load failed ("" after a successful load).
  std::string trace_error;
  // Text of the open box.
  std::string open_path;
  CommTableOptions comm_options;
  // Derived from `loaded` by load_trace.
  std::map<std::string, ModuleRankCounts> module_counts;
  TimelineModel timeline;
  // Colours of the trace's ranks (world_size of them, at most 4096).
  RankPalette trace_palette;
  // Pixels per sequence number in the timeline.
  float timeline_cell_width = 28.0f;
  // Comm table and timeline show only implicit collectives (origins with
  // is_explicit false) when set.
  bool implicit_only = false;
  // Origins in `loaded` (derived by load_trace).
  OriginCounts origin_counts;
  // Rank whose calls the comm table lists (default_calls_rank on load).
  int64_t calls_rank = -1;
  // The mesh dims the Mesh panel draws as rows / columns / grids.
  MeshGridSelection mesh_grid;
  // A capacity planner report, and the plan of it the Plan panel draws.
  std::optional<PlanReport> plan;
  size_t selected_plan = 0;

  // Selects the call of loaded->trace.collectives[event_index] (clicked in the comm
  // table or the timeline): the Mesh panel draws its bytes between ranks,
  // and the playground is preset to its transition (trace mesh, from and
  // to placements, global shape) when the event has an origin. Returns
  // false with call_message set when the index is out of range or the
  // playground could not be preset (the call stays selected then).
  bool select_call(size_t event_index);
  // Selects the lowest rank's event with sequence number `seq`; false when
  // there is none.
  bool select_call_seq(int64_t seq);
  // Index into loaded->trace.collectives of the selected call.
  std::optional<size_t> selected_event;
  // Bytes between ranks of the selected call (empty edges when none).
  CallExchange exchange;
  // Why the last select_call did not preset the playground ("" when it did).
  std::string call_message;

  // True when `e` passes the implicit filter.
  bool shows_event(const trace::CollectiveRecord& e) const {
    return !implicit_only || (e.origin && !e.origin->is_explicit);
  }

 private:
  HoverState hover_;
  HoverState next_hover_;
  int64_t forced_hover_rank_ = -1;
};

}  // namespace dtensor::gui
