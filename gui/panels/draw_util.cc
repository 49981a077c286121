// Shared drawing helpers of the panels. See draw_util.h.
#include "gui/panels/draw_util.h"

#include <algorithm>
#include <cmath>

namespace dtensor::gui {

void place_next_window(const PanelFrame& frame) {
  ImGui::SetNextWindowPos(frame.pos, frame.cond);
  ImGui::SetNextWindowSize(frame.size, frame.cond);
}

ImU32 to_imu32(Rgb c, float alpha) {
  int a = static_cast<int>(std::lround(std::clamp(alpha, 0.0f, 1.0f) * 255.0f));
  return IM_COL32(c.r, c.g, c.b, a);
}

ImVec4 to_imvec4(Rgb c, float alpha) {
  return ImVec4(c.r / 255.0f, c.g / 255.0f, c.b / 255.0f, alpha);
}

void draw_stripes(ImDrawList* draw, ImVec2 min, ImVec2 max, const std::vector<Rgb>& colors,
                  float width) {
  if (colors.size() == 1) {
    draw->AddRectFilled(min, max, to_imu32(colors[0]));
    return;
  }
  draw->PushClipRect(min, max, /*intersect_with_current_clip_rect=*/true);
  float height = max.y - min.y;
  // Stripe i covers x in [min.x + i*width - height, ...) at the bottom edge.
  int count = static_cast<int>(std::ceil((max.x - min.x + height) / width)) + 1;
  for (int i = 0; i < count; ++i) {
    float x0 = min.x - height + static_cast<float>(i) * width;
    ImU32 color = to_imu32(colors[static_cast<size_t>(i) % colors.size()]);
    draw->AddQuadFilled(ImVec2(x0, max.y), ImVec2(x0 + width, max.y),
                        ImVec2(x0 + width + height, min.y), ImVec2(x0 + height, min.y), color);
  }
  draw->PopClipRect();
}

void draw_hatching(ImDrawList* draw, ImVec2 min, ImVec2 max, ImU32 color, float spacing) {
  draw->PushClipRect(min, max, /*intersect_with_current_clip_rect=*/true);
  float height = max.y - min.y;
  for (float x = min.x - height; x < max.x + height; x += spacing) {
    draw->AddLine(ImVec2(x, min.y), ImVec2(x + height, max.y), color, 1.5f);
  }
  draw->PopClipRect();
}

int draw_fitted_lines(ImDrawList* draw, ImVec2 min, ImVec2 max,
                      const std::vector<std::string>& lines, ImU32 text_color, bool backdrop) {
  const float pad = 3.0f;
  float line_height = ImGui::GetTextLineHeight();
  float avail_w = max.x - min.x - 2 * pad;
  float avail_h = max.y - min.y - 2 * pad;
  int shown = 0;
  float widest = 0.0f;
  for (const std::string& line : lines) {
    float w = ImGui::CalcTextSize(line.c_str()).x;
    if (w > avail_w || (shown + 1) * line_height > avail_h) break;
    widest = std::max(widest, w);
    ++shown;
  }
  if (shown == 0) return 0;
  float block_h = shown * line_height;
  ImVec2 center((min.x + max.x) * 0.5f, (min.y + max.y) * 0.5f);
  if (backdrop) {
    draw->AddRectFilled(ImVec2(center.x - widest / 2 - pad, center.y - block_h / 2 - 1),
                        ImVec2(center.x + widest / 2 + pad, center.y + block_h / 2 + 1),
                        IM_COL32(15, 15, 18, 215), 4.0f);
  }
  for (int i = 0; i < shown; ++i) {
    const std::string& line = lines[static_cast<size_t>(i)];
    float w = ImGui::CalcTextSize(line.c_str()).x;
    draw->AddText(ImVec2(center.x - w / 2, center.y - block_h / 2 + i * line_height), text_color,
                  line.c_str());
  }
  return shown;
}

void color_swatch(Rgb c, const char* label) {
  float size = ImGui::GetTextLineHeight() * 0.8f;
  ImVec2 pos = ImGui::GetCursorScreenPos();
  float offset = (ImGui::GetTextLineHeight() - size) * 0.5f;
  ImGui::GetWindowDrawList()->AddRectFilled(ImVec2(pos.x, pos.y + offset),
                                            ImVec2(pos.x + size, pos.y + offset + size),
                                            to_imu32(c), 2.0f);
  ImGui::Dummy(ImVec2(size, ImGui::GetTextLineHeight()));
  ImGui::SameLine(0.0f, 4.0f);
  ImGui::TextUnformatted(label);
}

void flow_item(bool first, float item_width, float spacing) {
  if (first) return;
  float right = ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x;
  ImGui::SameLine(0.0f, spacing);
  if (ImGui::GetCursorScreenPos().x + item_width > right) ImGui::NewLine();
}

bool show_error_text(const std::string& error) {
  if (error.empty()) return false;
  ImGui::PushStyleColor(ImGuiCol_Text, to_imvec4(kErrorColor));
  ImGui::PushTextWrapPos(0.0f);
  ImGui::TextUnformatted(error.c_str());
  ImGui::PopTextWrapPos();
  ImGui::PopStyleColor();
  return true;
}

void hint_text(const char* text) {
  ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
  ImGui::PushTextWrapPos(0.0f);
  ImGui::TextUnformatted(text);
  ImGui::PopTextWrapPos();
  ImGui::PopStyleColor();
}

}  // namespace dtensor::gui
