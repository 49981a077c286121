// The shared text formatting: times with and without units, rank lists.
#include "layout/text.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace dtensor {
namespace {

TEST(TextTest, FormatUsHasThreeDecimalsAndNoUnit) {
  EXPECT_EQ(format_us(5.0096), "5.010");
  EXPECT_EQ(format_us(0.0), "0.000");
  EXPECT_EQ(format_us(1234.5), "1234.500");
}

TEST(TextTest, FormatDurationPicksTheUnit) {
  EXPECT_EQ(format_duration_us(5.0), "5.00 us");
  EXPECT_EQ(format_duration_us(1234.0), "1.23 ms");
  EXPECT_EQ(format_duration_us(2.5e6), "2.50 s");
}

TEST(TextTest, FormatBytesForLabelsDropsATrailingZeroDecimal) {
  EXPECT_EQ(format_bytes(0), "0 B");
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(1023), "1023 B");
  EXPECT_EQ(format_bytes(1024), "1 KiB");
  EXPECT_EQ(format_bytes(1536), "1.5 KiB");
  EXPECT_EQ(format_bytes(2047), "2 KiB");  // 1.999 rounds up, then drops ".0"
  EXPECT_EQ(format_bytes(3 << 20), "3 MiB");
  EXPECT_EQ(format_bytes(-1536), "-1.5 KiB");
  EXPECT_EQ(format_bytes(static_cast<double>(INT64_MIN)), "-8 EiB");
}

TEST(TextTest, FormatBytesForTablesKeepsTheDecimals) {
  EXPECT_EQ(format_bytes(512, 2), "512 B");
  EXPECT_EQ(format_bytes(1024, 2), "1.00 KiB");
  EXPECT_EQ(format_bytes(1536, 2), "1.50 KiB");
  EXPECT_EQ(format_bytes(80.0 * (1 << 30), 2), "80.00 GiB");
  EXPECT_EQ(format_bytes(1536, 0), "2 KiB");
}

TEST(TextTest, RankListShortensRunsOfThreeOrMore) {
  const std::pair<std::vector<int64_t>, const char*> table[] = {
      {{}, ""},
      {{3}, "3"},
      {{0, 1}, "0, 1"},
      {{0, 1, 2, 5}, "0-2, 5"},
      {{0, 1, 2, 3, 6, 7}, "0-3, 6, 7"},
      {{1, 3, 4, 5, 6}, "1, 3-6"},
  };
  for (const auto& [ranks, want] : table) {
    SCOPED_TRACE(want);
    EXPECT_EQ(format_rank_list(ranks), want);
  }
}

}  // namespace
}  // namespace dtensor
