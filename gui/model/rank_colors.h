// Colours of the viewer: one distinct, readable colour per rank (Tableau 10
// first, then greedy farthest-point picks in the OKLab colour space), a fixed
// colour per collective kind, and the text colour that reads on a background.
//   RankPalette palette(/*num_ranks=*/8);
//   Rgb c = palette.color(3);
//   Rgb label = text_color_on(c);   // black or white, whichever contrasts more
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace dtensor::gui {

// An 8-bit sRGB colour.
struct Rgb {
  uint8_t r = 0;
  uint8_t g = 0;
  uint8_t b = 0;

  friend bool operator==(const Rgb& a, const Rgb& b) {
    return a.r == b.r && a.g == b.g && a.b == b.b;
  }
  friend bool operator!=(const Rgb& a, const Rgb& b) { return !(a == b); }
};

// Perceptual distance between two colours: Euclidean distance in OKLab
// (0 for equal colours, ~1 for black vs white). Pairs below ~0.05 are hard to
// tell apart in small areas.
double color_distance(Rgb a, Rgb b);

// Relative luminance (WCAG, 0 = black, 1 = white).
double relative_luminance(Rgb c);

// Black or near-white, whichever has the higher WCAG contrast ratio on
// `background`. Example: text_color_on({255, 255, 0}) is black.
Rgb text_color_on(Rgb background);

// `c` mixed with `other`: t = 0 gives c, t = 1 gives other.
Rgb mix(Rgb c, Rgb other, double t);

// The first `n` rank colours: Tableau 10 for ranks 0-9, then farthest-point
// picks (each new colour maximises its distance to all earlier ones) from
// mid-lightness OKLab candidates, so ranks stay distinct and readable with
// black or white labels. Distinct for n up to several hundred; beyond the
// candidate set colours repeat. Deterministic. Example: make_rank_colors(2)
// == {{0x4E, 0x79, 0xA7}, {0xF2, 0x8E, 0x2B}}.
std::vector<Rgb> make_rank_colors(int64_t n);

// The colours of every rank of a mesh, computed once.
class RankPalette {
 public:
  // A palette for ranks 0 .. num_ranks - 1 (num_ranks <= 0 gives none).
  explicit RankPalette(int64_t num_ranks = 0);

  // Colour of `rank`; a neutral grey for ranks outside the palette.
  Rgb color(int64_t rank) const;
  // Number of ranks covered.
  int64_t size() const { return static_cast<int64_t>(colors_.size()); }

 private:
  std::vector<Rgb> colors_;
};

// Fixed colour of a collective kind for the timeline and the comm table:
// all_reduce blue, all_gather_into_tensor green, reduce_scatter_tensor orange,
// all_to_all_single purple, broadcast teal, scatter raspberry, barrier grey
// (other spellings of these, e.g. PyTorch's "c10d_functional.all_reduce",
// as trace::kind_of_collective reads them); other names get a stable colour
// from a hash of the name.
Rgb collective_kind_color(std::string_view kind);

// Colour of error text and invalid-input frames (a light red readable on the
// dark theme). Shared by panels and the rendering tests.
inline constexpr Rgb kErrorColor{255, 110, 110};
// Background tint of rows and cells that differ between ranks.
inline constexpr Rgb kDifferenceColor{150, 40, 40};
// Tags of collectives' origins: implicit (inserted by sharding propagation)
// in amber, explicit (redistribute, full_tensor, TP styles) in light blue.
inline constexpr Rgb kImplicitColor{255, 176, 0};
inline constexpr Rgb kExplicitColor{120, 200, 255};

}  // namespace dtensor::gui
