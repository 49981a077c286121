// Tests of the viewer's layout model and its pixel geometry: blocks, owners,
// replicas, Partial, empty shards, slicing of >2-D tensors, errors.
#include "gui/model/layout_model.h"

#include <gtest/gtest.h>

#include "gui/model/layout_geometry.h"

namespace dtensor::gui {
namespace {

LayoutView layout_of(std::vector<int64_t> shape, const MeshShape& mesh,
                     const std::string& placements, DrawSelection selection = {}) {
  LayoutResult result = compute_layout(
      {std::move(shape), mesh, parse_placements(placements), std::move(selection), 4});
  EXPECT_TRUE(result.error.empty()) << result.error;
  return result.view.value_or(LayoutView{});
}

struct Rect {
  int64_t r0, r1, c0, c1;
};

void expect_rect(const LayoutBlock& b, Rect want) {
  EXPECT_EQ(b.row_begin, want.r0);
  EXPECT_EQ(b.row_end, want.r1);
  EXPECT_EQ(b.col_begin, want.c0);
  EXPECT_EQ(b.col_end, want.c1);
}

TEST(LayoutModelTest, RowAndColumnShardsGiveFourBlocksOnePerRank) {
  LayoutView view = layout_of({8, 6}, MeshShape::create({2, 2}), "S(0), S(1)");
  ASSERT_EQ(view.blocks.size(), 4u);
  EXPECT_EQ(view.rows, 8);
  EXPECT_EQ(view.cols, 6);
  const Rect want[] = {{0, 4, 0, 3}, {0, 4, 3, 6}, {4, 8, 0, 3}, {4, 8, 3, 6}};
  for (int64_t rank = 0; rank < 4; ++rank) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    const LayoutBlock& b = view.blocks[static_cast<size_t>(rank)];
    expect_rect(b, want[rank]);
    EXPECT_EQ(b.ranks, std::vector<int64_t>{rank});
    EXPECT_EQ(b.local_shape, (std::vector<int64_t>{4, 3}));
    EXPECT_EQ(b.bytes, 4 * 3 * 4);
    EXPECT_EQ(view.block_of_rank(rank), rank);
  }
  EXPECT_FALSE(view.partial);
  EXPECT_TRUE(view.empty_blocks.empty());
  EXPECT_TRUE(view.notes.empty());
}

// FSDP + TP: [_S(0, 2), S(0)] gives rank (i, j) rows 4j + 2i (one block
// each); [_S(0, 2), R] gives every rank two separate row blocks.
TEST(LayoutModelTest, StridedShardsDrawEveryBlockOfARank) {
  LayoutView fsdp_tp = layout_of({8, 4}, MeshShape::create({2, 2}), "_S(0, 2), S(0)");
  ASSERT_EQ(fsdp_tp.blocks.size(), 4u);
  for (int64_t rank = 0; rank < 4; ++rank) {
    const int64_t i = rank / 2, j = rank % 2;
    const LayoutBlock& b = fsdp_tp.blocks[static_cast<size_t>(fsdp_tp.block_of_rank(rank))];
    expect_rect(b, {4 * j + 2 * i, 4 * j + 2 * i + 2, 0, 4});
  }
  LayoutView strided = layout_of({8, 4}, MeshShape::create({2, 2}), "_S(0, 2), R");
  ASSERT_EQ(strided.blocks.size(), 4u);
  const std::vector<int> held = strided.blocks_of_rank(2);  // dp 1: rows 2-3 and 6-7
  ASSERT_EQ(held.size(), 2u);
  expect_rect(strided.blocks[static_cast<size_t>(held[0])], {2, 4, 0, 4});
  expect_rect(strided.blocks[static_cast<size_t>(held[1])], {6, 8, 0, 4});
  EXPECT_EQ(strided.blocks[static_cast<size_t>(held[1])].ranks, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(strided.notes, (std::vector<std::string>{"replicated over mesh dim 1"}));
}

TEST(LayoutModelTest, UnevenThirteenOnFourRanksFollowsTorchChunk) {
  LayoutView view = layout_of({13}, MeshShape::create({4}), "S(0)");
  EXPECT_EQ(view.selection.row_dim, -1);
  EXPECT_EQ(view.selection.col_dim, 0);
  ASSERT_EQ(view.blocks.size(), 4u);
  const int64_t begins[] = {0, 4, 8, 12}, ends[] = {4, 8, 12, 13};
  for (size_t i = 0; i < 4; ++i) {
    SCOPED_TRACE(i);
    expect_rect(view.blocks[i], {0, 1, begins[i], ends[i]});
  }
  EXPECT_EQ(view.blocks[3].bytes, 4);
}

TEST(LayoutModelTest, TrailingEmptyShardIsListedNotDrawn) {
  LayoutView view = layout_of({6}, MeshShape::create({4}), "S(0)");
  EXPECT_EQ(view.blocks.size(), 3u);
  ASSERT_EQ(view.empty_blocks.size(), 1u);
  EXPECT_EQ(view.empty_blocks[0].ranks, std::vector<int64_t>{3});
  EXPECT_TRUE(view.rank_is_empty(3));
  EXPECT_EQ(view.block_of_rank(3), -1);
}

TEST(LayoutModelTest, ReplicasShareOneBlock) {
  LayoutView view = layout_of({8, 6}, MeshShape::create({2, 2}, {"dp", "tp"}), "S(0), R");
  ASSERT_EQ(view.blocks.size(), 2u);
  EXPECT_EQ(view.blocks[0].ranks, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(view.blocks[1].ranks, (std::vector<int64_t>{2, 3}));
  expect_rect(view.blocks[1], {4, 8, 0, 6});
  ASSERT_EQ(view.notes.size(), 1u);
  EXPECT_EQ(view.notes[0], "replicated over mesh dim 1 (tp)");
}

TEST(LayoutModelTest, PartialIsFlaggedWithANote) {
  LayoutView view = layout_of({8, 8}, MeshShape::create({2, 2}), "P(sum), S(1)");
  EXPECT_TRUE(view.partial);
  ASSERT_EQ(view.blocks.size(), 2u);
  EXPECT_EQ(view.blocks[0].ranks, (std::vector<int64_t>{0, 2}));
  ASSERT_EQ(view.notes.size(), 1u);
  EXPECT_NE(view.notes[0].find("P(sum) over mesh dim 0"), std::string::npos) << view.notes[0];
}

TEST(LayoutModelTest, NestedShardsOnOneDimAddOffsets) {
  LayoutView view = layout_of({8, 2}, MeshShape::create({2, 2}), "S(0), S(0)");
  ASSERT_EQ(view.blocks.size(), 4u);
  for (int64_t rank = 0; rank < 4; ++rank) {
    int64_t i = rank / 2, j = rank % 2;
    expect_rect(view.blocks[static_cast<size_t>(view.block_of_rank(rank))],
                {4 * i + 2 * j, 4 * i + 2 * j + 2, 0, 2});
  }
}

TEST(LayoutModelTest, ThreeDimTensorDrawsShardedDimsAndSlicesTheRest) {
  MeshShape mesh = MeshShape::create({2, 2});
  LayoutView view = layout_of({4, 8, 16}, mesh, "S(0), S(2)");
  EXPECT_EQ(view.selection.row_dim, 0);
  EXPECT_EQ(view.selection.col_dim, 2);
  EXPECT_EQ(view.blocks.size(), 4u);
  EXPECT_TRUE(view.ranks_outside_slice.empty());

  DrawSelection rows1_cols2{1, 2, {3, 0, 0}};
  LayoutView sliced = layout_of({4, 8, 16}, mesh, "S(0), R", rows1_cols2);
  ASSERT_EQ(sliced.blocks.size(), 1u);
  EXPECT_EQ(sliced.blocks[0].ranks, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(sliced.ranks_outside_slice, (std::vector<int64_t>{0, 1}));
}

TEST(LayoutModelTest, SelectionIsSanitized) {
  Placements p = parse_placements("R");
  DrawSelection bad{5, 5, {99, -3}};
  DrawSelection fixed = sanitize_selection(bad, {4, 8}, p);
  EXPECT_EQ(fixed.row_dim, 0);
  EXPECT_EQ(fixed.col_dim, 1);
  EXPECT_EQ(fixed.slice_index, (std::vector<int64_t>{3, 0}));
  DrawSelection scalar = sanitize_selection(bad, {}, p);
  EXPECT_EQ(scalar.row_dim, -1);
  EXPECT_EQ(scalar.col_dim, -1);
}

TEST(LayoutModelTest, ScalarIsOneCellHeldByAll) {
  LayoutView view = layout_of({}, MeshShape::create({2}), "R");
  ASSERT_EQ(view.blocks.size(), 1u);
  EXPECT_EQ(view.blocks[0].ranks, (std::vector<int64_t>{0, 1}));
  expect_rect(view.blocks[0], {0, 1, 0, 1});
}

TEST(LayoutModelTest, InvalidInputGivesAnErrorNotAnException) {
  LayoutResult bad_dim = compute_layout({{8, 6}, MeshShape::create({2}), {Shard(2)}, {}, 4});
  EXPECT_FALSE(bad_dim.view);
  EXPECT_NE(bad_dim.error.find("S(2)"), std::string::npos) << bad_dim.error;
  LayoutResult bad_count = compute_layout({{8}, MeshShape::create({2, 2}), {Shard(0)}, {}, 4});
  EXPECT_FALSE(bad_count.view);
  EXPECT_FALSE(bad_count.error.empty());
  LayoutResult too_big = compute_layout({{8}, MeshShape::create({2048}), {Replicate()}, {}, 4});
  EXPECT_NE(too_big.error.find("at most"), std::string::npos) << too_big.error;
}

TEST(LayoutGeometryTest, KeepsCellsSquareAndCentres) {
  LayoutView view = layout_of({8, 6}, MeshShape::create({2, 2}), "S(0), S(1)");
  LayoutGeometry g = fit_layout(view, PixelRect{0, 0, 600, 400});
  EXPECT_TRUE(g.to_scale);
  EXPECT_FLOAT_EQ(g.tensor.x0, 150.0f);
  EXPECT_FLOAT_EQ(g.tensor.x1, 450.0f);
  EXPECT_FLOAT_EQ(g.tensor.y1, 400.0f);
  ASSERT_EQ(g.blocks.size(), 4u);
  EXPECT_FLOAT_EQ(g.blocks[1].x0, 300.0f);
  EXPECT_FLOAT_EQ(g.blocks[1].x1, 450.0f);
  EXPECT_FLOAT_EQ(g.blocks[1].y1, 200.0f);
  EXPECT_FLOAT_EQ(g.blocks[3].y0, 200.0f);
}

TEST(LayoutGeometryTest, ClampsSliversAndUnevenWidthsStayProportional) {
  LayoutView view = layout_of({13}, MeshShape::create({4}), "S(0)");
  LayoutGeometry g = fit_layout(view, PixelRect{0, 0, 1300, 1000}, /*max_aspect=*/8.0f);
  EXPECT_FALSE(g.to_scale);
  EXPECT_FLOAT_EQ(g.tensor.width(), 1300.0f);
  EXPECT_FLOAT_EQ(g.tensor.height(), 1300.0f / 8.0f);
  EXPECT_FLOAT_EQ(g.blocks[0].width(), 400.0f);
  EXPECT_FLOAT_EQ(g.blocks[3].width(), 100.0f);
}

}  // namespace
}  // namespace dtensor::gui
