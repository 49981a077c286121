// Headless rendering support: an OpenGL framebuffer object to draw frames
// into without a visible window, pixel read-back with glReadPixels, and PNG
// writing with stb_image_write.
//   OffscreenTarget target;
//   if (!target.create(1000, 700, &error)) fail(error);
//   target.bind();  /* render */  write_png("out.png", target.read_rgba(), 1000, 700, &error);
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dtensor::gui {

// A colour framebuffer of a fixed size in the current OpenGL context.
// Precondition: a context is current while it is created, used and destroyed.
class OffscreenTarget {
 public:
  OffscreenTarget() = default;
  ~OffscreenTarget();
  OffscreenTarget(const OffscreenTarget&) = delete;
  OffscreenTarget& operator=(const OffscreenTarget&) = delete;

  // Creates a width x height RGBA8 framebuffer; false with *error set when
  // the driver refuses (message names the framebuffer status).
  bool create(int width, int height, std::string* error);
  // Binds it for drawing and sets the viewport to its size.
  void bind() const;
  // Its pixels, RGBA, top row first (glReadPixels reads bottom-up).
  std::vector<uint8_t> read_rgba() const;

  int width() const { return width_; }
  int height() const { return height_; }

 private:
  unsigned int framebuffer_ = 0;
  unsigned int color_ = 0;
  int width_ = 0;
  int height_ = 0;
};

// Writes top-row-first RGBA pixels as an RGB PNG (alpha dropped: blending
// leaves it below 255); false with *error on failure.
bool write_png(const std::string& path, const std::vector<uint8_t>& rgba, int width, int height,
               std::string* error);

}  // namespace dtensor::gui
