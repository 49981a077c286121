// Tests of the viewer's colours: distinct, readable rank colours with a
// minimum perceptual distance, label contrast and collective colours.
#include "gui/model/rank_colors.h"

#include <gtest/gtest.h>

#include <set>
#include <tuple>

namespace dtensor::gui {
namespace {

double min_pairwise_distance(const std::vector<Rgb>& colors) {
  double best = 1e9;
  for (size_t i = 0; i < colors.size(); ++i) {
    for (size_t j = 0; j < i; ++j) best = std::min(best, color_distance(colors[i], colors[j]));
  }
  return best;
}

double contrast(Rgb a, Rgb b) {
  double la = relative_luminance(a), lb = relative_luminance(b);
  return (std::max(la, lb) + 0.05) / (std::min(la, lb) + 0.05);
}

TEST(RankColorsTest, FirstColorsAreTableau) {
  std::vector<Rgb> colors = make_rank_colors(2);
  EXPECT_EQ(colors[0], (Rgb{0x4E, 0x79, 0xA7}));
  EXPECT_EQ(colors[1], (Rgb{0xF2, 0x8E, 0x2B}));
}

TEST(RankColorsTest, MinimumPairwiseDistanceByPaletteSize) {
  // (size, minimum OKLab distance): small meshes get clearly different colours.
  const std::pair<int, double> table[] = {{4, 0.12}, {8, 0.12}, {16, 0.08}, {32, 0.07}, {64, 0.05}};
  for (auto [n, min_distance] : table) {
    SCOPED_TRACE("n = " + std::to_string(n));
    std::vector<Rgb> colors = make_rank_colors(n);
    ASSERT_EQ(colors.size(), static_cast<size_t>(n));
    EXPECT_GE(min_pairwise_distance(colors), min_distance);
  }
}

TEST(RankColorsTest, AllDistinctForHundredsOfRanks) {
  std::vector<Rgb> colors = make_rank_colors(512);
  std::set<std::tuple<int, int, int>> seen;
  for (Rgb c : colors) seen.emplace(c.r, c.g, c.b);
  EXPECT_EQ(seen.size(), colors.size());
  EXPECT_GT(min_pairwise_distance(colors), 0.0);
}

TEST(RankColorsTest, DeterministicAndPrefixStable) {
  std::vector<Rgb> small = make_rank_colors(12), big = make_rank_colors(40);
  for (size_t i = 0; i < small.size(); ++i) EXPECT_EQ(small[i], big[i]) << i;
  EXPECT_EQ(make_rank_colors(40), big);
}

TEST(RankColorsTest, LabelsReadOnEveryRankColor) {
  for (Rgb c : make_rank_colors(64)) {
    EXPECT_GE(contrast(c, text_color_on(c)), 4.0) << int(c.r) << "," << int(c.g) << "," << int(c.b);
  }
  EXPECT_EQ(text_color_on({255, 255, 0}).r, 10);
  EXPECT_EQ(text_color_on({0, 0, 80}).r, 250);
}

TEST(RankColorsTest, PaletteOutsideRangeIsGrey) {
  RankPalette palette(4);
  EXPECT_EQ(palette.size(), 4);
  EXPECT_EQ(palette.color(7), (Rgb{128, 128, 128}));
  EXPECT_EQ(palette.color(-1), (Rgb{128, 128, 128}));
}

TEST(RankColorsTest, CollectiveKindsAreDistinctAndStable) {
  const char* kinds[] = {"all_reduce",
                         "all_gather_into_tensor",
                         "reduce_scatter_tensor",
                         "all_to_all_single",
                         "broadcast",
                         "scatter",
                         "barrier"};
  std::vector<Rgb> colors;
  for (const char* kind : kinds) colors.push_back(collective_kind_color(kind));
  EXPECT_GE(min_pairwise_distance(colors), 0.08);
  EXPECT_EQ(collective_kind_color("my_custom_op"), collective_kind_color("my_custom_op"));
  EXPECT_EQ(collective_kind_color("c10d_functional.all_reduce"), collective_kind_color("all_reduce"))
      << "PyTorch's name of the same collective";
}

TEST(RankColorsTest, MixInterpolates) {
  EXPECT_EQ(mix({0, 0, 0}, {200, 100, 50}, 0.5), (Rgb{100, 50, 25}));
  EXPECT_EQ(mix({1, 2, 3}, {9, 9, 9}, 0.0), (Rgb{1, 2, 3}));
}

}  // namespace
}  // namespace dtensor::gui
