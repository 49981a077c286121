// Tests for visualize_sharding: exact snapshots of a few layouts, then
// structural checks (aligned grid, every rank listed once, row count) over
// random 1-D/2-D layouts, and the error for other tensor ranks.
#include "layout/visualize_sharding.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <sstream>

#include "layout/layout_error.h"
#include "layout/shard_layout.h"
#include "testing/error_of.h"

namespace dtensor {
namespace {

using testing::error_of;

using ::testing::AllOf;
using ::testing::HasSubstr;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Splits "| a | b |" into {"a", "b"} (cells trimmed).
std::vector<std::string> cells_of(const std::string& line) {
  std::vector<std::string> cells;
  size_t start = 1;
  for (size_t bar = line.find('|', start); bar != std::string::npos;
       start = bar + 1, bar = line.find('|', start)) {
    std::string cell = line.substr(start, bar - start);
    cell.erase(0, cell.find_first_not_of(' '));
    cell.erase(cell.find_last_not_of(' ') + 1);
    cells.push_back(cell);
  }
  return cells;
}

// Expands a Ranks cell such as "0-3, 6, 7" to {0, 1, 2, 3, 6, 7}.
std::vector<int64_t> expand_ranks(const std::string& cell) {
  std::vector<int64_t> ranks;
  std::istringstream in(cell);
  for (std::string part; std::getline(in, part, ',');) {
    const size_t dash = part.find('-');
    const int64_t first = std::stoll(part.substr(0, dash));
    const int64_t last = dash == std::string::npos ? first : std::stoll(part.substr(dash + 1));
    for (int64_t r = first; r <= last; ++r) ranks.push_back(r);
  }
  return ranks;
}

TEST(VisualizeShardingTest, RowShardedMatrixWithHeaderMatchesSnapshot) {
  const MeshShape mesh = MeshShape::create({2, 2}, {"dp", "tp"});
  EXPECT_EQ(visualize_sharding({4, 4}, mesh, {Shard(0), Replicate()}, "weight"),
            "weight\n"
            "+-----------+-----------+-------+\n"
            "| Row range | Col range | Ranks |\n"
            "+===========+===========+=======+\n"
            "| 0-1       | 0-3       | 0, 1  |\n"
            "+-----------+-----------+-------+\n"
            "| 2-3       | 0-3       | 2, 3  |\n"
            "+-----------+-----------+-------+\n");
}

TEST(VisualizeShardingTest, UnevenVectorShowsEmptyShardSnapshot) {
  EXPECT_EQ(visualize_sharding({6}, MeshShape::create({4}), {Shard(0)}),
            "+-----------+-------+\n"
            "| Row range | Ranks |\n"
            "+===========+=======+\n"
            "| 0-1       | 0     |\n"
            "+-----------+-------+\n"
            "| 2-3       | 1     |\n"
            "+-----------+-------+\n"
            "| 4-5       | 2     |\n"
            "+-----------+-------+\n"
            "| (empty)   | 3     |\n"
            "+-----------+-------+\n");
}

TEST(VisualizeShardingTest, PartialPlacementAddsNoteColumnSnapshot) {
  const MeshShape mesh = MeshShape::create({2, 2}, {"dp", "tp"});
  EXPECT_EQ(visualize_sharding({4, 6}, mesh, {Shard(1), Partial()}),
            "+-----------+-----------+-------+-----------------------------------+\n"
            "| Row range | Col range | Ranks | Note                              |\n"
            "+===========+===========+=======+===================================+\n"
            "| 0-3       | 0-2       | 0, 1  | partial(sum) over mesh dim 1 (tp) |\n"
            "+-----------+-----------+-------+-----------------------------------+\n"
            "| 0-3       | 3-5       | 2, 3  | partial(sum) over mesh dim 1 (tp) |\n"
            "+-----------+-----------+-------+-----------------------------------+\n");
}

TEST(VisualizeShardingTest, ReplicatedTensorListsConsecutiveRanksAsRun) {
  const std::string table =
      visualize_sharding({8}, MeshShape::create({2, 4}), {Replicate(), Partial(ReduceOp::kMax)});
  EXPECT_THAT(table, HasSubstr("| 0-7       | 0-7   | partial(max) over mesh dim 1 |"));
}

TEST(VisualizeShardingTest, NestedShardingOrdersRowsByOffset) {
  const std::vector<std::string> lines =
      lines_of(visualize_sharding({5, 3}, MeshShape::create({2, 3}), {Shard(0), Shard(0)}));
  ASSERT_EQ(lines.size(), 15u);
  EXPECT_EQ(cells_of(lines[3]), (std::vector<std::string>{"0-0", "0-2", "0"}));
  EXPECT_EQ(cells_of(lines[9]), (std::vector<std::string>{"3-3", "0-2", "3"}));
  EXPECT_EQ(cells_of(lines[13]), (std::vector<std::string>{"(empty)", "0-2", "5"}));
}

TEST(VisualizeShardingTest, OnlyOneAndTwoDimensionalTensorsAreDrawn) {
  const MeshShape mesh = MeshShape::create({2});
  EXPECT_THAT(error_of<LayoutError>([&] { visualize_sharding({2, 2, 2}, mesh, {Shard(0)}); }),
              AllOf(HasSubstr("visualize_sharding"), HasSubstr("only 1-D and 2-D"),
                    HasSubstr("3-D shape [2, 2, 2]"), HasSubstr("Mesh(2)")));
  EXPECT_THAT(error_of<LayoutError>([&] { visualize_sharding({}, mesh, {Replicate()}); }),
              HasSubstr("0-D shape []"));
  EXPECT_THAT(error_of<LayoutError>([&] { visualize_sharding({4}, mesh, {Shard(1)}); }),
              HasSubstr("validate_placements"));
}

// Structural checks on random 1-D / 2-D layouts: aligned grid, header first,
// one row per distinct block, every rank listed exactly once, deterministic.
TEST(VisualizeShardingPropertyTest, GridIsAlignedAndListsEveryRankOnce) {
  constexpr uint32_t kBaseSeed = 7;
  for (uint32_t seed = kBaseSeed; seed < kBaseSeed + 300; ++seed) {
    std::mt19937 rng(seed);
    auto uniform = [&rng](int64_t lo, int64_t hi) {
      return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
    };
    std::vector<int64_t> mesh_shape(static_cast<size_t>(uniform(1, 3)));
    for (int64_t& size : mesh_shape) size = uniform(1, 4);
    std::vector<int64_t> shape(static_cast<size_t>(uniform(1, 2)));
    for (int64_t& size : shape) size = uniform(0, 9);
    Placements placements;
    for (size_t i = 0; i < mesh_shape.size(); ++i) {
      const int64_t kind = uniform(0, 3);
      placements.push_back(kind <= 1 ? Shard(uniform(0, static_cast<int64_t>(shape.size()) - 1))
                           : kind == 2 ? Replicate()
                                       : Partial(ReduceOp::kAvg));
    }
    const MeshShape mesh = MeshShape::create(mesh_shape);
    SCOPED_TRACE("seed " + std::to_string(seed) + ": " + mesh.to_string() + " " +
                 ::testing::PrintToString(shape) + " " + to_string(placements));

    const std::string table = visualize_sharding(shape, mesh, placements, "hdr");
    EXPECT_EQ(table, visualize_sharding(shape, mesh, placements, "hdr"));
    const std::vector<std::string> lines = lines_of(table);
    ASSERT_GE(lines.size(), 6u);
    EXPECT_EQ(lines[0], "hdr");
    for (size_t i = 2; i < lines.size(); ++i) EXPECT_EQ(lines[i].size(), lines[1].size());

    std::set<std::pair<std::vector<int64_t>, std::vector<int64_t>>> blocks;
    for (int64_t rank = 0; rank < mesh.num_ranks(); ++rank) {
      const ShardLayout layout = local_shape_and_offset(shape, mesh, placements, rank);
      blocks.insert({layout.global_offset, layout.local_shape});
    }
    EXPECT_EQ(lines.size(), 4 + 2 * blocks.size());

    const size_t ranks_column = shape.size();  // after the range columns
    std::vector<int64_t> listed;
    for (size_t i = 4; i < lines.size(); i += 2) {
      for (int64_t r : expand_ranks(cells_of(lines[i])[ranks_column])) listed.push_back(r);
    }
    std::sort(listed.begin(), listed.end());
    std::vector<int64_t> all(static_cast<size_t>(mesh.num_ranks()));
    for (size_t r = 0; r < all.size(); ++r) all[r] = static_cast<int64_t>(r);
    EXPECT_EQ(listed, all);
  }
}

}  // namespace
}  // namespace dtensor
