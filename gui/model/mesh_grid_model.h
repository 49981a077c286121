// Mesh grid model: an N-D device mesh (1 to kMaxMeshDims dims) laid out as
// 2-D grids of rank cells for the Mesh panel. Two mesh dims are drawn as rows
// and columns, a third as grids side by side ("slices"), and every other dim
// is fixed at an index the user picks. No ImGui.
//   MeshShape mesh = MeshShape::create({2, 2, 2, 2}, {"pp", "dp", "cp", "tp"});
//   MeshGridView view = mesh_grid_view(mesh, default_mesh_grid_selection(mesh));
//   view.grids.size();          // 2: cp = 0 and cp = 1 (pp fixed at 0)
//   view.grids[1].ranks[0][1];  // rank of coordinate (0, 0, 1, 1): 3
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "layout/mesh_shape.h"

namespace dtensor::gui {

// Which mesh dims the Mesh panel draws as rows, columns and side-by-side
// grids, and the index of every other dim.
struct MeshGridSelection {
  // Mesh dim drawn down (-1: a single row, 1-D meshes).
  int row_dim = -1;
  // Mesh dim drawn across.
  int col_dim = 0;
  // Mesh dim whose indices become grids side by side (-1: one grid).
  int slice_dim = -1;
  // One index per mesh dim; only the entries of dims not drawn matter.
  std::vector<int64_t> fixed_index;

  friend bool operator==(const MeshGridSelection& a, const MeshGridSelection& b) {
    return a.row_dim == b.row_dim && a.col_dim == b.col_dim && a.slice_dim == b.slice_dim &&
           a.fixed_index == b.fixed_index;
  }
};

// Columns = the last mesh dim, rows = the one before, grids = the one before
// that (mesh dim 0 for a 3-D mesh), other dims fixed at 0.
// Example: Mesh(2, 2, 2): rows dim 1, cols dim 2, grids dim 0.
MeshGridSelection default_mesh_grid_selection(const MeshShape& mesh);

// `selection` made valid for `mesh`: the three drawn dims in range and
// distinct (else the default), fixed indices clamped to the dims' sizes.
MeshGridSelection sanitize_mesh_grid_selection(const MeshGridSelection& selection,
                                               const MeshShape& mesh);

// One grid: the ranks of one slice, ranks[row][col].
struct MeshGrid {
  // "pp = 1" (the slice dim's name or "dim N", and its index); empty when
  // there is one grid.
  std::string caption;
  std::vector<std::vector<int64_t>> ranks;
};

// What the Mesh panel draws.
struct MeshGridView {
  MeshGridSelection selection;  // sanitized
  int64_t rows = 1;
  int64_t cols = 1;
  std::vector<MeshGrid> grids;
  // Dims not drawn and their fixed index: "pp = 0 of 2" (4+-D meshes).
  std::vector<std::string> fixed_notes;

  // The ranks drawn, ascending (every rank unless some dim is fixed).
  std::vector<int64_t> drawn_ranks() const;
};

// Lays `mesh` out under `selection` (sanitized first).
MeshGridView mesh_grid_view(const MeshShape& mesh, const MeshGridSelection& selection);

// "tp (mesh dim 1)", or "mesh dim 1" on an unnamed mesh.
std::string mesh_dim_label(const MeshShape& mesh, int dim);

}  // namespace dtensor::gui
