// Shared viewer state: trace loading, option application and hover. See
// viewer_state.h.
#include "gui/model/viewer_state.h"

#include <algorithm>

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
  return ok;
}

bool ViewerState::load_trace(const std::string& path) {
  open_path = path;  // the open box shows what was tried, loaded or not
  TraceLoadResult loaded = load_trace_file(path);
  if (!loaded.trace) {
    trace_error = loaded.error;
    return false;
  }
  trace = std::move(loaded.trace);
  trace_error.clear();
  module_counts = module_rank_counts(*trace);
  timeline = build_timeline(*trace);
  trace_palette = RankPalette(std::min<int64_t>(trace->world_size, 4096));
  return true;
}

bool ViewerState::use_trace_mesh() {
  if (!trace || !trace->mesh || trace->mesh->shape.empty()) return false;
  const TraceMesh& mesh = *trace->mesh;
  bool named = mesh.dim_names.size() == mesh.shape.size();
  std::string text;
  for (size_t i = 0; i < mesh.shape.size(); ++i) {
    if (i > 0) text += ", ";
    if (named) text += mesh.dim_names[i] + "=";
    text += std::to_string(mesh.shape[i]);
  }
  playground.inputs().mesh = text;
  playground.refresh();
  return true;
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
