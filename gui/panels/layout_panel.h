// Layout panel: the playground's tensor drawn to scale as blocks coloured by
// owning rank (stripes for replicas, hatching for Partial); hover a block for
// its local shape, global offset and bytes. Tensors of more than two dims
// pick two dims to draw and slice the others.
//   draw_layout_panel(state, frame);   // once per frame
#pragma once

#include "gui/model/viewer_state.h"
#include "gui/panels/draw_util.h"

namespace dtensor::gui {

// Draws the "Layout" window for state.playground's source placements; sets
// the hover to the ranks of the block under the mouse.
void draw_layout_panel(ViewerState& state, const PanelFrame& frame);

// A wrapped row of rank colour swatches ("r0", "r1", ...) for meshes of at
// most 32 ranks; nothing for bigger meshes.
void draw_rank_legend(const RankPalette& palette, int64_t num_ranks);

}  // namespace dtensor::gui
