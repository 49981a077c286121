// Layout panel: caption, dim/slice pickers, the canvas and its notes. See
// layout_panel.h.
#include "gui/panels/layout_panel.h"

#include <algorithm>
#include <climits>
#include <string>

#include "gui/model/format.h"
#include "gui/panels/layout_canvas.h"

namespace dtensor::gui {
namespace {

const char* dtype_name(const PlaygroundState& playground) {
  int index = std::clamp<int>(playground.inputs().dtype_index, 0,
                              static_cast<int>(dtype_choices().size()) - 1);
  return dtype_choices()[static_cast<size_t>(index)].name;
}

// A combo choosing one tensor dim; returns true when it changed.
bool dim_combo(const char* label, int* dim, const std::vector<int64_t>& shape) {
  std::string preview = "dim " + std::to_string(*dim);
  bool changed = false;
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 7.0f);
  if (ImGui::BeginCombo(label, preview.c_str())) {
    for (int d = 0; d < static_cast<int>(shape.size()); ++d) {
      ImGui::PushID(d);
      std::string item =
          "dim " + std::to_string(d) + " (" + std::to_string(shape[static_cast<size_t>(d)]) + ")";
      if (ImGui::Selectable(item.c_str(), d == *dim)) *dim = d, changed = true;
      ImGui::PopID();
    }
    ImGui::EndCombo();
  }
  return changed;
}

// Row/column dim pickers and one slider per sliced dim (tensors of 3+ dims).
// Edits the selection only; ViewerState::begin_frame recomputes the layout,
// so `view` stays valid for the rest of this frame.
void draw_slice_controls(PlaygroundState& playground, const LayoutView& view) {
  DrawSelection& selection = playground.selection();
  // Picking the other axis's dim swaps the two.
  if (dim_combo("rows", &selection.row_dim, view.global_shape) &&
      selection.row_dim == selection.col_dim) {
    selection.col_dim = view.selection.row_dim;
  }
  ImGui::SameLine();
  if (dim_combo("columns", &selection.col_dim, view.global_shape) &&
      selection.col_dim == selection.row_dim) {
    selection.row_dim = view.selection.col_dim;
  }
  for (int d = 0; d < static_cast<int>(view.global_shape.size()); ++d) {
    if (d == selection.row_dim || d == selection.col_dim) continue;
    ImGui::PushID(d);
    int index = static_cast<int>(selection.slice_index[static_cast<size_t>(d)]);
    int max_index =
        static_cast<int>(std::min<int64_t>(view.global_shape[static_cast<size_t>(d)] - 1, INT_MAX));
    std::string label = "slice of dim " + std::to_string(d);
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 12.0f);
    if (ImGui::SliderInt(label.c_str(), &index, 0, std::max(max_index, 0))) {
      selection.slice_index[static_cast<size_t>(d)] = index;
    }
    ImGui::PopID();
  }
}

void draw_layout_body(ViewerState& state, const LayoutView& view) {
  PlaygroundState& playground = state.playground;
  ImGui::TextUnformatted(layout_caption(view, dtype_name(playground)).c_str());
  if (view.global_shape.size() > 2) draw_slice_controls(playground, view);
  if (view.selection.row_dim >= 0) {
    ImGui::TextDisabled("rows: tensor dim %d (%lld)   columns: tensor dim %d (%lld)",
                        view.selection.row_dim, static_cast<long long>(view.rows),
                        view.selection.col_dim, static_cast<long long>(view.cols));
  }
  draw_rank_legend(playground.palette(), view.mesh.num_ranks());
  int note_lines = static_cast<int>(view.notes.size()) + (view.empty_blocks.empty() ? 0 : 1) +
                   (view.ranks_outside_slice.empty() ? 0 : 1) + 1;
  ImVec2 avail = ImGui::GetContentRegionAvail();
  avail.y -= note_lines * ImGui::GetFrameHeightWithSpacing();
  int hovered = draw_layout_canvas("layout", view, playground.palette(), state.hover(), avail);
  if (hovered >= 0) state.set_hover(view.blocks[static_cast<size_t>(hovered)].ranks);
  draw_layout_notes(view);
  hint_text(
      "Hover a block for its local shape, offset and bytes; its ranks light up in the Mesh panel.");
}

}  // namespace

void draw_rank_legend(const RankPalette& palette, int64_t num_ranks) {
  if (num_ranks > 32) return;
  for (int64_t rank = 0; rank < num_ranks; ++rank) {
    ImGui::PushID(static_cast<int>(rank));
    std::string label = "r" + std::to_string(rank);
    flow_item(rank == 0, ImGui::GetTextLineHeight() + ImGui::CalcTextSize(label.c_str()).x + 8.0f,
              12.0f);
    color_swatch(palette.color(rank), label.c_str());
    ImGui::PopID();
  }
}

void draw_layout_panel(ViewerState& state, const PanelFrame& frame) {
  place_next_window(frame);
  if (!ImGui::Begin("Layout", nullptr, frame.flags)) {
    ImGui::End();
    return;
  }
  const LayoutResult& layout = state.playground.layout();
  if (layout.view) {
    draw_layout_body(state, *layout.view);
  } else {
    ImGui::TextUnformatted("Nothing to draw: the playground input is invalid.");
    show_error_text(layout.error);
  }
  ImGui::End();
}

}  // namespace dtensor::gui
