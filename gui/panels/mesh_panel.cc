// Mesh panel: grid(s) of rank cells with coordinates and hover links. See
// mesh_panel.h.
#include "gui/panels/mesh_panel.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/layout/text.h"
#include "gui/model/format.h"

namespace dtensor::gui {
namespace {

// How the mesh maps onto grids: `slices` grids of rows x cols cells,
// `per_line` grids side by side.
struct GridShape {
  int64_t slices = 1, rows = 1, cols = 1;
  int64_t per_line = 1;
  float cell = 40.0f;
};

constexpr float kGap = 18.0f;

std::string dim_label(const MeshShape& mesh, int dim) {
  std::string label = "mesh dim " + std::to_string(dim);
  return mesh.has_dim_names() ? mesh.dim_names()[static_cast<size_t>(dim)] + " (" + label + ")"
                              : label;
}

// Picks grids per line and cell size that use `avail` best.
GridShape fit_grids(const MeshShape& mesh, ImVec2 avail, float label_w, float line_h) {
  const std::vector<int64_t>& s = mesh.shape();
  GridShape g;
  if (s.size() == 1) g.cols = s[0];
  if (s.size() == 2) g.rows = s[0], g.cols = s[1];
  if (s.size() == 3) g.slices = s[0], g.rows = s[1], g.cols = s[2];
  float best = 0.0f;
  for (int64_t k = 1; k <= g.slices; ++k) {
    int64_t lines = (g.slices + k - 1) / k;
    float w = (avail.x - k * (label_w + kGap)) / static_cast<float>(k * g.cols);
    float h = (avail.y - lines * (2 * line_h + kGap)) / static_cast<float>(lines * g.rows);
    float cell = std::min({w, h, 140.0f});
    if (cell >= best) best = cell, g.per_line = k;  // ties: side by side
  }
  g.cell = std::max(best, 10.0f);
  return g;
}

std::vector<int64_t> coordinate_of(const MeshShape& mesh, int64_t slice, int64_t row, int64_t col) {
  if (mesh.ndim() == 1) return {col};
  if (mesh.ndim() == 2) return {row, col};
  return {slice, row, col};
}

void cell_tooltip(const ViewerState& state, const MeshShape& mesh, int64_t rank) {
  ImGui::BeginTooltip();
  std::vector<int64_t> coord = mesh.coordinate_of(rank);
  ImGui::Text("rank %lld   coordinate %s", static_cast<long long>(rank),
              format_shape(coord).c_str());
  for (int d = 0; d < mesh.ndim(); ++d) {
    ImGui::Text("%s: index %lld, group %s", dim_label(mesh, d).c_str(),
                static_cast<long long>(coord[static_cast<size_t>(d)]),
                format_rank_list(mesh.group_ranks(rank, d)).c_str());
  }
  const LayoutResult& layout = state.playground.layout();
  if (layout.view) {
    int b = layout.view->block_of_rank(rank);
    ImGui::Separator();
    if (b >= 0) {
      const LayoutBlock& block = layout.view->blocks[static_cast<size_t>(b)];
      ImGui::Text("holds %s at offset %s (%s)", format_shape(block.local_shape).c_str(),
                  format_shape(block.global_offset).c_str(), format_bytes(block.bytes).c_str());
    } else {
      ImGui::TextUnformatted(layout.view->rank_is_empty(rank) ? "holds an empty shard"
                                                              : "holds nothing in the drawn slice");
    }
  }
  ImGui::EndTooltip();
}

// Draws one cell; returns true when the mouse is over it.
bool draw_cell(ViewerState& state, const MeshShape& mesh, int64_t rank, ImVec2 min, float cell) {
  ImDrawList* draw = ImGui::GetWindowDrawList();
  ImVec2 max(min.x + cell - 3, min.y + cell - 3);
  Rgb color = state.playground.palette().color(rank);
  draw->AddRectFilled(min, max, to_imu32(color), 4.0f);
  const HoverState& hover = state.hover();
  if (hover.active() && hover.has(rank))
    draw->AddRect(min, max, IM_COL32(255, 255, 255, 255), 4.0f, 0, 3.0f);
  if (hover.active() && !hover.has(rank))
    draw->AddRectFilled(min, max, to_imu32(kCanvasBackground, 0.72f), 4.0f);
  std::vector<std::string> lines = {"r" + std::to_string(rank),
                                    format_shape(mesh.coordinate_of(rank))};
  const LayoutResult& layout = state.playground.layout();
  int block = layout.view ? layout.view->block_of_rank(rank) : -1;
  if (block >= 0)
    lines.push_back("holds " +
                    format_shape(layout.view->blocks[static_cast<size_t>(block)].local_shape));
  draw_fitted_lines(draw, min, max, lines, to_imu32(text_color_on(color)), false);
  ImVec2 mouse = ImGui::GetIO().MousePos;
  return ImGui::IsWindowHovered() && mouse.x >= min.x && mouse.x < max.x && mouse.y >= min.y &&
         mouse.y < max.y;
}

// Draws one grid (a slice of a 3-D mesh) with its index labels at `origin`.
int64_t draw_grid(ViewerState& state, const MeshShape& mesh, const GridShape& g, int64_t slice,
                  ImVec2 origin, float label_w) {
  ImDrawList* draw = ImGui::GetWindowDrawList();
  ImU32 dim_color = ImGui::GetColorU32(ImGuiCol_TextDisabled);
  float line_h = ImGui::GetTextLineHeight();
  if (mesh.ndim() == 3) {
    std::string caption = (mesh.has_dim_names() ? mesh.dim_names()[0] : std::string("dim 0")) +
                          " = " + std::to_string(slice);
    draw->AddText(origin, ImGui::GetColorU32(ImGuiCol_Text), caption.c_str());
  }
  ImVec2 cells(origin.x + label_w, origin.y + 2 * line_h);
  for (int64_t c = 0; c < g.cols; ++c) {
    std::string index = std::to_string(c);
    float w = ImGui::CalcTextSize(index.c_str()).x;
    draw->AddText(ImVec2(cells.x + c * g.cell + (g.cell - w) / 2, cells.y - line_h - 1), dim_color,
                  index.c_str());
  }
  int64_t hovered = -1;
  for (int64_t r = 0; r < g.rows; ++r) {
    if (mesh.ndim() >= 2) {
      draw->AddText(ImVec2(origin.x, cells.y + r * g.cell + (g.cell - line_h) / 2), dim_color,
                    std::to_string(r).c_str());
    }
    for (int64_t c = 0; c < g.cols; ++c) {
      int64_t rank = mesh.rank_of(coordinate_of(mesh, slice, r, c));
      if (draw_cell(state, mesh, rank, ImVec2(cells.x + c * g.cell, cells.y + r * g.cell), g.cell))
        hovered = rank;
    }
  }
  return hovered;
}

// "tp groups: 0-1 | 2-3": the process groups of every mesh dim (small meshes).
void draw_groups(const MeshShape& mesh) {
  if (mesh.num_ranks() > 32) return;
  for (int d = 0; d < mesh.ndim(); ++d) {
    std::string text;
    for (const std::vector<int64_t>& group : mesh.all_groups(d)) {
      text += (text.empty() ? "" : "  |  ") + format_rank_list(group);
    }
    std::string name = mesh.has_dim_names() ? mesh.dim_names()[static_cast<size_t>(d)]
                                            : "dim " + std::to_string(d);
    ImGui::TextDisabled("%s groups:", name.c_str());
    ImGui::SameLine();
    ImGui::PushTextWrapPos(0.0f);
    ImGui::TextUnformatted(text.c_str());
    ImGui::PopTextWrapPos();
  }
}

void draw_mesh_body(ViewerState& state, const MeshShape& mesh) {
  ImGui::Text("%s: %lld ranks", mesh.to_string().c_str(), static_cast<long long>(mesh.num_ranks()));
  ImGui::TextDisabled("columns: %s", dim_label(mesh, mesh.ndim() - 1).c_str());
  if (mesh.ndim() >= 2) ImGui::TextDisabled("rows: %s", dim_label(mesh, mesh.ndim() - 2).c_str());
  float line_h = ImGui::GetTextLineHeight();
  float label_w =
      mesh.ndim() >= 2
          ? ImGui::CalcTextSize(std::to_string(mesh.shape()[mesh.ndim() - 2]).c_str()).x + 8
          : 0;
  ImVec2 avail = ImGui::GetContentRegionAvail();
  avail.y -= line_h * (2.0f + static_cast<float>(mesh.num_ranks() > 32 ? 0 : mesh.ndim()));
  GridShape g = fit_grids(mesh, avail, label_w, line_h);
  ImVec2 origin = ImGui::GetCursorScreenPos();
  float grid_w = label_w + g.cols * g.cell + kGap;
  float grid_h = 2 * line_h + g.rows * g.cell + kGap;
  int64_t hovered = -1;
  for (int64_t s = 0; s < g.slices; ++s) {
    ImVec2 at(origin.x + (s % g.per_line) * grid_w, origin.y + (s / g.per_line) * grid_h);
    int64_t h = draw_grid(state, mesh, g, s, at, label_w);
    if (h >= 0) hovered = h;
  }
  int64_t lines = (g.slices + g.per_line - 1) / g.per_line;
  ImGui::Dummy(ImVec2(g.per_line * grid_w, lines * grid_h));
  if (hovered >= 0) {
    state.set_hover({hovered});
    cell_tooltip(state, mesh, hovered);
  }
  draw_groups(mesh);
  hint_text("Hover a rank to see what it holds in the Layout panel.");
}

}  // namespace

void draw_mesh_panel(ViewerState& state, const PanelFrame& frame) {
  place_next_window(frame);
  if (!ImGui::Begin("Mesh", nullptr, frame.flags)) {
    ImGui::End();
    return;
  }
  const std::optional<MeshShape>& mesh = state.playground.mesh();
  if (!mesh) {
    ImGui::TextUnformatted("No valid mesh: fix it in the Playground.");
    show_error_text(state.playground.mesh_error());
  } else {
    draw_mesh_body(state, *mesh);
  }
  ImGui::End();
}

}  // namespace dtensor::gui
