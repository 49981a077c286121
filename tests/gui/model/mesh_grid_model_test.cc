// Mesh grid model: N-D meshes as grids of rank cells (no window).
#include "gui/model/mesh_grid_model.h"

#include <gtest/gtest.h>

#include <numeric>

namespace dtensor::gui {
namespace {

using Ranks = std::vector<std::vector<int64_t>>;

TEST(MeshGridModelTest, OneAndTwoDimsAreOneGrid) {
  MeshGridView row = mesh_grid_view(MeshShape::create({4}), {});
  ASSERT_EQ(row.grids.size(), 1u);
  EXPECT_EQ(row.rows, 1);
  EXPECT_EQ(row.cols, 4);
  EXPECT_EQ(row.grids[0].ranks, (Ranks{{0, 1, 2, 3}}));
  EXPECT_EQ(row.grids[0].caption, "");
  MeshGridView square = mesh_grid_view(MeshShape::create({2, 3}), {});
  EXPECT_EQ(square.selection.row_dim, 0);
  EXPECT_EQ(square.selection.col_dim, 1);
  EXPECT_EQ(square.grids[0].ranks, (Ranks{{0, 1, 2}, {3, 4, 5}}));
  EXPECT_TRUE(square.fixed_notes.empty());
}

TEST(MeshGridModelTest, ThreeDimsAreSlicesOfDimZero) {
  MeshShape mesh = MeshShape::create({2, 2, 2}, {"pp", "dp", "tp"});
  MeshGridView view = mesh_grid_view(mesh, default_mesh_grid_selection(mesh));
  ASSERT_EQ(view.grids.size(), 2u);
  EXPECT_EQ(view.grids[0].caption, "pp = 0");
  EXPECT_EQ(view.grids[1].caption, "pp = 1");
  EXPECT_EQ(view.grids[0].ranks, (Ranks{{0, 1}, {2, 3}}));
  EXPECT_EQ(view.grids[1].ranks, (Ranks{{4, 5}, {6, 7}}));
  EXPECT_EQ(view.drawn_ranks().size(), 8u);
}

TEST(MeshGridModelTest, PickedDimsRearrangeTheGrids) {
  MeshShape mesh = MeshShape::create({2, 3, 4});
  MeshGridSelection pick;
  pick.row_dim = 2, pick.col_dim = 0, pick.slice_dim = 1;
  MeshGridView view = mesh_grid_view(mesh, pick);
  ASSERT_EQ(view.grids.size(), 3u);
  EXPECT_EQ(view.rows, 4);
  EXPECT_EQ(view.cols, 2);
  EXPECT_EQ(view.grids[1].caption, "dim 1 = 1");
  // grid k = dim1 index k; cell (r, c) = coordinate (c, k, r).
  for (int64_t k = 0; k < 3; ++k)
    for (int64_t r = 0; r < 4; ++r)
      for (int64_t c = 0; c < 2; ++c)
        EXPECT_EQ(view.grids[static_cast<size_t>(k)].ranks[static_cast<size_t>(r)][static_cast<size_t>(c)],
                  mesh.rank_of({c, k, r}));
  std::vector<int64_t> all(24);
  std::iota(all.begin(), all.end(), 0);
  EXPECT_EQ(view.drawn_ranks(), all) << "every rank exactly once";
}

TEST(MeshGridModelTest, FourDimsFixTheRemainingDim) {
  MeshShape mesh = MeshShape::create({3, 2, 2, 2}, {"pp", "dp", "cp", "tp"});
  MeshGridSelection pick = default_mesh_grid_selection(mesh);
  EXPECT_EQ(pick.slice_dim, 1);
  pick.fixed_index[0] = 2;
  MeshGridView view = mesh_grid_view(mesh, pick);
  ASSERT_EQ(view.grids.size(), 2u);
  EXPECT_EQ(view.grids[0].caption, "dp = 0");
  ASSERT_EQ(view.fixed_notes.size(), 1u);
  EXPECT_EQ(view.fixed_notes[0], "pp = 2 of 3");
  EXPECT_EQ(view.grids[0].ranks, (Ranks{{16, 17}, {18, 19}}));
  EXPECT_EQ(view.grids[1].ranks, (Ranks{{20, 21}, {22, 23}}));
  EXPECT_EQ(view.drawn_ranks().size(), 8u);
}

TEST(MeshGridModelTest, InvalidSelectionsFallBackOrClamp) {
  MeshShape mesh = MeshShape::create({2, 2, 2, 2});
  MeshGridSelection twice;
  twice.row_dim = 1, twice.col_dim = 1, twice.slice_dim = 0;
  EXPECT_EQ(sanitize_mesh_grid_selection(twice, mesh).col_dim, 3) << "duplicate dims: default";
  MeshGridSelection far = default_mesh_grid_selection(mesh);
  far.fixed_index = {99, 0, 0, 0};
  EXPECT_EQ(sanitize_mesh_grid_selection(far, mesh).fixed_index[0], 1) << "clamped to size - 1";
  MeshGridSelection stale = default_mesh_grid_selection(mesh);  // from a 4-D mesh
  MeshGridView on_2d = mesh_grid_view(MeshShape::create({2, 2}), stale);
  EXPECT_EQ(on_2d.selection.slice_dim, -1);
  EXPECT_EQ(on_2d.grids.size(), 1u);
  EXPECT_EQ(mesh_dim_label(MeshShape::create({2, 2}, {"dp", "tp"}), 1), "tp (mesh dim 1)");
}

}  // namespace
}  // namespace dtensor::gui
