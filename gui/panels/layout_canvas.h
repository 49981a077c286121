// Draws one LayoutView (see gui/model/layout_model.h) as coloured blocks:
// one colour per owning rank, diagonal stripes for replicas, hatching for
// Partial, index ticks on the axes, hover tooltips. Used by the Layout and
// Playground panels.
//   int hovered = draw_layout_canvas("src", view, palette, state.hover(), ImVec2(400, 300));
//   if (hovered >= 0) state.set_hover(view.blocks[hovered].ranks);
#pragma once

#include <imgui.h>

#include "gui/model/layout_model.h"
#include "gui/model/rank_colors.h"
#include "gui/model/viewer_state.h"

namespace dtensor::gui {

// Draws `view` into a `size` region at the cursor (advancing it) and returns
// the index of the block under the mouse, or -1. While some rank is
// highlighted in `hover`, blocks without a highlighted rank are dimmed and
// the others outlined. With `compact`, block labels omit bytes.
int draw_layout_canvas(const char* id, const LayoutView& view, const RankPalette& palette,
                       const HoverState& hover, ImVec2 size, bool compact = false);

// The lines under a canvas: placement notes (replicated / partial), empty
// shards and ranks outside the drawn slice.
void draw_layout_notes(const LayoutView& view);

// One-line caption: "[8, 6] float32 as [S(0), S(1)] on Mesh(dp=2, tp=2)".
std::string layout_caption(const LayoutView& view, const char* dtype_name);

}  // namespace dtensor::gui
