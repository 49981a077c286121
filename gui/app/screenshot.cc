// Offscreen framebuffer and PNG writing. See screenshot.h.
#include "gui/app/screenshot.h"

#define GL_GLEXT_PROTOTYPES 1
#include <GL/gl.h>
#include <GL/glext.h>
#include <stb/stb_image_write.h>

#include <cstring>

namespace dtensor::gui {

OffscreenTarget::~OffscreenTarget() {
  if (framebuffer_ != 0) glDeleteFramebuffers(1, &framebuffer_);
  if (color_ != 0) glDeleteRenderbuffers(1, &color_);
}

bool OffscreenTarget::create(int width, int height, std::string* error) {
  width_ = width;
  height_ = height;
  glGenRenderbuffers(1, &color_);
  glBindRenderbuffer(GL_RENDERBUFFER, color_);
  glRenderbufferStorage(GL_RENDERBUFFER, GL_RGBA8, width, height);
  glGenFramebuffers(1, &framebuffer_);
  glBindFramebuffer(GL_FRAMEBUFFER, framebuffer_);
  glFramebufferRenderbuffer(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_RENDERBUFFER, color_);
  GLenum status = glCheckFramebufferStatus(GL_FRAMEBUFFER);
  if (status != GL_FRAMEBUFFER_COMPLETE) {
    *error = "offscreen framebuffer incomplete (glCheckFramebufferStatus " +
             std::to_string(status) + ")";
    return false;
  }
  return true;
}

void OffscreenTarget::bind() const {
  glBindFramebuffer(GL_FRAMEBUFFER, framebuffer_);
  glViewport(0, 0, width_, height_);
}

std::vector<uint8_t> OffscreenTarget::read_rgba() const {
  size_t row = static_cast<size_t>(width_) * 4;
  std::vector<uint8_t> bottom_up(row * static_cast<size_t>(height_));
  glBindFramebuffer(GL_READ_FRAMEBUFFER, framebuffer_);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadPixels(0, 0, width_, height_, GL_RGBA, GL_UNSIGNED_BYTE, bottom_up.data());
  std::vector<uint8_t> top_down(bottom_up.size());
  for (int y = 0; y < height_; ++y) {
    std::memcpy(&top_down[static_cast<size_t>(y) * row],
                &bottom_up[static_cast<size_t>(height_ - 1 - y) * row], row);
  }
  return top_down;
}

bool write_png(const std::string& path, const std::vector<uint8_t>& rgba, int width, int height,
               std::string* error) {
  // Blending leaves alpha below 255 in places: keep RGB only, as on screen.
  std::vector<uint8_t> rgb(static_cast<size_t>(width) * static_cast<size_t>(height) * 3);
  for (size_t i = 0, j = 0; j < rgb.size(); i += 4, j += 3) {
    rgb[j] = rgba[i];
    rgb[j + 1] = rgba[i + 1];
    rgb[j + 2] = rgba[i + 2];
  }
  if (!stbi_write_png(path.c_str(), width, height, /*comp=*/3, rgb.data(), width * 3)) {
    *error = "cannot write PNG '" + path + "'";
    return false;
  }
  return true;
}

}  // namespace dtensor::gui
