// Shared viewer state: trace loading, option application and hover. See
// viewer_state.h.
#include "gui/model/viewer_state.h"

#include <algorithm>

#include "gui/model/call_preset.h"
#include "gui/model/trace_loader.h"

namespace dtensor::gui {

bool HoverState::has(int64_t rank) const {
  return std::binary_search(ranks.begin(), ranks.end(), rank);
}

bool ViewerState::apply_options(const ViewerOptions& options, std::string* error) {
  PlaygroundInputs& inputs = playground.inputs();
  if (options.mesh) inputs.mesh = *options.mesh;
  if (options.tensor) inputs.tensor = *options.tensor;
  if (options.placements) inputs.placements = *options.placements;
  if (options.target) inputs.target = *options.target;
  bool ok = true;
  if (options.dtype) {
    const std::vector<DtypeChoice>& choices = dtype_choices();
    auto it = std::find_if(choices.begin(), choices.end(),
                           [&](const DtypeChoice& c) { return *options.dtype == c.name; });
    if (it == choices.end()) {
      *error = "--dtype: unknown dtype '" + *options.dtype + "'";
      ok = false;
    } else {
      inputs.dtype_index = static_cast<int>(it - choices.begin());
    }
  }
  playground.selected_step = options.step;
  playground.refresh();
  forced_hover_rank_ = options.hover_rank;
  implicit_only = options.implicit_only;
  if (options.call_seq >= 0 && !select_call_seq(options.call_seq)) {
    *error = "--call: " + (call_message.empty() ? "no trace loaded" : call_message);
    ok = false;
  }
  return ok;
}

bool ViewerState::load_trace(const std::string& path) {
  open_path = path;  // the open box shows what was tried, loaded or not
  std::string read_error;
  const std::optional<std::string> text = read_viewer_file(path, &read_error);
  if (!text) {
    trace_error = read_error;
    return false;
  }
  if (looks_like_plan_json(*text)) {
    PlanLoadResult report = parse_plan_json(*text, path);
    if (!report.report) {
      trace_error = report.error;
      return false;
    }
    plan = std::move(report.report);
    selected_plan = 0;
    trace_error.clear();
    return true;
  }
  TraceLoadResult result = parse_trace_json(*text, path);
  if (!result.trace) {
    trace_error = result.error;
    return false;
  }
  loaded = std::move(result.trace);
  trace_error.clear();
  const trace::CommTrace& trace = loaded->trace;
  // Counts rebuilt from a dump's module tree have no calls to lay out.
  const bool calls = loaded->calls_recorded;
  module_counts =
      calls ? module_rank_counts(trace, loaded->tree) : std::map<std::string, ModuleRankCounts>{};
  timeline = calls ? build_timeline(trace) : TimelineModel{};
  trace_palette = RankPalette(std::min<int64_t>(trace.world_size, 4096));
  calls_rank = calls ? default_calls_rank(trace) : -1;
  origin_counts = ::dtensor::gui::origin_counts(trace);
  selected_event.reset();
  exchange = CallExchange{};
  call_message.clear();
  return true;
}

bool ViewerState::use_trace_mesh() {
  if (!loaded) return false;
  std::string text = trace_mesh_text(loaded->trace);
  if (text.empty()) return false;
  playground.inputs().mesh = text;
  playground.refresh();
  return true;
}

bool ViewerState::select_call(size_t event_index) {
  if (!loaded || event_index >= loaded->trace.collectives.size()) {
    call_message = "no such call";
    return false;
  }
  selected_event = event_index;
  exchange = call_exchange(loaded->trace, event_index);
  Parsed<CallPreset> preset = call_preset(loaded->trace, loaded->trace.collectives[event_index]);
  if (!preset.ok()) {
    call_message = preset.error;
    use_trace_mesh();  // the bytes still draw on the trace's mesh
    return false;
  }
  PlaygroundInputs& inputs = playground.inputs();
  inputs.mesh = preset.value->mesh;
  if (!preset.value->tensor.empty()) inputs.tensor = preset.value->tensor;
  inputs.placements = preset.value->placements;
  inputs.target = preset.value->target;
  playground.selected_step = 0;
  playground.refresh();
  call_message.clear();
  return true;
}

bool ViewerState::select_call_seq(int64_t seq) {
  if (!loaded) return false;
  const std::vector<trace::CollectiveRecord>& calls = loaded->trace.collectives;
  for (size_t i = 0; i < calls.size(); ++i) {  // sorted by (rank, seq)
    if (calls[i].seq == seq) {
      select_call(i);
      return true;
    }
  }
  call_message = "no call #" + std::to_string(seq) + " in the trace";
  return false;
}

void ViewerState::begin_frame() {
  playground.refresh();
  hover_ = std::move(next_hover_);
  next_hover_ = HoverState{};
  if (forced_hover_rank_ >= 0) hover_.ranks = {forced_hover_rank_};
}

void ViewerState::set_hover(std::vector<int64_t> ranks) {
  std::sort(ranks.begin(), ranks.end());
  next_hover_.ranks = std::move(ranks);
}

}  // namespace dtensor::gui
