// Shapes and meshes as people type them: the spellings the viewer and the
// planner accept, and the messages for what they refuse.
#include "layout/shape_text.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "layout/layout_error.h"
#include "testing/error_of.h"

namespace dtensor {
namespace {

using testing::error_of;
using ::testing::HasSubstr;

TEST(ShapeTextTest, ExtentsInEverySpelling) {
  for (const char* text : {"8, 6", "[8, 6]", "(8,6)", "8x6", " 8 6 ", "8X6"}) {
    SCOPED_TRACE(text);
    EXPECT_EQ(parse_extents(text), (std::vector<int64_t>{8, 6}));
  }
  EXPECT_EQ(parse_extents("0"), std::vector<int64_t>{0});
  EXPECT_EQ(parse_extents("999999999999999"), std::vector<int64_t>{999999999999999});
}

TEST(ShapeTextTest, ExtentsRefusedWithTheToken) {
  EXPECT_THAT(error_of<LayoutError>([] { parse_extents("  "); }), HasSubstr("no sizes"));
  EXPECT_THAT(error_of<LayoutError>([] { parse_extents("8, x"); }), HasSubstr("'x' is not a size"));
  EXPECT_THAT(error_of<LayoutError>([] { parse_extents("-1"); }), HasSubstr("'-1' is not a size"));
  // 16 digits could overflow a product of two: refused, not wrapped.
  EXPECT_THAT(error_of<LayoutError>([] { parse_extents("1234567890123456"); }),
              HasSubstr("is not a size"));
}

TEST(ShapeTextTest, MeshesNamedAndUnnamed) {
  const std::pair<const char*, MeshShape> good[] = {
      {"dp=2, tp=4", MeshShape::create({2, 4}, {"dp", "tp"})},
      {"dp=1024,tp=8", MeshShape::create({1024, 8}, {"dp", "tp"})},
      {"dp: 2", MeshShape::create({2}, {"dp"})},
      {"dp = 2 tp =4", MeshShape::create({2, 4}, {"dp", "tp"})},
      {"2x2x2", MeshShape::create({2, 2, 2})},
      {"[4, 2]", MeshShape::create({4, 2})},
  };
  for (const auto& [text, want] : good) {
    SCOPED_TRACE(text);
    EXPECT_EQ(parse_mesh_shape(text), want);
  }
}

TEST(ShapeTextTest, MeshesRefusedWithTheReason) {
  const std::pair<const char*, const char*> table[] = {
      {"", "no mesh dims"},
      {"dp=2, 4", "name every dim"},
      {"0", "'0' is not a mesh dim size"},
      {"dp=", "'dp=' is not a mesh dim size"},
      {"a=2, a=2", "appears twice"},  // MeshShape::create refuses it
  };
  for (auto [text, want] : table) {
    SCOPED_TRACE(text);
    EXPECT_THAT(error_of<LayoutError>([&] { parse_mesh_shape(text); }), HasSubstr(want));
  }
}

}  // namespace
}  // namespace dtensor
