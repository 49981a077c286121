// Tests for the alias form (JAX PartitionSpec style): conversion both ways,
// round trips over every shard-or-replicate layout, text form and errors.
#include "layout/placement_alias.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "layout/layout_error.h"
#include "testing/error_of.h"

namespace dtensor {
namespace {

using testing::error_of;

using ::testing::AllOf;
using ::testing::HasSubstr;

// Every list of Shard/Replicate placements on `mesh` for a tensor of `ndim` dims.
std::vector<Placements> all_shard_or_replicate(const MeshShape& mesh, int64_t ndim) {
  std::vector<Placements> result = {{}};
  for (int i = 0; i < mesh.ndim(); ++i) {
    std::vector<Placements> next;
    for (const Placements& prefix : result) {
      Placements with_replicate = prefix;
      with_replicate.push_back(Replicate());
      next.push_back(with_replicate);
      for (int64_t d = 0; d < ndim; ++d) {
        Placements with_shard = prefix;
        with_shard.push_back(Shard(d));
        next.push_back(with_shard);
      }
    }
    result = std::move(next);
  }
  return result;
}

TEST(PlacementAliasTest, BraceListsBuildSpecsDirectly) {
  const AliasSpec a = {{"dp"}, {"None"}};
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0], (TensorDimAlias{"dp"}));
  const AliasSpec b = {{"dp", "tp"}, {}};
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[0], (TensorDimAlias{"dp", "tp"}));
  EXPECT_TRUE(b[1].empty());
}

TEST(PlacementAliasTest, AliasesConvertToPlacements) {
  const MeshShape mesh = MeshShape::create({2, 2, 2}, {"pp", "dp", "tp"});
  struct Case {
    AliasSpec alias;
    Placements expected;
  };
  const std::vector<Case> cases = {
      {{{"dp"}, {"None"}}, {Replicate(), Shard(0), Replicate()}},
      {{{"None"}, {"tp"}}, {Replicate(), Replicate(), Shard(1)}},
      {{{"dp", "tp"}, {}}, {Replicate(), Shard(0), Shard(0)}},
      {{{"pp"}, {"tp"}, {"dp"}}, {Shard(0), Shard(2), Shard(1)}},
      {{{"pp", "dp", "tp"}}, {Shard(0), Shard(0), Shard(0)}},
      {{{}, {}}, {Replicate(), Replicate(), Replicate()}},
      {{}, {Replicate(), Replicate(), Replicate()}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(to_string(c.alias));
    EXPECT_EQ(placements_from_alias(c.alias, mesh), c.expected);
  }
}

TEST(PlacementAliasTest, PlacementsConvertToAliasesInMeshOrder) {
  const MeshShape mesh = MeshShape::create({2, 4}, {"dp", "tp"});
  struct Case {
    Placements placements;
    int64_t ndim;
    AliasSpec expected;
  };
  const std::vector<Case> cases = {
      {{Shard(0), Replicate()}, 2, {{"dp"}, {}}},
      {{Replicate(), Shard(-1)}, 2, {{}, {"tp"}}},
      {{Shard(1), Shard(1)}, 3, {{}, {"dp", "tp"}, {}}},
      {{Replicate(), Replicate()}, 0, {}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(to_string(c.placements));
    EXPECT_EQ(alias_from_placements(c.placements, mesh, c.ndim), c.expected);
  }
}

TEST(PlacementAliasTest, EveryShardOrReplicateLayoutRoundTrips) {
  for (const MeshShape& mesh :
       {MeshShape::create({2}, {"x"}), MeshShape::create({2, 3}, {"dp", "tp"}),
        MeshShape::create({2, 1, 2}, {"pp", "dp", "tp"})}) {
    for (int64_t ndim = 0; ndim <= 3; ++ndim) {
      for (const Placements& placements : all_shard_or_replicate(mesh, ndim)) {
        SCOPED_TRACE(mesh.to_string() + " ndim " + std::to_string(ndim) + " " +
                     to_string(placements));
        const AliasSpec alias = alias_from_placements(placements, mesh, ndim);
        EXPECT_EQ(static_cast<int64_t>(alias.size()), ndim);
        EXPECT_EQ(placements_from_alias(alias, mesh), placements);
        EXPECT_EQ(alias_from_placements(placements_from_alias(alias, mesh), mesh, ndim), alias);
      }
    }
  }
}

TEST(PlacementAliasTest, NoneEntriesComeBackAsEmptyLists) {
  const MeshShape mesh = MeshShape::create({2, 2}, {"dp", "tp"});
  const AliasSpec alias = {{"None"}, {"tp"}};
  EXPECT_EQ(alias_from_placements(placements_from_alias(alias, mesh), mesh, 2),
            (AliasSpec{{}, {"tp"}}));
}

TEST(PlacementAliasTest, ToStringPrintsPythonTuples) {
  const std::vector<std::pair<AliasSpec, std::string>> cases = {
      {{{"dp"}, {"None"}}, "('dp', None)"},
      {{{"dp", "tp"}, {}}, "(('dp', 'tp'), None)"},
      {{{"tp"}}, "('tp',)"},
      {{{}}, "(None,)"},
      {{}, "()"},
      {{{}, {"dp"}, {"tp"}}, "(None, 'dp', 'tp')"},
  };
  for (const auto& [alias, text] : cases) {
    SCOPED_TRACE(text);
    EXPECT_EQ(to_string(alias), text);
  }
}

TEST(PlacementAliasTest, ErrorsNameTheAliasTheMeshAndTheFix) {
  const MeshShape mesh = MeshShape::create({2, 2}, {"dp", "tp"});
  EXPECT_THAT(
      error_of<LayoutError>([] { placements_from_alias({{"dp"}}, MeshShape::create({2})); }),
      AllOf(HasSubstr("placements_from_alias"), HasSubstr("Mesh(2) has no dim names"),
            HasSubstr("dim_names")));
  EXPECT_THAT(error_of<LayoutError>([&] { placements_from_alias({{"cp"}}, mesh); }),
              AllOf(HasSubstr("'cp'"), HasSubstr("known names: [dp, tp]")));
  EXPECT_THAT(error_of<LayoutError>([&] { placements_from_alias({{"dp"}, {"dp"}}, mesh); }),
              AllOf(HasSubstr("'dp'"), HasSubstr("used twice"), HasSubstr("('dp', 'dp')"),
                    HasSubstr("tensor dims 0 and 1")));
  EXPECT_THAT(error_of<LayoutError>([&] { placements_from_alias({{"tp", "tp"}}, mesh); }),
              HasSubstr("used twice"));
  EXPECT_THAT(error_of<LayoutError>([&] { placements_from_alias({{"dp", "None"}}, mesh); }),
              AllOf(HasSubstr("mixes None"), HasSubstr("tensor dim 0")));
  EXPECT_THAT(error_of<LayoutError>([&] { placements_from_alias({{}, {"tp", "dp"}}, mesh); }),
              AllOf(HasSubstr("tensor dim 1"), HasSubstr("(None, ('tp', 'dp'))"),
                    HasSubstr("out of Mesh(dp=2, tp=2) order"),
                    HasSubstr("'dp' comes after 'tp'"), HasSubstr("Note [Alias nesting order]")));
}

TEST(PlacementAliasTest, PartialAndUnnamedMeshHaveNoAliasForm) {
  const MeshShape mesh = MeshShape::create({2, 2}, {"dp", "tp"});
  EXPECT_THAT(error_of<LayoutError>([&] { alias_from_placements({Shard(0), Partial()}, mesh, 1); }),
              AllOf(HasSubstr("alias_from_placements"), HasSubstr("P(sum) on mesh dim 'tp'"),
                    HasSubstr("[S(0), P(sum)]"), HasSubstr("redistribute")));
  EXPECT_THAT(error_of<LayoutError>([] {
                alias_from_placements({Shard(0)}, MeshShape::create({2}), 1);
              }),
              HasSubstr("no dim names"));
  EXPECT_THAT(
      error_of<LayoutError>([&] { alias_from_placements({Shard(3), Replicate()}, mesh, 2); }),
      HasSubstr("validate_placements"));
}

}  // namespace
}  // namespace dtensor
