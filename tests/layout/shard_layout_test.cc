// Tests for torch.chunk spans, per-rank local shape/offset (known PyTorch cases,
// nested and uneven sharding), the global-shape inverse, and property loops
// over random meshes, shapes and placements (seed printed on failure).
#include "layout/shard_layout.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>
#include <random>

#include "layout/layout_error.h"
#include "testing/error_of.h"

namespace dtensor {
namespace {

using testing::error_of;

using ::testing::AllOf;
using ::testing::HasSubstr;

TEST(ShardLayoutTest, UnevenChunksLeaveTrailingShardsEmpty) {
  struct Case {
    int64_t dim_size;
    int64_t num_chunks;
    std::vector<ChunkSpan> expected;
  };
  const std::vector<Case> cases = {
      {13, 4, {{0, 4}, {4, 4}, {8, 4}, {12, 1}}},
      {5, 4, {{0, 2}, {2, 2}, {4, 1}, {5, 0}}},
      {6, 4, {{0, 2}, {2, 2}, {4, 2}, {6, 0}}},
      {0, 3, {{0, 0}, {0, 0}, {0, 0}}},
      {8, 4, {{0, 2}, {2, 2}, {4, 2}, {6, 2}}},
      {1, 3, {{0, 1}, {1, 0}, {1, 0}}},
      {7, 1, {{0, 7}}},
      {10, 4, {{0, 3}, {3, 3}, {6, 3}, {9, 1}}},
  };
  for (const Case& c : cases) {
    for (int64_t i = 0; i < c.num_chunks; ++i) {
      SCOPED_TRACE(std::to_string(c.dim_size) + " on " + std::to_string(c.num_chunks) +
                   " chunk " + std::to_string(i));
      const ChunkSpan span = chunk_span(c.dim_size, c.num_chunks, i);
      EXPECT_EQ(span.offset, c.expected[static_cast<size_t>(i)].offset);
      EXPECT_EQ(span.size, c.expected[static_cast<size_t>(i)].size);
    }
  }
}

TEST(ShardLayoutTest, ChunkSpanRejectsBadArguments) {
  EXPECT_THAT(error_of<LayoutError>([] { chunk_span(-1, 2, 0); }), HasSubstr("dim size -1"));
  EXPECT_THAT(error_of<LayoutError>([] { chunk_span(4, 0, 0); }), HasSubstr("into 0 chunks"));
  EXPECT_THAT(error_of<LayoutError>([] { chunk_span(4, 2, 2); }),
              AllOf(HasSubstr("chunk index 2"), HasSubstr("[0, 1]")));
  const int64_t huge = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(chunk_span(huge, 2, 1).offset + chunk_span(huge, 2, 1).size, huge);
}

TEST(ShardLayoutTest, KnownLayoutsMatchPyTorch) {
  struct Case {
    std::vector<int64_t> global_shape;
    std::vector<int64_t> mesh_shape;
    Placements placements;
    int64_t rank;
    ShardLayout expected;
  };
  const std::vector<Case> cases = {
      {{8, 4}, {2}, {Shard(0)}, 1, {{4, 4}, {4, 0}}},
      {{8, 4}, {2}, {Shard(-1)}, 1, {{8, 2}, {0, 2}}},
      {{8, 4}, {2, 2}, {Shard(0), Shard(1)}, 3, {{4, 2}, {4, 2}}},
      {{8, 4}, {2, 2}, {Replicate(), Shard(0)}, 2, {{4, 4}, {0, 0}}},
      {{8, 4}, {2, 2}, {Partial(), Shard(0)}, 3, {{4, 4}, {4, 0}}},
      // Nested: rank (i, j) holds rows [4i + 2j, 4i + 2j + 2).
      {{8}, {2, 2}, {Shard(0), Shard(0)}, 0, {{2}, {0}}},
      {{8}, {2, 2}, {Shard(0), Shard(0)}, 1, {{2}, {2}}},
      {{8}, {2, 2}, {Shard(0), Shard(0)}, 2, {{2}, {4}}},
      {{8}, {2, 2}, {Shard(0), Shard(0)}, 3, {{2}, {6}}},
      // Nested uneven: 5 -> (3, 2) -> (2, 1), (1, 1).
      {{5}, {2, 2}, {Shard(0), Shard(0)}, 0, {{2}, {0}}},
      {{5}, {2, 2}, {Shard(0), Shard(0)}, 1, {{1}, {2}}},
      {{5}, {2, 2}, {Shard(0), Shard(0)}, 2, {{1}, {3}}},
      {{5}, {2, 2}, {Shard(0), Shard(0)}, 3, {{1}, {4}}},
      // Uneven with empty trailing shards.
      {{6, 2}, {4}, {Shard(0)}, 3, {{0, 2}, {6, 0}}},
      {{1}, {2, 3}, {Shard(0), Shard(0)}, 1, {{0}, {1}}},
      {{13, 3}, {4, 1}, {Shard(0), Shard(1)}, 3, {{1, 3}, {12, 0}}},
      {{}, {2}, {Partial(ReduceOp::kMax)}, 1, {{}, {}}},
  };
  for (const Case& c : cases) {
    const MeshShape mesh = MeshShape::create(c.mesh_shape);
    SCOPED_TRACE(::testing::PrintToString(c.global_shape) + " " + mesh.to_string() + " " +
                 to_string(c.placements) + " rank " + std::to_string(c.rank));
    const ShardLayout layout = local_shape_and_offset(c.global_shape, mesh, c.placements, c.rank);
    EXPECT_EQ(layout.local_shape, c.expected.local_shape);
    EXPECT_EQ(layout.global_offset, c.expected.global_offset);
    EXPECT_EQ(local_shape_and_offset(c.global_shape, mesh, c.placements,
                                     mesh.coordinate_of(c.rank)),
              layout);
  }
}

TEST(ShardLayoutTest, LocalShapeAndOffsetRejectsBadInputs) {
  const MeshShape mesh = MeshShape::create({2, 2});
  EXPECT_THAT(
      error_of<LayoutError>(
          [&] { local_shape_and_offset({4, -1}, mesh, {Shard(0), Replicate()}, 0); }),
      AllOf(HasSubstr("local_shape_and_offset"), HasSubstr("[4, -1]"),
            HasSubstr("tensor dim 1")));
  EXPECT_THAT(error_of<LayoutError>([&] { local_shape_and_offset({4}, mesh, {Shard(0)}, 0); }),
              HasSubstr("one placement per mesh dim"));
  EXPECT_THAT(
      error_of<LayoutError>([&] { local_shape_and_offset({4}, mesh, {Shard(1), Replicate()}, 0); }),
      HasSubstr("tensor has 1 dims"));
  EXPECT_THAT(
      error_of<LayoutError>([&] { local_shape_and_offset({4}, mesh, {Shard(0), Replicate()}, 4); }),
      HasSubstr("rank 4"));
  EXPECT_THAT(error_of<LayoutError>([&] {
                local_shape_and_offset({4}, mesh, {Shard(0), Replicate()},
                                       std::vector<int64_t>{0, 2});
              }),
              HasSubstr("coordinate [0, 2]"));
}

TEST(ShardLayoutTest, GlobalShapeFromLocalInvertsUnevenShards) {
  const MeshShape mesh4 = MeshShape::create({4});
  EXPECT_EQ(global_shape_from_local({{4, 2}, {4, 2}, {4, 2}, {1, 2}}, mesh4, {Shard(0)}),
            (std::vector<int64_t>{13, 2}));
  EXPECT_EQ(global_shape_from_local({{3}, {3}, {3}, {3}}, mesh4, {Replicate()}),
            (std::vector<int64_t>{3}));
  const MeshShape mesh22 = MeshShape::create({2, 2});
  EXPECT_EQ(global_shape_from_local({{2}, {1}, {1}, {1}}, mesh22, {Shard(0), Shard(0)}),
            (std::vector<int64_t>{5}));
  EXPECT_EQ(global_shape_from_local({{3, 1}, {3, 1}, {2, 1}, {2, 1}}, mesh22,
                                    {Shard(0), Shard(-1)}),
            (std::vector<int64_t>{5, 2}));
}

TEST(ShardLayoutTest, GlobalShapeFromLocalNamesInconsistentRanks) {
  const MeshShape mesh = MeshShape::create({2, 2});
  // Rank 1 holds 3 rows but rank 0 holds 2: torch.chunk of 5 rows gives 3 then 2.
  EXPECT_THAT(error_of<LayoutError>([&] {
                global_shape_from_local({{2}, {3}}, MeshShape::create({2}), {Shard(0)});
              }),
              AllOf(HasSubstr("global_shape_from_local"), HasSubstr("rank 0"),
                    HasSubstr("local shape [2]"), HasSubstr("global shape [5]"),
                    HasSubstr("on rank 0 is [3]"), HasSubstr("[S(0)]"), HasSubstr("Mesh(2)"),
                    HasSubstr("local shapes by rank: [[2], [3]]")));
  // Replicas must agree: ranks 2 and 3 differ only along the Replicate mesh dim.
  EXPECT_THAT(error_of<LayoutError>([&] {
                global_shape_from_local({{4}, {4}, {2}, {4}}, mesh, {Shard(0), Replicate()});
              }),
              AllOf(HasSubstr("rank 3 (coordinate [1, 1]) has size 4 along tensor dim 0"),
                    HasSubstr("rank 2 (coordinate [1, 0]) has 2"),
                    HasSubstr("same part of tensor dim 0")));
  EXPECT_THAT(
      error_of<LayoutError>([&] { global_shape_from_local({{4}, {4}, {4}}, mesh, {Replicate(), Replicate()}); }),
      AllOf(HasSubstr("got 3 local shapes"), HasSubstr("4 ranks")));
  EXPECT_THAT(error_of<LayoutError>([&] {
                global_shape_from_local({{4}, {4}, {4, 1}, {4}}, mesh, {Replicate(), Replicate()});
              }),
              AllOf(HasSubstr("rank 2 has a 2-D local shape [4, 1]"), HasSubstr("rank 0")));
  EXPECT_THAT(error_of<LayoutError>([&] {
                global_shape_from_local({{4}, {4}, {-4}, {4}}, mesh, {Replicate(), Replicate()});
              }),
              HasSubstr("negative size -4"));
}

TEST(ShardLayoutTest, EvenLocalShapeMultipliesByShardingMeshSizes) {
  const MeshShape mesh = MeshShape::create({2, 3});
  EXPECT_EQ(global_shape_from_even_local({2, 3}, mesh, {Shard(0), Shard(0)}),
            (std::vector<int64_t>{12, 3}));
  EXPECT_EQ(global_shape_from_even_local({2, 3}, mesh, {Shard(1), Partial()}),
            (std::vector<int64_t>{2, 6}));
  EXPECT_EQ(global_shape_from_even_local({2, 3}, mesh, {Replicate(), Shard(-1)}),
            (std::vector<int64_t>{2, 9}));
  EXPECT_THAT(
      error_of<LayoutError>(
          [&] { global_shape_from_even_local({2}, mesh, {Shard(1), Replicate()}); }),
      HasSubstr("validate_placements"));
}

TEST(ShardLayoutTest, EvenShardingNeedsDivisibilityByNestedMeshSizes) {
  struct Case {
    std::vector<int64_t> global_shape;
    std::vector<int64_t> mesh_shape;
    Placements placements;
    bool expected;
  };
  const std::vector<Case> cases = {
      {{16}, {4}, {Shard(0)}, true},
      {{13}, {4}, {Shard(0)}, false},
      {{0}, {4}, {Shard(0)}, true},
      {{8, 3}, {2, 2}, {Shard(0), Shard(0)}, true},
      {{6, 3}, {2, 2}, {Shard(0), Shard(0)}, false},
      {{6, 3}, {2, 2}, {Shard(0), Shard(1)}, false},
      {{6, 4}, {2, 2}, {Shard(0), Shard(1)}, true},
      {{5, 5}, {2, 2}, {Replicate(), Partial()}, true},
  };
  for (const Case& c : cases) {
    const MeshShape mesh = MeshShape::create(c.mesh_shape);
    SCOPED_TRACE(::testing::PrintToString(c.global_shape) + " " + to_string(c.placements));
    EXPECT_EQ(is_evenly_sharded(c.global_shape, mesh, c.placements), c.expected);
  }
}

TEST(ShardLayoutTest, NumelAndBytesCountLocalElements) {
  const MeshShape mesh = MeshShape::create({4});
  EXPECT_EQ(shape_numel({}), 1);
  EXPECT_EQ(shape_numel({3, 0, 2}), 0);
  EXPECT_EQ(local_numel({13, 2}, mesh, {Shard(0)}, 0), 8);
  EXPECT_EQ(local_numel({13, 2}, mesh, {Shard(0)}, 3), 2);
  EXPECT_EQ(local_bytes({13, 2}, mesh, {Shard(0)}, 0, /*element_size=*/4), 32);
  EXPECT_THAT(error_of<LayoutError>([&] { local_bytes({13}, mesh, {Shard(0)}, 0, 0); }),
              HasSubstr("element size 0"));
  EXPECT_THAT(error_of<LayoutError>([] { shape_numel({int64_t{1} << 40, int64_t{1} << 40}); }),
              HasSubstr("overflows int64"));
  EXPECT_THAT(error_of<LayoutError>([] { shape_numel({2, -1}); }), HasSubstr("negative size -1"));
}

// ---- Property tests over random layouts ----

struct RandomLayout {
  MeshShape mesh;
  std::vector<int64_t> global_shape;
  Placements placements;

  std::string describe() const {
    return mesh.to_string() + " shape " + ::testing::PrintToString(global_shape) + " " +
           to_string(placements);
  }
};

// A 1-D to 3-D mesh (sizes 1-4), a rank 1-3 tensor (sizes 0-9, often smaller
// than the mesh dims) and placements mixing Shard (possibly of the same tensor
// dim on several mesh dims, possibly with a negative dim), Replicate, Partial.
RandomLayout random_layout(std::mt19937& rng) {
  auto uniform = [&rng](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  std::vector<int64_t> mesh_shape(static_cast<size_t>(uniform(1, 3)));
  for (int64_t& size : mesh_shape) size = uniform(1, 4);
  std::vector<int64_t> global_shape(static_cast<size_t>(uniform(1, 3)));
  for (int64_t& size : global_shape) size = uniform(0, 1) == 0 ? uniform(0, 3) : uniform(0, 9);
  const int64_t ndim = static_cast<int64_t>(global_shape.size());
  Placements placements;
  for (size_t i = 0; i < mesh_shape.size(); ++i) {
    const int64_t kind = uniform(0, 5);
    if (kind <= 2) {
      const int64_t dim = uniform(0, ndim - 1);
      placements.push_back(Shard(uniform(0, 1) == 0 ? dim : dim - ndim));
    } else if (kind == 3) {
      placements.push_back(Replicate());
    } else {
      placements.push_back(Partial(static_cast<ReduceOp>(uniform(0, 4))));
    }
  }
  return {MeshShape::create(mesh_shape), global_shape, placements};
}

// Product of the sizes of the mesh dims that do not shard: how many ranks hold
// each element.
int64_t replication_factor(const RandomLayout& layout) {
  int64_t factor = 1;
  for (int i = 0; i < layout.mesh.ndim(); ++i) {
    if (!layout.placements[static_cast<size_t>(i)].is_shard()) factor *= layout.mesh.size(i);
  }
  return factor;
}

// Adds 1 to `counts` (row-major over global_shape) for every element of the box.
void count_box(const std::vector<int64_t>& global_shape, const ShardLayout& box,
               std::vector<int64_t>& counts) {
  if (shape_numel(box.local_shape) == 0) return;
  std::vector<int64_t> index(global_shape.size(), 0);  // position inside the box
  while (true) {
    int64_t linear = 0;
    for (size_t d = 0; d < global_shape.size(); ++d) {
      linear = linear * global_shape[d] + box.global_offset[d] + index[d];
    }
    ++counts[static_cast<size_t>(linear)];
    size_t d = global_shape.size();
    while (d > 0 && ++index[d - 1] == box.local_shape[d - 1]) index[--d] = 0;
    if (d == 0) return;
  }
}

constexpr uint32_t kBaseSeed = 20240601;
constexpr int kIterations = 2000;

TEST(ShardLayoutPropertyTest, BlocksTileTheTensorOncePerReplicaAndStayInBounds) {
  for (int iteration = 0; iteration < kIterations; ++iteration) {
    const uint32_t seed = kBaseSeed + static_cast<uint32_t>(iteration);
    std::mt19937 rng(seed);
    const RandomLayout layout = random_layout(rng);
    SCOPED_TRACE("seed " + std::to_string(seed) + ": " + layout.describe());
    std::vector<int64_t> counts(static_cast<size_t>(shape_numel(layout.global_shape)), 0);
    for (int64_t rank = 0; rank < layout.mesh.num_ranks(); ++rank) {
      const ShardLayout box =
          local_shape_and_offset(layout.global_shape, layout.mesh, layout.placements, rank);
      for (size_t d = 0; d < layout.global_shape.size(); ++d) {
        ASSERT_GE(box.local_shape[d], 0) << "rank " << rank << " dim " << d;
        ASSERT_GE(box.global_offset[d], 0) << "rank " << rank << " dim " << d;
        ASSERT_LE(box.global_offset[d] + box.local_shape[d], layout.global_shape[d])
            << "rank " << rank << " dim " << d;
      }
      count_box(layout.global_shape, box, counts);
    }
    const int64_t expected = replication_factor(layout);
    for (size_t element = 0; element < counts.size(); ++element) {
      ASSERT_EQ(counts[element], expected) << "element " << element;
    }
  }
}

TEST(ShardLayoutPropertyTest, GlobalShapeFromLocalInvertsEveryLayout) {
  for (int iteration = 0; iteration < kIterations; ++iteration) {
    const uint32_t seed = kBaseSeed + static_cast<uint32_t>(iteration);
    std::mt19937 rng(seed);
    const RandomLayout layout = random_layout(rng);
    SCOPED_TRACE("seed " + std::to_string(seed) + ": " + layout.describe());
    std::vector<std::vector<int64_t>> local_shapes;
    for (int64_t rank = 0; rank < layout.mesh.num_ranks(); ++rank) {
      local_shapes.push_back(
          local_shape_and_offset(layout.global_shape, layout.mesh, layout.placements, rank)
              .local_shape);
    }
    EXPECT_EQ(global_shape_from_local(local_shapes, layout.mesh, layout.placements),
              layout.global_shape);
  }
}

TEST(ShardLayoutPropertyTest, EvenShardingMeansEqualShardsAndEvenInverse) {
  for (int iteration = 0; iteration < kIterations; ++iteration) {
    const uint32_t seed = kBaseSeed + static_cast<uint32_t>(iteration);
    std::mt19937 rng(seed);
    const RandomLayout layout = random_layout(rng);
    SCOPED_TRACE("seed " + std::to_string(seed) + ": " + layout.describe());
    const std::vector<int64_t> first =
        local_shape_and_offset(layout.global_shape, layout.mesh, layout.placements, 0).local_shape;
    bool all_equal = true;
    int64_t total_numel = 0;
    for (int64_t rank = 0; rank < layout.mesh.num_ranks(); ++rank) {
      all_equal = all_equal && local_shape_and_offset(layout.global_shape, layout.mesh,
                                                      layout.placements, rank)
                                       .local_shape == first;
      total_numel += local_numel(layout.global_shape, layout.mesh, layout.placements, rank);
    }
    const bool even = is_evenly_sharded(layout.global_shape, layout.mesh, layout.placements);
    EXPECT_EQ(even, all_equal);
    if (even) {
      EXPECT_EQ(global_shape_from_even_local(first, layout.mesh, layout.placements),
                layout.global_shape);
    }
    EXPECT_EQ(total_numel, shape_numel(layout.global_shape) * replication_factor(layout));
  }
}

}  // namespace
}  // namespace dtensor
