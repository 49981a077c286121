// Fitting a layout plane into pixels. See layout_geometry.h.
#include "gui/model/layout_geometry.h"

#include <algorithm>

namespace dtensor::gui {

LayoutGeometry fit_layout(const LayoutView& view, const PixelRect& area, float max_aspect) {
  LayoutGeometry geometry;
  float rows = static_cast<float>(view.rows);
  float cols = static_cast<float>(view.cols);
  if (rows <= 0.0f || cols <= 0.0f || area.width() <= 0.0f || area.height() <= 0.0f) {
    geometry.tensor = PixelRect{area.x0, area.y0, area.x0, area.y0};
    geometry.blocks.assign(view.blocks.size(), geometry.tensor);
    return geometry;
  }
  // Aspect = width / height of the drawn plane, clamped to [1/max, max].
  float aspect = cols / rows;
  float clamped = std::clamp(aspect, 1.0f / max_aspect, max_aspect);
  geometry.to_scale = clamped == aspect;
  float width = area.width();
  float height = width / clamped;
  if (height > area.height()) {
    height = area.height();
    width = height * clamped;
  }
  float x0 = area.x0 + (area.width() - width) * 0.5f;
  geometry.tensor = PixelRect{x0, area.y0, x0 + width, area.y0 + height};
  float cell_w = width / cols;
  float cell_h = height / rows;
  for (const LayoutBlock& block : view.blocks) {
    geometry.blocks.push_back(
        PixelRect{x0 + block.col_begin * cell_w, area.y0 + block.row_begin * cell_h,
                  x0 + block.col_end * cell_w, area.y0 + block.row_end * cell_h});
  }
  return geometry;
}

}  // namespace dtensor::gui
