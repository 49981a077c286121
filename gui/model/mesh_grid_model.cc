// Mesh grid model: N-D meshes as grids of rank cells. See mesh_grid_model.h.
#include "gui/model/mesh_grid_model.h"

#include <algorithm>
#include <set>

namespace dtensor::gui {
namespace {

std::string short_dim_name(const MeshShape& mesh, int dim) {
  return mesh.has_dim_names() ? mesh.dim_names()[static_cast<size_t>(dim)]
                              : "dim " + std::to_string(dim);
}

}  // namespace

MeshGridSelection default_mesh_grid_selection(const MeshShape& mesh) {
  int n = mesh.ndim();
  MeshGridSelection s;
  s.col_dim = n - 1;
  s.row_dim = n >= 2 ? n - 2 : -1;
  s.slice_dim = n >= 3 ? n - 3 : -1;
  s.fixed_index.assign(static_cast<size_t>(n), 0);
  return s;
}

MeshGridSelection sanitize_mesh_grid_selection(const MeshGridSelection& selection,
                                               const MeshShape& mesh) {
  int n = mesh.ndim();
  auto in_range = [n](int d) { return d >= 0 && d < n; };
  // The drawn dims must be distinct, and as many as the mesh has (up to 3).
  std::set<int> drawn;
  bool ok = in_range(selection.col_dim);
  drawn.insert(selection.col_dim);
  if (n >= 2) ok = ok && in_range(selection.row_dim) && drawn.insert(selection.row_dim).second;
  if (n < 2) ok = ok && selection.row_dim == -1;
  if (n >= 3) ok = ok && in_range(selection.slice_dim) && drawn.insert(selection.slice_dim).second;
  if (n < 3) ok = ok && selection.slice_dim == -1;
  MeshGridSelection out = ok ? selection : default_mesh_grid_selection(mesh);
  out.fixed_index.resize(static_cast<size_t>(n), 0);
  for (int d = 0; d < n; ++d) {
    int64_t& index = out.fixed_index[static_cast<size_t>(d)];
    index = std::clamp<int64_t>(index, 0, mesh.shape()[static_cast<size_t>(d)] - 1);
  }
  return out;
}

std::vector<int64_t> MeshGridView::drawn_ranks() const {
  std::vector<int64_t> out;
  for (const MeshGrid& grid : grids)
    for (const std::vector<int64_t>& row : grid.ranks) out.insert(out.end(), row.begin(), row.end());
  std::sort(out.begin(), out.end());
  return out;
}

MeshGridView mesh_grid_view(const MeshShape& mesh, const MeshGridSelection& selection) {
  MeshGridView view;
  view.selection = sanitize_mesh_grid_selection(selection, mesh);
  const MeshGridSelection& s = view.selection;
  auto size = [&](int d) { return d < 0 ? int64_t{1} : mesh.shape()[static_cast<size_t>(d)]; };
  view.rows = size(s.row_dim);
  view.cols = size(s.col_dim);
  int64_t slices = size(s.slice_dim);
  for (int d = 0; d < mesh.ndim(); ++d) {
    if (d == s.row_dim || d == s.col_dim || d == s.slice_dim) continue;
    view.fixed_notes.push_back(short_dim_name(mesh, d) + " = " +
                               std::to_string(s.fixed_index[static_cast<size_t>(d)]) + " of " +
                               std::to_string(size(d)));
  }
  std::vector<int64_t> coord = s.fixed_index;
  for (int64_t k = 0; k < slices; ++k) {
    MeshGrid grid;
    if (s.slice_dim >= 0) {
      coord[static_cast<size_t>(s.slice_dim)] = k;
      grid.caption = short_dim_name(mesh, s.slice_dim) + " = " + std::to_string(k);
    }
    for (int64_t r = 0; r < view.rows; ++r) {
      if (s.row_dim >= 0) coord[static_cast<size_t>(s.row_dim)] = r;
      std::vector<int64_t> row;
      for (int64_t c = 0; c < view.cols; ++c) {
        coord[static_cast<size_t>(s.col_dim)] = c;
        row.push_back(mesh.rank_of(coord));
      }
      grid.ranks.push_back(std::move(row));
    }
    view.grids.push_back(std::move(grid));
  }
  return view;
}

std::string mesh_dim_label(const MeshShape& mesh, int dim) {
  std::string label = "mesh dim " + std::to_string(dim);
  return mesh.has_dim_names() ? mesh.dim_names()[static_cast<size_t>(dim)] + " (" + label + ")"
                              : label;
}

}  // namespace dtensor::gui
