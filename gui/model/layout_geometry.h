// Pixel geometry of a drawn layout: where the tensor and each block go inside
// a drawing area, to scale (element rows and columns are square) unless the
// tensor is so elongated that it would be a sliver, in which case the aspect
// ratio is clamped and `to_scale` is false. Pure arithmetic, no ImGui.
//   LayoutGeometry g = fit_layout(view, PixelRect{0, 0, 400, 300});
//   g.blocks[0];   // rectangle of view.blocks[0] in pixels
#pragma once

#include <vector>

#include "gui/model/layout_model.h"

namespace dtensor::gui {

// An axis-aligned rectangle in pixels: [x0, x1) x [y0, y1).
struct PixelRect {
  float x0 = 0.0f;
  float y0 = 0.0f;
  float x1 = 0.0f;
  float y1 = 0.0f;

  float width() const { return x1 - x0; }
  float height() const { return y1 - y0; }
  // True when (x, y) lies inside.
  bool contains(float x, float y) const { return x >= x0 && x < x1 && y >= y0 && y < y1; }
};

// Where a layout's pieces go.
struct LayoutGeometry {
  // The whole drawn plane, centred horizontally and top-aligned in the area.
  PixelRect tensor;
  // One rectangle per LayoutView::blocks entry, same order.
  std::vector<PixelRect> blocks;
  // False when the aspect ratio was clamped to `max_aspect`.
  bool to_scale = true;
};

// Fits `view`'s rows x cols plane into `area`, keeping element cells square
// unless rows / cols (or cols / rows) exceeds `max_aspect`, in which case the
// ratio is clamped to max_aspect. A 1-D tensor (rows == 1) is drawn as a band
// at most `max_aspect` times longer than high. Empty planes (a 0 extent) give
// a zero-size tensor rectangle. Example: 8 x 6 in a 600 x 400 area gives a
// 300 x 400 tensor at x in [150, 450); with [S(0), S(1)] on Mesh(2, 2),
// block 1 (rank 1) spans x in [300, 450), y in [0, 200).
LayoutGeometry fit_layout(const LayoutView& view, const PixelRect& area, float max_aspect = 8.0f);

}  // namespace dtensor::gui
