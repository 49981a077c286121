// Tests for Placement and ReduceOp: predicates, normalization, the text form and
// its parser (round trips, long forms, error positions), validation, hashing.
#include "layout/placement.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>
#include <unordered_set>

#include "layout/reduce_op.h"
#include "layout/layout_error.h"
#include "testing/error_of.h"

namespace dtensor {
namespace {

using testing::error_of;

using ::testing::AllOf;
using ::testing::HasSubstr;

const std::vector<ReduceOp> kAllOps = {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax,
                                       ReduceOp::kMin, ReduceOp::kProduct};

// Every kind of placement, with shard dims in [-3, 3].
Placements every_placement() {
  Placements all = {Replicate()};
  for (int64_t dim = -3; dim <= 3; ++dim) all.push_back(Shard(dim));
  for (ReduceOp op : kAllOps) all.push_back(Partial(op));
  return all;
}

TEST(ReduceOpTest, NamesRoundTripAndParseIgnoresCase) {
  const std::vector<std::pair<ReduceOp, std::string>> names = {
      {ReduceOp::kSum, "sum"}, {ReduceOp::kAvg, "avg"}, {ReduceOp::kMax, "max"},
      {ReduceOp::kMin, "min"}, {ReduceOp::kProduct, "product"}};
  for (const auto& [op, name] : names) {
    SCOPED_TRACE(name);
    EXPECT_EQ(reduce_op_name(op), name);
    EXPECT_EQ(parse_reduce_op(name), op);
  }
  EXPECT_EQ(parse_reduce_op("SUM"), ReduceOp::kSum);
  EXPECT_EQ(parse_reduce_op("Product"), ReduceOp::kProduct);
  EXPECT_EQ(parse_reduce_op("prod"), std::nullopt);
  EXPECT_EQ(parse_reduce_op(""), std::nullopt);
  EXPECT_EQ(parse_reduce_op("sums"), std::nullopt);
}

TEST(PlacementTest, FactoriesSetKindAndPredicates) {
  const Placement shard = Shard(1);
  EXPECT_TRUE(shard.is_shard());
  EXPECT_TRUE(shard.is_shard(1));
  EXPECT_FALSE(shard.is_shard(0));
  EXPECT_FALSE(shard.is_replicate());
  EXPECT_FALSE(shard.is_partial());
  EXPECT_EQ(shard.shard_dim(), 1);
  EXPECT_EQ(shard.kind(), Placement::Kind::kShard);

  EXPECT_TRUE(Replicate().is_replicate());
  EXPECT_FALSE(Replicate().is_shard(0));
  EXPECT_EQ(Placement(), Replicate());

  const Placement partial = Partial(ReduceOp::kMax);
  EXPECT_TRUE(partial.is_partial());
  EXPECT_EQ(partial.reduce_op(), ReduceOp::kMax);
  EXPECT_EQ(Partial().reduce_op(), ReduceOp::kSum);
}

TEST(PlacementTest, AccessorsOfTheWrongKindThrowWithAdvice) {
  EXPECT_THAT(error_of<LayoutError>([] { Replicate().shard_dim(); }),
              AllOf(HasSubstr("shard_dim"), HasSubstr("called on R"), HasSubstr("splits_dim()")));
  EXPECT_THAT(error_of<LayoutError>([] { Shard(0).reduce_op(); }),
              AllOf(HasSubstr("reduce_op"), HasSubstr("called on S(0)"),
                    HasSubstr("is_partial()")));
}

TEST(PlacementTest, NormalizedMapsNegativeShardDims) {
  struct Case {
    Placement input;
    int64_t ndim;
    Placement expected;
  };
  const std::vector<Case> cases = {
      {Shard(-1), 2, Shard(1)}, {Shard(-2), 2, Shard(0)}, {Shard(0), 1, Shard(0)},
      {Shard(2), 3, Shard(2)},  {Replicate(), 0, Replicate()},
      {Partial(ReduceOp::kMin), 0, Partial(ReduceOp::kMin)},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.input.to_string() + " ndim " + std::to_string(c.ndim));
    EXPECT_EQ(c.input.normalized(c.ndim), c.expected);
  }
}

TEST(PlacementTest, NormalizedRejectsOutOfRangeDimNamingDimAndRank) {
  EXPECT_THAT(error_of<LayoutError>([] { Shard(2).normalized(2); }),
              AllOf(HasSubstr("S(2)"), HasSubstr("tensor dim 2"), HasSubstr("has 2 dims"),
                    HasSubstr("[-2, 1]")));
  EXPECT_THAT(error_of<LayoutError>([] { Shard(-3).normalized(2); }), HasSubstr("tensor dim -3"));
  EXPECT_THAT(error_of<LayoutError>([] { Shard(0).normalized(0); }), HasSubstr("has 0 dims"));
}

TEST(PlacementTest, ToStringUsesShortForms) {
  const std::vector<std::pair<Placement, std::string>> cases = {
      {Shard(0), "S(0)"},
      {Shard(-1), "S(-1)"},
      {Replicate(), "R"},
      {Partial(), "P(sum)"},
      {Partial(ReduceOp::kAvg), "P(avg)"},
      {Partial(ReduceOp::kMax), "P(max)"},
      {Partial(ReduceOp::kMin), "P(min)"},
      {Partial(ReduceOp::kProduct), "P(product)"},
  };
  for (const auto& [placement, text] : cases) {
    SCOPED_TRACE(text);
    EXPECT_EQ(placement.to_string(), text);
    std::ostringstream out;
    out << placement;
    EXPECT_EQ(out.str(), text);
  }
  EXPECT_EQ(to_string(Placements{Shard(0), Replicate()}), "[S(0), R]");
  EXPECT_EQ(to_string(Placements{}), "[]");
}

TEST(PlacementTest, ToStringParsesBackForEveryPlacement) {
  for (const Placement& p : every_placement()) {
    SCOPED_TRACE(p.to_string());
    EXPECT_EQ(parse_placement(p.to_string()), p);
  }
}

TEST(PlacementTest, PlacementListsRoundTripThroughText) {
  const Placements all = every_placement();
  for (size_t i = 0; i < all.size(); ++i) {
    for (size_t j = 0; j < all.size(); ++j) {
      const Placements list = {all[i], all[j], all[(i + j) % all.size()]};
      SCOPED_TRACE(to_string(list));
      EXPECT_EQ(parse_placements(to_string(list)), list);
    }
  }
  EXPECT_EQ(parse_placements(to_string(Placements{})), Placements{});
}

TEST(PlacementTest, ParseAcceptsLongFormsWhitespaceAndBrackets) {
  const std::vector<std::pair<std::string, Placements>> cases = {
      {"S(0),R", {Shard(0), Replicate()}},
      {"  S( 0 ) ,  R  ", {Shard(0), Replicate()}},
      {"[S(0), R]", {Shard(0), Replicate()}},
      {" [ S(1) ] ", {Shard(1)}},
      {"Shard(0), Replicate(), Partial(sum)", {Shard(0), Replicate(), Partial()}},
      {"Shard(dim=-1)", {Shard(-1)}},
      {"Shard(+2)", {Shard(2)}},
      {"P", {Partial()}},
      {"P()", {Partial()}},
      {"Partial", {Partial()}},
      {"Replicate", {Replicate()}},
      {"Partial(reduce_op=max)", {Partial(ReduceOp::kMax)}},
      {"P(AVG)", {Partial(ReduceOp::kAvg)}},
      {"P(product),P(min)", {Partial(ReduceOp::kProduct), Partial(ReduceOp::kMin)}},
      {"", {}},
      {"[]", {}},
      {" [ ] ", {}},
  };
  for (const auto& [text, expected] : cases) {
    SCOPED_TRACE("\"" + text + "\"");
    EXPECT_EQ(parse_placements(text), expected);
  }
}

TEST(PlacementTest, ParseErrorsShowTextPositionAndGrammar) {
  struct Case {
    std::string text;
    std::vector<std::string> expected_parts;
  };
  const std::vector<Case> cases = {
      {"S(0,R", {"expected ')' after the shard dim", "at position 3"}},
      {"X", {"unknown placement 'X'", "at position 0"}},
      {"S(0), Q(1)", {"unknown placement 'Q'", "at position 6"}},
      {"S()", {"expected an integer tensor dim", "at position 2"}},
      {"S(x)", {"expected an integer", "at position 2"}},
      {"P(mean)", {"unknown reduce op 'mean'", "at position 2"}},
      {"S(0) R", {"expected ',' or the end of the text", "at position 5"}},
      {"[S(0), R", {"expected ',' or ']'", "at position 8"}},
      {"[S(0)] x", {"unexpected text after ']'", "at position 7"}},
      {"S(0),", {"expected a placement", "at position 5"}},
      {"R()x", {"expected ',' or the end", "at position 3"}},
      {"S(99999999999)", {"tensor dim is too large"}},
      {"Replicate(0)", {"expected ')' after Replicate(", "at position 10"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE("\"" + c.text + "\"");
    const std::string message = error_of<LayoutError>([&] { parse_placements(c.text); });
    EXPECT_THAT(message, HasSubstr("parse_placements: "));
    EXPECT_THAT(message, HasSubstr("\"" + c.text + "\""));
    EXPECT_THAT(message, HasSubstr("accepted placements: S(<dim>)"));
    for (const std::string& part : c.expected_parts) EXPECT_THAT(message, HasSubstr(part));
  }
}

TEST(PlacementTest, ParseErrorPointsACaretAtThePosition) {
  const std::string message = error_of<LayoutError>([] { parse_placements("S(0), Q"); });
  EXPECT_THAT(message, HasSubstr("\n  S(0), Q\n        ^\n"));
}

TEST(PlacementTest, ParsePlacementRejectsLists) {
  EXPECT_EQ(parse_placement(" Shard( 3 ) "), Shard(3));
  EXPECT_THAT(error_of<LayoutError>([] { parse_placement("S(0), R"); }),
              AllOf(HasSubstr("parse_placement: "), HasSubstr("use parse_placements")));
  EXPECT_THAT(
      error_of<LayoutError>([] { parse_placement(""); }),
      HasSubstr("expected a placement"));
}

TEST(PlacementTest, ValidatePlacementsNormalizesShardDims) {
  const MeshShape mesh = MeshShape::create({2, 2, 2});
  EXPECT_EQ(validate_placements({Shard(-1), Replicate(), Shard(-2)}, mesh, 3),
            (Placements{Shard(2), Replicate(), Shard(1)}));
  EXPECT_EQ(validate_placements({Partial(), Replicate(), Partial(ReduceOp::kAvg)}, mesh, 0),
            (Placements{Partial(), Replicate(), Partial(ReduceOp::kAvg)}));
}

TEST(PlacementTest, ValidatePlacementsRejectsWrongCountAndBadDims) {
  const MeshShape mesh = MeshShape::create({2, 2}, {"dp", "tp"});
  EXPECT_THAT(error_of<LayoutError>([&] { validate_placements({Shard(0)}, mesh, 2); }),
              AllOf(HasSubstr("validate_placements"), HasSubstr("1 placements [S(0)]"),
                    HasSubstr("Mesh(dp=2, tp=2) with 2 dims"),
                    HasSubstr("one placement per mesh dim")));
  EXPECT_THAT(error_of<LayoutError>([&] { validate_placements({Replicate(), Shard(2)}, mesh, 2); }),
              AllOf(HasSubstr("S(2) on mesh dim 1"), HasSubstr("[R, S(2)]"),
                    HasSubstr("tensor has 2 dims"), HasSubstr("[-2, 1]")));
  EXPECT_THAT(
      error_of<LayoutError>([&] { validate_placements({Shard(-2), Replicate()}, mesh, 1); }),
      HasSubstr("tensor dim -2"));
}

TEST(PlacementTest, EqualPlacementsHashEqualAndDistinctOnesDiffer) {
  const Placements all = every_placement();
  std::unordered_set<Placement> set(all.begin(), all.end());
  EXPECT_EQ(set.size(), all.size());
  for (const Placement& p : all) {
    SCOPED_TRACE(p.to_string());
    EXPECT_EQ(std::hash<Placement>{}(p), std::hash<Placement>{}(parse_placement(p.to_string())));
    for (const Placement& q : all) EXPECT_EQ(p == q, p.to_string() == q.to_string());
  }
  EXPECT_NE(Shard(0), Shard(1));
  EXPECT_NE(Partial(ReduceOp::kSum), Partial(ReduceOp::kAvg));
  EXPECT_NE(Shard(0), Replicate());
  const PlacementsHash hash;
  EXPECT_EQ(hash({Shard(0), Replicate()}), hash(parse_placements("S(0),R")));
  EXPECT_NE(hash({Shard(0), Replicate()}), hash({Replicate(), Shard(0)}));
}

}  // namespace
}  // namespace dtensor
