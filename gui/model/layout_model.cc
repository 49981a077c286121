// Layout model: groups ranks by the block they hold and projects the blocks
// onto the drawn plane. See layout_model.h.
#include "gui/model/layout_model.h"

#include <algorithm>
#include <exception>
#include <map>
#include <tuple>
#include <utility>

#include "layout/shard_layout.h"
#include "gui/model/shape_text.h"

namespace dtensor::gui {
namespace {

int64_t ndim_of(const std::vector<int64_t>& shape) { return static_cast<int64_t>(shape.size()); }

// True when the block [offset, offset + size) along every undrawn dim contains
// that dim's slice index.
bool meets_slice(const std::vector<int64_t>& offset, const std::vector<int64_t>& size,
                 const DrawSelection& selection) {
  for (size_t d = 0; d < offset.size(); ++d) {
    int dim = static_cast<int>(d);
    if (dim == selection.row_dim || dim == selection.col_dim) continue;
    int64_t index = selection.slice_index[d];
    if (index < offset[d] || index >= offset[d] + size[d]) return false;
  }
  return true;
}

// "P(sum) over mesh dim 1 (tp)" / "replicated over mesh dim 0 (dp)" notes.
std::vector<std::string> placement_notes(const MeshShape& mesh, const Placements& placements) {
  std::vector<std::string> notes;
  for (size_t i = 0; i < placements.size(); ++i) {
    const Placement& p = placements[i];
    if (p.splits_dim() || mesh.shape()[i] == 1) continue;
    std::string where = "mesh dim " + std::to_string(i);
    if (mesh.has_dim_names()) where += " (" + mesh.dim_names()[i] + ")";
    if (p.is_partial()) {
      notes.push_back(p.to_string() + " over " + where + ": those ranks hold partial values");
    } else {
      notes.push_back("replicated over " + where);
    }
  }
  return notes;
}

// Fills the drawn-plane rectangle of `block` from its N-D offset and shape.
void project(const DrawSelection& selection, LayoutBlock* block) {
  if (selection.row_dim >= 0) {
    block->row_begin = block->global_offset[selection.row_dim];
    block->row_end = block->row_begin + block->local_shape[selection.row_dim];
  }
  if (selection.col_dim >= 0) {
    block->col_begin = block->global_offset[selection.col_dim];
    block->col_end = block->col_begin + block->local_shape[selection.col_dim];
  }
}

// Groups every rank by the (offset, shape) blocks it holds, in rank order.
std::vector<LayoutBlock> group_blocks(const LayoutView& view) {
  std::map<std::pair<std::vector<int64_t>, std::vector<int64_t>>, size_t> index_of;
  std::vector<LayoutBlock> blocks;
  for (int64_t rank = 0; rank < view.mesh.num_ranks(); ++rank) {
    for (ShardLayout& layout : local_blocks(view.global_shape, view.mesh, view.placements, rank)) {
      auto key = std::make_pair(layout.global_offset, layout.local_shape);
      auto [it, inserted] = index_of.emplace(key, blocks.size());
      if (inserted) {
        LayoutBlock block;
        block.local_shape = std::move(layout.local_shape);
        block.global_offset = std::move(layout.global_offset);
        block.bytes = shape_numel(block.local_shape) * view.element_size;
        project(view.selection, &block);
        blocks.push_back(std::move(block));
      }
      blocks[it->second].ranks.push_back(rank);
    }
  }
  return blocks;
}

}  // namespace

DrawSelection default_draw_selection(const std::vector<int64_t>& global_shape,
                                     const Placements& placements) {
  DrawSelection selection;
  int ndim = static_cast<int>(global_shape.size());
  selection.slice_index.assign(global_shape.size(), 0);
  if (ndim == 1) selection.col_dim = 0;
  if (ndim < 2) return selection;
  std::vector<int> dims;
  for (const Placement& p : placements) {
    if (!p.splits_dim()) continue;
    int dim = static_cast<int>(p.shard_dim() < 0 ? p.shard_dim() + ndim : p.shard_dim());
    if (dim >= 0 && dim < ndim && std::find(dims.begin(), dims.end(), dim) == dims.end()) {
      dims.push_back(dim);
    }
  }
  std::sort(dims.begin(), dims.end());
  if (dims.size() > 2) dims.resize(2);
  for (int dim = ndim - 1; dims.size() < 2; --dim) {
    if (std::find(dims.begin(), dims.end(), dim) == dims.end()) dims.push_back(dim);
  }
  std::sort(dims.begin(), dims.end());
  selection.row_dim = dims[0];
  selection.col_dim = dims[1];
  return selection;
}

DrawSelection sanitize_selection(const DrawSelection& selection,
                                 const std::vector<int64_t>& global_shape,
                                 const Placements& placements) {
  int ndim = static_cast<int>(global_shape.size());
  DrawSelection out = selection;
  bool dims_ok =
      ndim < 2 ? (selection.row_dim == -1 && selection.col_dim == (ndim == 1 ? 0 : -1))
               : (selection.row_dim >= 0 && selection.row_dim < ndim && selection.col_dim >= 0 &&
                  selection.col_dim < ndim && selection.row_dim != selection.col_dim);
  if (!dims_ok) {
    DrawSelection fallback = default_draw_selection(global_shape, placements);
    out.row_dim = fallback.row_dim;
    out.col_dim = fallback.col_dim;
  }
  out.slice_index.resize(global_shape.size(), 0);
  for (size_t d = 0; d < global_shape.size(); ++d) {
    out.slice_index[d] =
        std::clamp<int64_t>(out.slice_index[d], 0, std::max<int64_t>(global_shape[d] - 1, 0));
  }
  return out;
}

int LayoutView::block_of_rank(int64_t rank) const {
  for (size_t i = 0; i < blocks.size(); ++i) {
    const std::vector<int64_t>& r = blocks[i].ranks;
    if (std::binary_search(r.begin(), r.end(), rank)) return static_cast<int>(i);
  }
  return -1;
}

std::vector<int> LayoutView::blocks_of_rank(int64_t rank) const {
  std::vector<int> out;
  for (size_t i = 0; i < blocks.size(); ++i) {
    const std::vector<int64_t>& r = blocks[i].ranks;
    if (std::binary_search(r.begin(), r.end(), rank)) out.push_back(static_cast<int>(i));
  }
  return out;
}

bool LayoutView::rank_is_empty(int64_t rank) const {
  for (const LayoutBlock& block : empty_blocks) {
    if (std::binary_search(block.ranks.begin(), block.ranks.end(), rank)) return true;
  }
  return false;
}

LayoutResult compute_layout(const LayoutRequest& request) {
  LayoutResult result;
  try {
    if (request.mesh.num_ranks() > kMaxPlaygroundRanks) {
      result.error = "layout: at most " + std::to_string(kMaxPlaygroundRanks) +
                     " ranks can be drawn, the mesh has " +
                     std::to_string(request.mesh.num_ranks());
      return result;
    }
    LayoutView view;
    view.global_shape = request.global_shape;
    view.mesh = request.mesh;
    view.element_size = request.element_size;
    view.placements =
        validate_placements(request.placements, request.mesh, ndim_of(request.global_shape));
    view.selection = sanitize_selection(request.selection, view.global_shape, view.placements);
    if (view.selection.row_dim >= 0) view.rows = view.global_shape[view.selection.row_dim];
    if (view.selection.col_dim >= 0) view.cols = view.global_shape[view.selection.col_dim];
    for (LayoutBlock& block : group_blocks(view)) {
      if (shape_numel(block.local_shape) == 0) {
        view.empty_blocks.push_back(std::move(block));
      } else if (!meets_slice(block.global_offset, block.local_shape, view.selection)) {
        view.ranks_outside_slice.insert(view.ranks_outside_slice.end(), block.ranks.begin(),
                                        block.ranks.end());
      } else {
        view.blocks.push_back(std::move(block));
      }
    }
    std::sort(view.blocks.begin(), view.blocks.end(),
              [](const LayoutBlock& a, const LayoutBlock& b) {
                return std::tie(a.row_begin, a.col_begin) < std::tie(b.row_begin, b.col_begin);
              });
    std::sort(view.ranks_outside_slice.begin(), view.ranks_outside_slice.end());
    view.partial = std::any_of(view.placements.begin(), view.placements.end(),
                               [](const Placement& p) { return p.is_partial(); });
    view.notes = placement_notes(view.mesh, view.placements);
    result.view = std::move(view);
  } catch (const std::exception& e) {
    result.error = e.what();
  }
  return result;
}

}  // namespace dtensor::gui
