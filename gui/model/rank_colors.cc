// Rank and collective colours: OKLab conversions and the farthest-point
// palette. See rank_colors.h.
#include "gui/model/rank_colors.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <optional>
#include <string>

#include "layout/collective_kind.h"
#include "trace/collective_name.h"

namespace dtensor::gui {
namespace {

struct Lab {
  double l, a, b;
};

double srgb_to_linear(uint8_t c) {
  double x = c / 255.0;
  return x <= 0.04045 ? x / 12.92 : std::pow((x + 0.055) / 1.055, 2.4);
}

// Linear [0, 1] to 8-bit sRGB; nullopt-like flag via `in_gamut`.
uint8_t linear_to_srgb(double x, bool* in_gamut) {
  if (x < -1e-4 || x > 1.0 + 1e-4) *in_gamut = false;
  x = std::clamp(x, 0.0, 1.0);
  double v = x <= 0.0031308 ? 12.92 * x : 1.055 * std::pow(x, 1.0 / 2.4) - 0.055;
  return static_cast<uint8_t>(std::lround(v * 255.0));
}

Lab to_oklab(Rgb c) {
  double r = srgb_to_linear(c.r), g = srgb_to_linear(c.g), b = srgb_to_linear(c.b);
  double l = std::cbrt(0.4122214708 * r + 0.5363325363 * g + 0.0514459929 * b);
  double m = std::cbrt(0.2119034982 * r + 0.6806995451 * g + 0.1073969566 * b);
  double s = std::cbrt(0.0883024619 * r + 0.2817188376 * g + 0.6299787005 * b);
  return {0.2104542553 * l + 0.7936177850 * m - 0.0040720468 * s,
          1.9779984951 * l - 2.4285922050 * m + 0.4505937099 * s,
          0.0259040371 * l + 0.7827717662 * m - 0.8086757660 * s};
}

// OKLab to sRGB; *in_gamut turns false when the colour had to be clipped.
Rgb from_oklab(Lab lab, bool* in_gamut) {
  double l = lab.l + 0.3963377774 * lab.a + 0.2158037573 * lab.b;
  double m = lab.l - 0.1055613458 * lab.a - 0.0638541728 * lab.b;
  double s = lab.l - 0.0894841775 * lab.a - 1.2914855480 * lab.b;
  l = l * l * l;
  m = m * m * m;
  s = s * s * s;
  return {linear_to_srgb(4.0767416621 * l - 3.3077115913 * m + 0.2309699292 * s, in_gamut),
          linear_to_srgb(-1.2684380046 * l + 2.6097574011 * m - 0.3413193965 * s, in_gamut),
          linear_to_srgb(-0.0041960863 * l - 0.7034186147 * m + 1.7076147010 * s, in_gamut)};
}

// Tableau 10: well-tested categorical colours, used for the first ranks.
constexpr std::array<Rgb, 10> kTableau10 = {{{0x4E, 0x79, 0xA7},
                                             {0xF2, 0x8E, 0x2B},
                                             {0xE1, 0x57, 0x59},
                                             {0x76, 0xB7, 0xB2},
                                             {0x59, 0xA1, 0x4F},
                                             {0xED, 0xC9, 0x48},
                                             {0xB0, 0x7A, 0xA1},
                                             {0xFF, 0x9D, 0xA7},
                                             {0x9C, 0x75, 0x5F},
                                             {0xBA, 0xB0, 0xAC}}};

// In-gamut mid-lightness, moderate-chroma colours: readable under labels and
// on the dark background. Built once.
const std::vector<Rgb>& candidate_colors() {
  static const std::vector<Rgb> candidates = [] {
    std::vector<Rgb> out;
    for (double lightness : {0.55, 0.62, 0.69, 0.76, 0.83, 0.90}) {
      for (double chroma : {0.07, 0.11, 0.15}) {
        for (int hue = 0; hue < 360; hue += 6) {
          double rad = hue * 3.14159265358979323846 / 180.0;
          bool in_gamut = true;
          Rgb c =
              from_oklab({lightness, chroma * std::cos(rad), chroma * std::sin(rad)}, &in_gamut);
          if (in_gamut) out.push_back(c);
        }
      }
    }
    return out;
  }();
  return candidates;
}

}  // namespace

double color_distance(Rgb a, Rgb b) {
  Lab x = to_oklab(a), y = to_oklab(b);
  return std::sqrt((x.l - y.l) * (x.l - y.l) + (x.a - y.a) * (x.a - y.a) +
                   (x.b - y.b) * (x.b - y.b));
}

double relative_luminance(Rgb c) {
  return 0.2126 * srgb_to_linear(c.r) + 0.7152 * srgb_to_linear(c.g) + 0.0722 * srgb_to_linear(c.b);
}

Rgb text_color_on(Rgb background) {
  constexpr Rgb kBlack{10, 10, 10};
  constexpr Rgb kWhite{250, 250, 250};
  double lum = relative_luminance(background);
  double with_black = (lum + 0.05) / (relative_luminance(kBlack) + 0.05);
  double with_white = (relative_luminance(kWhite) + 0.05) / (lum + 0.05);
  return with_black >= with_white ? kBlack : kWhite;
}

Rgb mix(Rgb c, Rgb other, double t) {
  auto channel = [t](uint8_t x, uint8_t y) {
    return static_cast<uint8_t>(std::lround(x + (static_cast<double>(y) - x) * t));
  };
  return {channel(c.r, other.r), channel(c.g, other.g), channel(c.b, other.b)};
}

std::vector<Rgb> make_rank_colors(int64_t n) {
  std::vector<Rgb> colors;
  if (n <= 0) return colors;
  const std::vector<Rgb>& candidates = candidate_colors();
  size_t distinct = kTableau10.size() + candidates.size();
  size_t wanted = std::min<size_t>(static_cast<size_t>(n), distinct);
  for (size_t i = 0; i < std::min(wanted, kTableau10.size()); ++i) colors.push_back(kTableau10[i]);
  // Farthest-point sampling: keep each candidate's distance to the chosen set.
  std::vector<double> nearest(candidates.size(), 1e9);
  std::vector<bool> used(candidates.size(), false);
  auto update = [&](Rgb chosen) {
    for (size_t c = 0; c < candidates.size(); ++c) {
      nearest[c] = std::min(nearest[c], color_distance(candidates[c], chosen));
    }
  };
  for (Rgb chosen : colors) update(chosen);
  while (colors.size() < wanted) {
    size_t best = 0;
    double best_distance = -1.0;
    for (size_t c = 0; c < candidates.size(); ++c) {
      if (!used[c] && nearest[c] > best_distance) {
        best = c;
        best_distance = nearest[c];
      }
    }
    used[best] = true;
    colors.push_back(candidates[best]);
    update(candidates[best]);
  }
  for (size_t i = colors.size(); i < static_cast<size_t>(n); ++i)
    colors.push_back(colors[i % distinct]);
  return colors;
}

RankPalette::RankPalette(int64_t num_ranks) : colors_(make_rank_colors(num_ranks)) {}

Rgb RankPalette::color(int64_t rank) const {
  if (rank < 0 || rank >= size()) return {128, 128, 128};
  return colors_[static_cast<size_t>(rank)];
}

Rgb collective_kind_color(std::string_view kind) {
  if (std::optional<CollectiveKind> known = trace::kind_of_collective(kind)) {
    switch (*known) {
      case CollectiveKind::kAllReduce:
        return {0x4C, 0x8E, 0xDA};
      case CollectiveKind::kAllGatherIntoTensor:
        return {0x4F, 0xB0, 0x5C};
      case CollectiveKind::kReduceScatterTensor:
        return {0xF2, 0x8E, 0x2B};
      case CollectiveKind::kAllToAllSingle:
        return {0xB0, 0x7A, 0xD8};
      case CollectiveKind::kBroadcast:
        return {0x3F, 0xB8, 0xAF};
      case CollectiveKind::kScatter:
        return {0xD9, 0x66, 0x8F};
      case CollectiveKind::kBarrier:
        return {0x9A, 0x9A, 0x9A};
    }
  }
  size_t hash = std::hash<std::string>{}(std::string(kind));
  const std::vector<Rgb>& candidates = candidate_colors();
  return candidates[hash % candidates.size()];
}

}  // namespace dtensor::gui
