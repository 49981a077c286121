// Drawing of one layout: blocks, stripes, hatching, axis ticks and tooltips.
// See layout_canvas.h.
#include "gui/panels/layout_canvas.h"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "layout/text.h"
#include "gui/model/format.h"
#include "gui/model/layout_geometry.h"
#include "gui/panels/draw_util.h"

namespace dtensor::gui {
namespace {

constexpr size_t kMaxStripeColors = 8;
const ImU32 kBlockBorder = IM_COL32(18, 18, 20, 255);
const ImU32 kHighlight = IM_COL32(255, 255, 255, 255);

ImVec2 v2(float x, float y) { return ImVec2(x, y); }

bool has_any(const HoverState& hover, const std::vector<int64_t>& ranks) {
  return std::any_of(ranks.begin(), ranks.end(), [&](int64_t r) { return hover.has(r); });
}

// "rank 3" / "ranks 0-3" and the short form "r3" / "r0-3".
std::vector<std::string> rank_labels(const std::vector<int64_t>& ranks) {
  std::string list = format_rank_list(ranks);
  return {(ranks.size() == 1 ? "rank " : "ranks ") + list, "r" + list};
}

// "P(sum)" for every Partial placement, joined: the partial label of blocks.
std::string partial_label(const LayoutView& view) {
  std::string label;
  for (const Placement& p : view.placements) {
    if (p.is_partial() && label.find(p.to_string()) == std::string::npos) {
      label += (label.empty() ? "" : " ") + p.to_string();
    }
  }
  return label + " partial";
}

// Partial blocks: muted fill, bold hatching and a dashed outline, so they
// never read as final values.
void draw_partial_overlay(ImDrawList* draw, ImVec2 min, ImVec2 max) {
  draw->AddRectFilled(min, max, to_imu32(kCanvasBackground, 0.4f));
  draw_hatching(draw, min, max, IM_COL32(10, 10, 12, 210), 13.0f);
  const float dash = 8.0f;
  ImU32 white = IM_COL32(235, 235, 235, 255);
  for (float x = min.x + 3; x < max.x - 3; x += 2 * dash) {
    float x1 = std::min(x + dash, max.x - 3);
    draw->AddLine(ImVec2(x, min.y + 3), ImVec2(x1, min.y + 3), white, 2.0f);
    draw->AddLine(ImVec2(x, max.y - 3), ImVec2(x1, max.y - 3), white, 2.0f);
  }
  for (float y = min.y + 3; y < max.y - 3; y += 2 * dash) {
    float y1 = std::min(y + dash, max.y - 3);
    draw->AddLine(ImVec2(min.x + 3, y), ImVec2(min.x + 3, y1), white, 2.0f);
    draw->AddLine(ImVec2(max.x - 3, y), ImVec2(max.x - 3, y1), white, 2.0f);
  }
}

void draw_block(ImDrawList* draw, const LayoutView& view, const LayoutBlock& block,
                const PixelRect& r, const RankPalette& palette, bool compact) {
  std::vector<Rgb> colors;
  for (size_t i = 0; i < block.ranks.size() && i < kMaxStripeColors; ++i) {
    colors.push_back(palette.color(block.ranks[i]));
  }
  ImVec2 min = v2(r.x0, r.y0), max = v2(r.x1, r.y1);
  float stripe = std::clamp(std::min(r.width(), r.height()) / 4.0f, 4.0f, 12.0f);
  draw_stripes(draw, min, max, colors, stripe);
  if (view.partial) draw_partial_overlay(draw, min, max);
  draw->AddRect(min, max, kBlockBorder, 0.0f, 0, 2.0f);

  bool solid = colors.size() == 1 && !view.partial;
  ImU32 text = solid ? to_imu32(text_color_on(colors[0])) : IM_COL32(245, 245, 245, 255);
  std::vector<std::string> labels = rank_labels(block.ranks);
  std::vector<std::string> lines = {labels[0], format_shape(block.local_shape)};
  if (view.partial) lines.insert(lines.begin() + 1, partial_label(view));
  if (!compact) lines.push_back(format_bytes(block.bytes));
  if (draw_fitted_lines(draw, min, max, lines, text, !solid) == 0) {
    draw_fitted_lines(draw, min, max, {labels[1]}, text, !solid);
  }
}

// Tick values at every block boundary along one axis, plus 0 and the extent.
std::vector<int64_t> boundaries(const LayoutView& view, bool rows) {
  std::set<int64_t> values = {0, rows ? view.rows : view.cols};
  for (const LayoutBlock& b : view.blocks) {
    values.insert(rows ? b.row_begin : b.col_begin);
    values.insert(rows ? b.row_end : b.col_end);
  }
  return {values.begin(), values.end()};
}

void draw_axes(ImDrawList* draw, const LayoutView& view, const PixelRect& t) {
  ImU32 color = ImGui::GetColorU32(ImGuiCol_TextDisabled);
  float line_h = ImGui::GetTextLineHeight();
  if (view.selection.col_dim >= 0 && view.cols > 0) {
    float last_end = -1e9f;
    for (int64_t v : boundaries(view, /*rows=*/false)) {
      std::string label = std::to_string(v);
      float w = ImGui::CalcTextSize(label.c_str()).x;
      float x = std::clamp(t.x0 + t.width() * v / view.cols - w / 2, t.x0 - w / 2, t.x1 - w / 2);
      if (x < last_end + 6.0f) continue;
      draw->AddText(v2(x, t.y0 - line_h - 2), color, label.c_str());
      last_end = x + w;
    }
  }
  if (view.selection.row_dim >= 0 && view.rows > 0) {
    float last_end = -1e9f;
    for (int64_t v : boundaries(view, /*rows=*/true)) {
      std::string label = std::to_string(v);
      float w = ImGui::CalcTextSize(label.c_str()).x;
      float y = std::clamp(t.y0 + t.height() * v / view.rows - line_h / 2, t.y0 - line_h / 2,
                           t.y1 - line_h / 2);
      if (y < last_end) continue;
      draw->AddText(v2(t.x0 - w - 5, y), color, label.c_str());
      last_end = y + line_h;
    }
  }
}

void block_tooltip(const LayoutView& view, const LayoutBlock& block) {
  ImGui::BeginTooltip();
  std::string ranks = format_rank_list(block.ranks);
  if (block.ranks.size() == 1) {
    ImGui::Text("rank %s", ranks.c_str());
  } else {
    ImGui::Text("ranks %s (%s)", ranks.c_str(), view.partial ? "partial holders" : "replicas");
  }
  ImGui::Separator();
  ImGui::Text("local shape    %s", format_shape(block.local_shape).c_str());
  ImGui::Text("global offset  %s", format_shape(block.global_offset).c_str());
  ImGui::Text("bytes          %s per rank (%s elements)", format_bytes(block.bytes).c_str(),
              format_count(block.bytes / std::max<int64_t>(view.element_size, 1)).c_str());
  for (const std::string& note : view.notes) ImGui::TextDisabled("%s", note.c_str());
  ImGui::EndTooltip();
}

}  // namespace

int draw_layout_canvas(const char* id, const LayoutView& view, const RankPalette& palette,
                       const HoverState& hover, ImVec2 size, bool compact) {
  ImGui::PushID(id);
  size = v2(std::max(size.x, 80.0f), std::max(size.y, 60.0f));
  ImVec2 origin = ImGui::GetCursorScreenPos();
  ImGui::InvisibleButton("canvas", size);
  bool canvas_hovered = ImGui::IsItemHovered();
  ImDrawList* draw = ImGui::GetWindowDrawList();
  float line_h = ImGui::GetTextLineHeight();
  float left = view.selection.row_dim >= 0
                   ? ImGui::CalcTextSize(std::to_string(view.rows).c_str()).x + 10.0f
                   : 4.0f;
  float top = view.selection.col_dim >= 0 ? line_h + 4.0f : 4.0f;
  PixelRect area{origin.x + left, origin.y + top, origin.x + size.x - 4.0f,
                 origin.y + size.y - 4.0f};
  LayoutGeometry geometry = fit_layout(view, area);
  const PixelRect& t = geometry.tensor;
  draw->AddRectFilled(v2(t.x0, t.y0), v2(t.x1, t.y1), to_imu32(kCanvasBackground));
  for (size_t i = 0; i < view.blocks.size(); ++i) {
    draw_block(draw, view, view.blocks[i], geometry.blocks[i], palette, compact);
  }
  for (size_t i = 0; i < view.blocks.size() && hover.active(); ++i) {
    const PixelRect& r = geometry.blocks[i];
    if (has_any(hover, view.blocks[i].ranks)) {
      draw->AddRect(v2(r.x0 + 1, r.y0 + 1), v2(r.x1 - 1, r.y1 - 1), kHighlight, 0.0f, 0, 3.0f);
    } else {
      draw->AddRectFilled(v2(r.x0, r.y0), v2(r.x1, r.y1), to_imu32(kCanvasBackground, 0.72f));
    }
  }
  draw_axes(draw, view, t);
  if (!geometry.to_scale) {
    draw->AddText(v2(t.x0, t.y1 + 2), ImGui::GetColorU32(ImGuiCol_TextDisabled),
                  "(elongated: aspect ratio clamped)");
  }
  int hovered = -1;
  ImVec2 mouse = ImGui::GetIO().MousePos;
  for (size_t i = 0; canvas_hovered && i < geometry.blocks.size(); ++i) {
    if (geometry.blocks[i].contains(mouse.x, mouse.y)) hovered = static_cast<int>(i);
  }
  if (hovered >= 0) block_tooltip(view, view.blocks[static_cast<size_t>(hovered)]);
  ImGui::PopID();
  return hovered;
}

void draw_layout_notes(const LayoutView& view) {
  for (const std::string& note : view.notes) ImGui::BulletText("%s", note.c_str());
  if (!view.empty_blocks.empty()) {
    std::vector<int64_t> ranks;
    for (const LayoutBlock& b : view.empty_blocks)
      ranks.insert(ranks.end(), b.ranks.begin(), b.ranks.end());
    std::sort(ranks.begin(), ranks.end());
    ImGui::BulletText("empty shards (uneven torch.chunk split): %s %s %s 0 elements",
                      (ranks.size() == 1 ? "rank" : "ranks"), format_rank_list(ranks).c_str(),
                      ranks.size() == 1 ? "holds" : "hold");
  }
  if (!view.ranks_outside_slice.empty()) {
    ImGui::BulletText("not in this slice: rank%s %s",
                      view.ranks_outside_slice.size() == 1 ? "" : "s",
                      format_rank_list(view.ranks_outside_slice).c_str());
  }
}

std::string layout_caption(const LayoutView& view, const char* dtype_name) {
  return format_shape(view.global_shape) + " " + dtype_name + " as " + to_string(view.placements) +
         " on " + view.mesh.to_string();
}

}  // namespace dtensor::gui
