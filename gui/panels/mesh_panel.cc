// Mesh panel: grid(s) of rank cells with coordinates, hover links, dim
// pickers for 3+-D meshes and the bytes of the selected call. See
// mesh_panel.h.
#include "gui/panels/mesh_panel.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "layout/text.h"
#include "gui/model/format.h"

namespace dtensor::gui {
namespace {

// How the grids are placed: `per_line` grids side by side, square cells.
struct GridFit {
  int64_t per_line = 1;
  float cell = 40.0f;
};

constexpr float kGap = 18.0f;

// Picks grids per line and cell size that use `avail` best.
GridFit fit_grids(const MeshGridView& view, ImVec2 avail, float label_w, float line_h) {
  const int64_t slices = static_cast<int64_t>(view.grids.size());
  GridFit g;
  float best = 0.0f;
  for (int64_t k = 1; k <= slices; ++k) {
    int64_t lines = (slices + k - 1) / k;
    float w = (avail.x - k * (label_w + kGap)) / static_cast<float>(k * view.cols);
    float h = (avail.y - lines * (2 * line_h + kGap)) / static_cast<float>(lines * view.rows);
    float cell = std::min({w, h, 140.0f});
    if (cell >= best) best = cell, g.per_line = k;  // ties: side by side
  }
  g.cell = std::max(best, 10.0f);
  return g;
}

void cell_tooltip(const ViewerState& state, const MeshShape& mesh, int64_t rank) {
  ImGui::BeginTooltip();
  std::vector<int64_t> coord = mesh.coordinate_of(rank);
  ImGui::Text("rank %lld   coordinate %s", static_cast<long long>(rank),
              format_shape(coord).c_str());
  for (int d = 0; d < mesh.ndim(); ++d) {
    ImGui::Text("%s: index %lld, group %s", mesh_dim_label(mesh, d).c_str(),
                static_cast<long long>(coord[static_cast<size_t>(d)]),
                format_rank_list(mesh.group_ranks(rank, d)).c_str());
  }
  const LayoutResult& layout = state.playground.layout();
  if (layout.view) {
    const std::vector<int> held = layout.view->blocks_of_rank(rank);
    ImGui::Separator();
    if (!held.empty()) {
      for (int b : held) {  // several under a _StridedShard
        const LayoutBlock& block = layout.view->blocks[static_cast<size_t>(b)];
        ImGui::Text("holds %s at offset %s (%s)", format_shape(block.local_shape).c_str(),
                    format_shape(block.global_offset).c_str(), format_bytes(block.bytes).c_str());
      }
    } else {
      ImGui::TextUnformatted(layout.view->rank_is_empty(rank) ? "holds an empty shard"
                                                              : "holds nothing in the drawn slice");
    }
  }
  const CallExchange& x = state.exchange;
  if (!x.edges.empty()) {
    ImGui::Separator();
    ImGui::Text("call #%lld %s:", static_cast<long long>(x.seq), x.kind.c_str());
    for (const RankExchange& e : x.edges) {
      if (e.from == rank)
        ImGui::Text("  sends %s to rank %lld", format_bytes(e.bytes).c_str(),
                    static_cast<long long>(e.to));
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
  auto sent = state.exchange.sent_by_rank.find(rank);
  if (sent != state.exchange.sent_by_rank.end()) lines.push_back("sends " + format_bytes(sent->second));
  const LayoutResult& layout = state.playground.layout();
  const std::vector<int> held = layout.view ? layout.view->blocks_of_rank(rank) : std::vector<int>{};
  if (held.size() == 1) {
    lines.push_back("holds " + format_shape(layout.view->blocks[static_cast<size_t>(held[0])].local_shape));
  } else if (held.size() > 1) {
    lines.push_back("holds " + std::to_string(held.size()) + " blocks");
  }
  draw_fitted_lines(draw, min, max, lines, to_imu32(text_color_on(color)), false);
  ImVec2 mouse = ImGui::GetIO().MousePos;
  return ImGui::IsWindowHovered() && mouse.x >= min.x && mouse.x < max.x && mouse.y >= min.y &&
         mouse.y < max.y;
}

// Draws one grid with its index labels at `origin`; records each drawn
// rank's cell centre in `centers`. Returns the hovered rank or -1.
int64_t draw_grid(ViewerState& state, const MeshShape& mesh, const MeshGridView& view,
                  const MeshGrid& grid, const GridFit& g, ImVec2 origin, float label_w,
                  std::map<int64_t, ImVec2>* centers) {
  ImDrawList* draw = ImGui::GetWindowDrawList();
  ImU32 dim_color = ImGui::GetColorU32(ImGuiCol_TextDisabled);
  float line_h = ImGui::GetTextLineHeight();
  if (!grid.caption.empty())
    draw->AddText(origin, ImGui::GetColorU32(ImGuiCol_Text), grid.caption.c_str());
  ImVec2 cells(origin.x + label_w, origin.y + 2 * line_h);
  for (int64_t c = 0; c < view.cols; ++c) {
    std::string index = std::to_string(c);
    float w = ImGui::CalcTextSize(index.c_str()).x;
    draw->AddText(ImVec2(cells.x + c * g.cell + (g.cell - w) / 2, cells.y - line_h - 1), dim_color,
                  index.c_str());
  }
  int64_t hovered = -1;
  for (int64_t r = 0; r < view.rows; ++r) {
    if (view.selection.row_dim >= 0) {
      draw->AddText(ImVec2(origin.x, cells.y + r * g.cell + (g.cell - line_h) / 2), dim_color,
                    std::to_string(r).c_str());
    }
    for (int64_t c = 0; c < view.cols; ++c) {
      int64_t rank = grid.ranks[static_cast<size_t>(r)][static_cast<size_t>(c)];
      ImVec2 min(cells.x + c * g.cell, cells.y + r * g.cell);
      if (draw_cell(state, mesh, rank, min, g.cell)) hovered = rank;
      (*centers)[rank] = ImVec2(min.x + (g.cell - 3) / 2, min.y + (g.cell - 3) / 2);
    }
  }
  return hovered;
}

// The selected call's bytes as curved arrows between the drawn cells: width
// by bytes, bent to the right of their direction so that a -> b and b -> a
// stay apart; labelled with the bytes when few enough to read.
void draw_exchange(const CallExchange& x, const std::map<int64_t, ImVec2>& centers, float cell) {
  if (x.edges.empty() || x.max_edge_bytes <= 0) return;
  ImDrawList* draw = ImGui::GetWindowDrawList();
  ImU32 color = to_imu32(collective_kind_color(x.kind), 0.95f);
  std::vector<const RankExchange*> shown;
  for (const RankExchange& e : x.edges) {
    if (centers.count(e.from) && centers.count(e.to)) shown.push_back(&e);
  }
  const bool labels = shown.size() <= 16;
  for (const RankExchange* e : shown) {
    ImVec2 a = centers.at(e->from), b = centers.at(e->to);
    float dx = b.x - a.x, dy = b.y - a.y;
    float len = std::sqrt(dx * dx + dy * dy);
    if (len < 1.0f) continue;
    float ux = dx / len, uy = dy / len;
    // Start and end a little inside the cells' edges.
    float inset = cell * 0.34f;
    ImVec2 p0(a.x + ux * inset, a.y + uy * inset), p2(b.x - ux * inset, b.y - uy * inset);
    // Bent enough that the labels of a -> b and b -> a do not overlap.
    float bend = std::min(len * 0.55f, cell * 0.8f);
    ImVec2 ctrl((p0.x + p2.x) / 2 - uy * bend, (p0.y + p2.y) / 2 + ux * bend);
    float width = 1.5f + 4.5f * static_cast<float>(e->bytes) / static_cast<float>(x.max_edge_bytes);
    draw->AddBezierQuadratic(p0, ctrl, p2, color, width);
    // Arrowhead along the curve's end tangent.
    float tx = p2.x - ctrl.x, ty = p2.y - ctrl.y;
    float tl = std::max(std::sqrt(tx * tx + ty * ty), 1.0f);
    tx /= tl, ty /= tl;
    float head = 6.0f + width;
    draw->AddTriangleFilled(p2, ImVec2(p2.x - tx * head - ty * head * 0.5f, p2.y - ty * head + tx * head * 0.5f),
                            ImVec2(p2.x - tx * head + ty * head * 0.5f, p2.y - ty * head - tx * head * 0.5f),
                            color);
    if (labels) {
      ImVec2 mid(0.25f * p0.x + 0.5f * ctrl.x + 0.25f * p2.x, 0.25f * p0.y + 0.5f * ctrl.y + 0.25f * p2.y);
      std::string text = format_bytes(e->bytes);
      ImVec2 size = ImGui::CalcTextSize(text.c_str());
      ImVec2 min(mid.x - size.x / 2 - 2, mid.y - size.y / 2 - 1);
      draw->AddRectFilled(min, ImVec2(min.x + size.x + 4, min.y + size.y + 2),
                          to_imu32(kCanvasBackground, 0.85f), 3.0f);
      draw->AddText(ImVec2(min.x + 2, min.y + 1), IM_COL32(255, 255, 255, 255), text.c_str());
    }
  }
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

// A combo choosing one mesh dim for `role`; picking a dim another role holds
// swaps the two. Edits state.mesh_grid only (applied next frame).
void role_combo(const char* label, int MeshGridSelection::*role, const MeshShape& mesh,
                MeshGridSelection& selection, const MeshGridSelection& drawn) {
  int current = drawn.*role;
  std::string preview = mesh.has_dim_names() ? mesh.dim_names()[static_cast<size_t>(current)]
                                             : "dim " + std::to_string(current);
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 5.5f);
  if (!ImGui::BeginCombo(label, preview.c_str())) return;
  for (int d = 0; d < mesh.ndim(); ++d) {
    ImGui::PushID(d);
    if (ImGui::Selectable(mesh_dim_label(mesh, d).c_str(), d == current)) {
      selection = drawn;
      for (int MeshGridSelection::*other :
           {&MeshGridSelection::row_dim, &MeshGridSelection::col_dim, &MeshGridSelection::slice_dim}) {
        if (other != role && selection.*other == d) selection.*other = current;
      }
      selection.*role = d;
    }
    ImGui::PopID();
  }
  ImGui::EndCombo();
}

// Dim pickers (3+-D meshes): which dims are rows, columns and grids, and a
// slider per fixed dim (4+-D).
void draw_dim_pickers(ViewerState& state, const MeshShape& mesh, const MeshGridView& view) {
  MeshGridSelection& selection = state.mesh_grid;
  role_combo("rows", &MeshGridSelection::row_dim, mesh, selection, view.selection);
  ImGui::SameLine();
  role_combo("columns", &MeshGridSelection::col_dim, mesh, selection, view.selection);
  ImGui::SameLine();
  role_combo("grids", &MeshGridSelection::slice_dim, mesh, selection, view.selection);
  for (int d = 0; d < mesh.ndim(); ++d) {
    const MeshGridSelection& s = view.selection;
    if (d == s.row_dim || d == s.col_dim || d == s.slice_dim) continue;
    ImGui::PushID(d);
    selection.fixed_index = s.fixed_index;
    int index = static_cast<int>(s.fixed_index[static_cast<size_t>(d)]);
    int max_index = static_cast<int>(std::min<int64_t>(mesh.shape()[static_cast<size_t>(d)] - 1, INT_MAX));
    std::string label = mesh_dim_label(mesh, d) + " index";
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 10.0f);
    if (ImGui::SliderInt(label.c_str(), &index, 0, max_index)) {
      selection = s;
      selection.fixed_index[static_cast<size_t>(d)] = index;
    }
    ImGui::PopID();
  }
}

void draw_exchange_caption(const ViewerState& state, const MeshShape& mesh) {
  const CallExchange& x = state.exchange;
  if (!state.selected_event) return;
  int64_t total = 0;
  for (const auto& [rank, bytes] : x.sent_by_rank) total += bytes;
  std::string dim = x.mesh_dim >= 0 && x.mesh_dim < mesh.ndim() ? ", " + mesh_dim_label(mesh, x.mesh_dim) : "";
  ImGui::TextColored(to_imvec4(collective_kind_color(x.kind)), "call #%lld %s%s: %s between ranks",
                     static_cast<long long>(x.seq), x.kind.c_str(), dim.c_str(),
                     format_bytes(total).c_str());
  if (state.loaded && state.loaded->trace.world_size != mesh.num_ranks()) {
    show_error_text("the trace has " + std::to_string(state.loaded->trace.world_size) +
                    " ranks but the mesh " + std::to_string(mesh.num_ranks()) +
                    ": set the playground mesh to the trace's to see the bytes");
  }
}

void draw_mesh_body(ViewerState& state, const MeshShape& mesh) {
  MeshGridView view = mesh_grid_view(mesh, state.mesh_grid);
  ImGui::Text("%s: %lld ranks", mesh.to_string().c_str(), static_cast<long long>(mesh.num_ranks()));
  if (mesh.ndim() >= 3) {
    draw_dim_pickers(state, mesh, view);
  } else {
    ImGui::TextDisabled("columns: %s", mesh_dim_label(mesh, view.selection.col_dim).c_str());
    if (mesh.ndim() == 2)
      ImGui::TextDisabled("rows: %s", mesh_dim_label(mesh, view.selection.row_dim).c_str());
  }
  if (!view.fixed_notes.empty()) {
    std::string text;
    for (const std::string& note : view.fixed_notes) text += (text.empty() ? "" : ", ") + note;
    ImGui::TextDisabled("showing %lld of %lld ranks: %s", static_cast<long long>(view.drawn_ranks().size()),
                        static_cast<long long>(mesh.num_ranks()), text.c_str());
  }
  draw_exchange_caption(state, mesh);
  float line_h = ImGui::GetTextLineHeight();
  float label_w = view.selection.row_dim >= 0
                      ? ImGui::CalcTextSize(std::to_string(view.rows).c_str()).x + 8
                      : 0;
  ImVec2 avail = ImGui::GetContentRegionAvail();
  avail.y -= line_h * (2.0f + static_cast<float>(mesh.num_ranks() > 32 ? 0 : mesh.ndim()));
  GridFit g = fit_grids(view, avail, label_w, line_h);
  ImVec2 origin = ImGui::GetCursorScreenPos();
  float grid_w = label_w + view.cols * g.cell + kGap;
  float grid_h = 2 * line_h + view.rows * g.cell + kGap;
  int64_t hovered = -1;
  std::map<int64_t, ImVec2> centers;
  for (size_t s = 0; s < view.grids.size(); ++s) {
    int64_t k = static_cast<int64_t>(s);
    ImVec2 at(origin.x + (k % g.per_line) * grid_w, origin.y + (k / g.per_line) * grid_h);
    int64_t h = draw_grid(state, mesh, view, view.grids[s], g, at, label_w, &centers);
    if (h >= 0) hovered = h;
  }
  if (state.loaded && state.loaded->trace.world_size == mesh.num_ranks())
    draw_exchange(state.exchange, centers, g.cell);
  int64_t slices = static_cast<int64_t>(view.grids.size());
  int64_t lines = (slices + g.per_line - 1) / g.per_line;
  ImGui::Dummy(ImVec2(g.per_line * grid_w, lines * grid_h));
  if (hovered >= 0) {
    state.set_hover({hovered});
    cell_tooltip(state, mesh, hovered);
  }
  draw_groups(mesh);
  hint_text(
      "Hover a rank to see what it holds in the Layout panel. Click a call in the comm table or "
      "the timeline to draw its bytes between ranks here.");
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
