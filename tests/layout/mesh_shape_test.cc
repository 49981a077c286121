// Tests for MeshShape: validation, rank <-> coordinate mapping, process groups,
// sub-mesh slicing, text form, equality and hashing.
#include "layout/mesh_shape.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>
#include <sstream>
#include <unordered_set>

#include "layout/layout_error.h"
#include "testing/error_of.h"

namespace dtensor {
namespace {

using testing::error_of;

using ::testing::AllOf;
using ::testing::HasSubstr;

TEST(MeshShapeTest, CreateKeepsShapeNamesAndRankCount) {
  const MeshShape mesh = MeshShape::create({2, 3}, {"dp", "tp"});
  EXPECT_EQ(mesh.ndim(), 2);
  EXPECT_EQ(mesh.shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(mesh.num_ranks(), 6);
  EXPECT_TRUE(mesh.has_dim_names());
  EXPECT_EQ(mesh.dim_names(), (std::vector<std::string>{"dp", "tp"}));
  EXPECT_FALSE(MeshShape::create({4}).has_dim_names());
}

TEST(MeshShapeTest, DefaultConstructedIsOneRankMesh) {
  const MeshShape mesh;
  EXPECT_EQ(mesh, MeshShape::create({1}));
  EXPECT_EQ(mesh.num_ranks(), 1);
}

TEST(MeshShapeTest, CreateRejectsBadShapesAndNamesWithExplanations) {
  struct Case {
    std::vector<int64_t> shape;
    std::vector<std::string> names;
    std::vector<std::string> expected_parts;
  };
  const std::vector<Case> cases = {
      {{}, {}, {"MeshShape::create", "empty", "at least one dim"}},
      {{2, 0}, {}, {"mesh dim 1 has size 0", "[2, 0]", "at least one rank"}},
      {{-3}, {}, {"size -3", "[-3]"}},
      {{2, 2}, {"dp"}, {"1 dim names [dp]", "2-D mesh shape [2, 2]", "one name per mesh dim"}},
      {{2, 2}, {"dp", "dp"}, {"'dp' appears twice", "[dp, dp]", "unique"}},
      {{2, 2}, {"dp", ""}, {"mesh dim 1 has an empty name"}},
      {{2, 2}, {"None", "tp"}, {"named 'None'", "pick another name"}},
      {{int64_t{1} << 40, int64_t{1} << 40}, {}, {"overflows int64"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::PrintToString(c.shape) + " " + ::testing::PrintToString(c.names));
    const std::string message = error_of<LayoutError>([&] { MeshShape::create(c.shape, c.names); });
    for (const std::string& part : c.expected_parts) EXPECT_THAT(message, HasSubstr(part));
  }
}

TEST(MeshShapeTest, SizeAcceptsNegativeDimsAndRejectsOutOfRange) {
  const MeshShape mesh = MeshShape::create({2, 3, 4});
  EXPECT_EQ(mesh.size(0), 2);
  EXPECT_EQ(mesh.size(2), 4);
  EXPECT_EQ(mesh.size(-1), 4);
  EXPECT_EQ(mesh.size(-3), 2);
  EXPECT_THAT(error_of<LayoutError>([&] { mesh.size(3); }),
              AllOf(HasSubstr("MeshShape::size"), HasSubstr("mesh dim 3"),
                    HasSubstr("Mesh(2, 3, 4)"), HasSubstr("[-3, 2]")));
  EXPECT_THAT(error_of<LayoutError>([&] { mesh.size(-4); }), HasSubstr("mesh dim -4"));
}

TEST(MeshShapeTest, DimIndexFindsNamesAndListsKnownNamesOnMiss) {
  const MeshShape mesh = MeshShape::create({2, 2, 2}, {"pp", "dp", "tp"});
  EXPECT_EQ(mesh.dim_index("pp"), 0);
  EXPECT_EQ(mesh.dim_index("tp"), 2);
  EXPECT_THAT(error_of<LayoutError>([&] { mesh.dim_index("cp"); }),
              AllOf(HasSubstr("'cp'"), HasSubstr("known names: [pp, dp, tp]")));
  EXPECT_THAT(error_of<LayoutError>([&] { MeshShape::create({2}).dim_index("dp"); }),
              HasSubstr("the mesh is unnamed"));
}

TEST(MeshShapeTest, CoordinatesAreRowMajor) {
  const MeshShape mesh = MeshShape::create({2, 3, 4});
  struct Case {
    int64_t rank;
    std::vector<int64_t> coordinate;
  };
  const std::vector<Case> cases = {
      {0, {0, 0, 0}}, {1, {0, 0, 1}}, {4, {0, 1, 0}}, {11, {0, 2, 3}},
      {12, {1, 0, 0}}, {17, {1, 1, 1}}, {23, {1, 2, 3}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE("rank " + std::to_string(c.rank));
    EXPECT_EQ(mesh.coordinate_of(c.rank), c.coordinate);
    EXPECT_EQ(mesh.rank_of(c.coordinate), c.rank);
  }
}

TEST(MeshShapeTest, RankOfInvertsCoordinateOfForEveryRank) {
  for (const std::vector<int64_t>& shape :
       std::vector<std::vector<int64_t>>{{1}, {5}, {2, 2}, {3, 1, 2}, {2, 3, 2, 2}}) {
    const MeshShape mesh = MeshShape::create(shape);
    SCOPED_TRACE(mesh.to_string());
    for (int64_t rank = 0; rank < mesh.num_ranks(); ++rank) {
      EXPECT_EQ(mesh.rank_of(mesh.coordinate_of(rank)), rank);
    }
  }
}

TEST(MeshShapeTest, RankAndCoordinateErrorsNameTheBadValue) {
  const MeshShape mesh = MeshShape::create({2, 2}, {"dp", "tp"});
  EXPECT_THAT(error_of<LayoutError>([&] { mesh.coordinate_of(4); }),
              AllOf(HasSubstr("rank 4"), HasSubstr("Mesh(dp=2, tp=2)"), HasSubstr("[0, 3]")));
  EXPECT_THAT(error_of<LayoutError>([&] { mesh.coordinate_of(-1); }), HasSubstr("rank -1"));
  EXPECT_THAT(error_of<LayoutError>([&] { mesh.rank_of({1}); }),
              AllOf(HasSubstr("[1]"), HasSubstr("one entry per mesh dim")));
  EXPECT_THAT(error_of<LayoutError>([&] { mesh.rank_of({0, 2}); }),
              AllOf(HasSubstr("[0, 2]"), HasSubstr("mesh dim 1")));
}

TEST(MeshShapeTest, GroupRanksFollowOneMeshDim) {
  const MeshShape mesh = MeshShape::create({2, 4});
  EXPECT_EQ(mesh.group_ranks(6, 0), (std::vector<int64_t>{2, 6}));
  EXPECT_EQ(mesh.group_ranks(6, 1), (std::vector<int64_t>{4, 5, 6, 7}));
  EXPECT_EQ(mesh.group_ranks(6, -1), (std::vector<int64_t>{4, 5, 6, 7}));
  const MeshShape cube = MeshShape::create({2, 3, 2});
  EXPECT_EQ(cube.group_ranks(7, 1), (std::vector<int64_t>{7, 9, 11}));
  EXPECT_THAT(
      error_of<LayoutError>([&] { mesh.group_ranks(0, 2); }),
      HasSubstr("MeshShape::group_ranks"));
}

TEST(MeshShapeTest, AllGroupsPartitionTheRanksInLowestRankOrder) {
  EXPECT_EQ(MeshShape::create({2, 2}).all_groups(0),
            (std::vector<std::vector<int64_t>>{{0, 2}, {1, 3}}));
  EXPECT_EQ(MeshShape::create({2, 2}).all_groups(1),
            (std::vector<std::vector<int64_t>>{{0, 1}, {2, 3}}));
  for (const std::vector<int64_t>& shape :
       std::vector<std::vector<int64_t>>{{3}, {2, 3}, {2, 1, 3}, {3, 2, 2}}) {
    const MeshShape mesh = MeshShape::create(shape);
    for (int dim = 0; dim < mesh.ndim(); ++dim) {
      SCOPED_TRACE(mesh.to_string() + " dim " + std::to_string(dim));
      std::set<int64_t> seen;
      int64_t previous_first = -1;
      for (const std::vector<int64_t>& group : mesh.all_groups(dim)) {
        EXPECT_EQ(static_cast<int64_t>(group.size()), mesh.size(dim));
        EXPECT_GT(group.front(), previous_first);
        previous_first = group.front();
        for (int64_t rank : group) {
          EXPECT_TRUE(seen.insert(rank).second) << "rank " << rank << " in two groups";
          EXPECT_EQ(mesh.group_ranks(rank, dim), group);
        }
      }
      EXPECT_EQ(static_cast<int64_t>(seen.size()), mesh.num_ranks());
    }
  }
}

TEST(MeshShapeTest, CheckWorldSizeRejectsMismatch) {
  const MeshShape mesh = MeshShape::create({2, 4});
  EXPECT_NO_THROW(mesh.check_world_size(8));
  EXPECT_THAT(error_of<LayoutError>([&] { mesh.check_world_size(6); }),
              AllOf(HasSubstr("Mesh(2, 4) has 8 ranks"), HasSubstr("world has 6")));
}

TEST(MeshShapeTest, SliceKeepsRequestedOrderAndNames) {
  const MeshShape mesh = MeshShape::create({2, 3, 4}, {"dp", "cp", "tp"});
  EXPECT_EQ(mesh.slice({"tp"}), MeshShape::create({4}, {"tp"}));
  EXPECT_EQ(mesh.slice({"tp", "dp"}), MeshShape::create({4, 2}, {"tp", "dp"}));
  EXPECT_EQ(mesh.slice({"dp", "cp", "tp"}), mesh);
}

TEST(MeshShapeTest, SliceRejectsUnnamedMeshUnknownAndRepeatedNames) {
  const MeshShape named = MeshShape::create({2, 2}, {"dp", "tp"});
  EXPECT_THAT(error_of<LayoutError>([&] { MeshShape::create({2, 2}).slice({"dp"}); }),
              AllOf(HasSubstr("MeshShape::slice"), HasSubstr("no dim names")));
  EXPECT_THAT(error_of<LayoutError>([&] { named.slice({"pp"}); }),
              AllOf(HasSubstr("'pp'"), HasSubstr("known names: [dp, tp]")));
  EXPECT_THAT(error_of<LayoutError>([&] { named.slice({"tp", "tp"}); }),
              HasSubstr("'tp' is requested twice"));
  EXPECT_THAT(error_of<LayoutError>([&] { named.slice({}); }), HasSubstr("no dim names given"));
}

TEST(MeshShapeTest, ToStringShowsNamesWhenPresent) {
  EXPECT_EQ(MeshShape::create({2, 2}, {"dp", "tp"}).to_string(), "Mesh(dp=2, tp=2)");
  EXPECT_EQ(MeshShape::create({2, 2}).to_string(), "Mesh(2, 2)");
  EXPECT_EQ(MeshShape::create({8}).to_string(), "Mesh(8)");
  std::ostringstream out;
  out << MeshShape::create({3}, {"tp"});
  EXPECT_EQ(out.str(), "Mesh(tp=3)");
}

TEST(MeshShapeTest, EqualityAndHashCoverShapeAndNames) {
  const MeshShape a = MeshShape::create({2, 2}, {"dp", "tp"});
  const MeshShape b = MeshShape::create({2, 2}, {"dp", "tp"});
  EXPECT_EQ(a, b);
  EXPECT_EQ(std::hash<MeshShape>{}(a), std::hash<MeshShape>{}(b));
  EXPECT_NE(a, MeshShape::create({2, 2}));
  EXPECT_NE(a, MeshShape::create({2, 2}, {"tp", "dp"}));
  EXPECT_NE(a, MeshShape::create({4}, {"dp"}));
  std::unordered_set<MeshShape> set = {a, b, MeshShape::create({2, 2}), MeshShape::create({4})};
  EXPECT_EQ(set.size(), 3u);
}

}  // namespace
}  // namespace dtensor
