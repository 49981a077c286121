// Helpers of the headless rendering tests: an Xvfb server on a free display
// (found with -displayfd), running a program with a given DISPLAY and
// capturing its output, and PNG pixel statistics (colour counts, bounding
// boxes) so tests assert on what is drawn rather than on a whole-image hash.
//   XvfbServer xvfb;
//   if (!xvfb.start(&why)) GTEST_SKIP() << why;
//   ProcessResult r = run_process({viewer, "--screenshot", png}, xvfb.display());
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gui/model/rank_colors.h"

namespace dtensor::gui::testing {

// An Xvfb process started by this test; stopped (SIGTERM) by the destructor.
class XvfbServer {
 public:
  XvfbServer() = default;
  ~XvfbServer();
  XvfbServer(const XvfbServer&) = delete;
  XvfbServer& operator=(const XvfbServer&) = delete;

  // Starts `Xvfb -displayfd` on a free display. False with *why set when Xvfb
  // is not installed or does not come up within 20 s.
  bool start(std::string* why);
  // ":N" once started.
  const std::string& display() const { return display_; }

 private:
  int pid_ = -1;
  std::string display_;
};

// Exit status and combined stdout + stderr of a finished process.
struct ProcessResult {
  int exit_code = -1;
  std::string output;
};

// Runs argv[0] with arguments argv[1..]; DISPLAY is set to `display`, or
// removed from the environment when `display` is empty.
ProcessResult run_process(const std::vector<std::string>& argv, const std::string& display);

// An RGB image, top row first.
struct Image {
  int width = 0;
  int height = 0;
  std::vector<uint8_t> rgb;

  Rgb at(int x, int y) const;
};

// Loads a PNG with stb_image; nullopt when it cannot be read.
std::optional<Image> load_png(const std::string& path);

// An inclusive pixel box; empty when no pixel matched (x0 > x1).
struct Box {
  int x0 = 1 << 30, y0 = 1 << 30, x1 = -1, y1 = -1;
  int64_t count = 0;

  bool empty() const { return count == 0; }
  int width() const { return x1 - x0 + 1; }
  int height() const { return y1 - y0 + 1; }
};

// Pixels within `tolerance` (per channel) of `color`, and their bounding box.
Box find_color(const Image& image, Rgb color, int tolerance = 2);

// Like find_color, but only image rows with at least `min_row_pixels`
// matching pixels count: the fill of blocks, stripes and cells, not legend
// swatches or text.
Box find_fill(const Image& image, Rgb color, int min_row_pixels = 40, int tolerance = 2);

// The number of `colors` that cover at least `min_pixels` pixels each.
int count_present(const Image& image, const std::vector<Rgb>& colors, int64_t min_pixels);

}  // namespace dtensor::gui::testing
