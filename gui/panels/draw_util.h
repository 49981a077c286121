// Small ImGui drawing helpers shared by the panels: colour conversion,
// striped fills for replicas, hatching for Partial, fitted labels and inline
// error text. Every helper draws at the given screen rectangle.
//   draw_stripes(ImGui::GetWindowDrawList(), min, max, {red, blue}, /*width=*/10.0f);
//   show_error_text(state.playground.mesh_error());
#pragma once

#include <imgui.h>

#include <string>
#include <vector>

#include "gui/model/rank_colors.h"

namespace dtensor::gui {

// Where a panel's window goes. The overview tiles the panels and passes
// ImGuiCond_Always after a resize; a single panel (screenshots) fills the
// display and cannot be moved.
struct PanelFrame {
  ImVec2 pos;
  ImVec2 size;
  ImGuiCond cond = ImGuiCond_FirstUseEver;
  ImGuiWindowFlags flags = 0;
};

// Calls SetNextWindowPos/Size for `frame`; use right before ImGui::Begin.
void place_next_window(const PanelFrame& frame);

// Background of drawing areas (slightly lighter than the window background).
inline constexpr Rgb kCanvasBackground{32, 34, 38};

// `c` as an ImGui colour with `alpha` in [0, 1].
ImU32 to_imu32(Rgb c, float alpha = 1.0f);
// `c` as ImVec4 (for ImGui::TextColored and style colours).
ImVec4 to_imvec4(Rgb c, float alpha = 1.0f);

// Fills [min, max] with diagonal stripes ("/") cycling through `colors`, each
// `width` pixels wide; one colour gives a plain fill. Precondition: !colors.empty().
void draw_stripes(ImDrawList* draw, ImVec2 min, ImVec2 max, const std::vector<Rgb>& colors,
                  float width);

// Draws "\" hatching lines `spacing` pixels apart over [min, max] (Partial).
void draw_hatching(ImDrawList* draw, ImVec2 min, ImVec2 max, ImU32 color, float spacing);

// Draws `lines` centred in [min, max] when they fit (with 3 px padding);
// with `backdrop` a dark rounded rectangle goes behind them. Lines that do not
// fit are dropped from the end. Returns the number of lines drawn.
int draw_fitted_lines(ImDrawList* draw, ImVec2 min, ImVec2 max,
                      const std::vector<std::string>& lines, ImU32 text_color, bool backdrop);

// A small filled square of colour `c` followed by `label` on the same line
// (legends).
void color_swatch(Rgb c, const char* label);

// For legends: after the first item, continues on the same line when an item
// `item_width` pixels wide still fits in the window, else on a new line.
void flow_item(bool first, float item_width, float spacing = 14.0f);

// Shows `error` wrapped in kErrorColor when it is not empty; returns whether it did.
bool show_error_text(const std::string& error);

// Dimmed explanatory text, wrapped.
void hint_text(const char* text);

}  // namespace dtensor::gui
