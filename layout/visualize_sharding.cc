// Builds the block table of visualize_sharding and renders it as an ASCII grid.
// See visualize_sharding.h for the format.
#include "layout/visualize_sharding.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "layout/layout_error.h"
#include "layout/shard_layout.h"
#include "layout/text.h"

namespace dtensor {
namespace {

using Row = std::vector<std::string>;

// A block of the global tensor and the ranks that hold it.
struct Block {
  ShardLayout layout;
  std::vector<int64_t> ranks;

  bool empty() const {
    return std::find(layout.local_shape.begin(), layout.local_shape.end(), 0) !=
           layout.local_shape.end();
  }
};

// Groups ranks by the blocks they hold (several under a _StridedShard), sorted by offset with empty blocks last.
std::vector<Block> collect_blocks(const std::vector<int64_t>& global_shape, const MeshShape& mesh,
                                  const Placements& placements) {
  std::map<std::pair<std::vector<int64_t>, std::vector<int64_t>>, size_t> index_of;
  std::vector<Block> blocks;
  for (int64_t rank = 0; rank < mesh.num_ranks(); ++rank) {
    for (ShardLayout& layout : local_blocks(global_shape, mesh, placements, rank)) {
      auto key = std::make_pair(layout.global_offset, layout.local_shape);
      auto [it, inserted] = index_of.emplace(key, blocks.size());
      if (inserted) blocks.push_back(Block{std::move(layout), {}});
      blocks[it->second].ranks.push_back(rank);
    }
  }
  std::sort(blocks.begin(), blocks.end(), [](const Block& a, const Block& b) {
    return std::make_tuple(a.empty(), a.layout.global_offset, a.layout.local_shape) <
           std::make_tuple(b.empty(), b.layout.global_offset, b.layout.local_shape);
  });
  return blocks;
}

// "3-5" (inclusive), or "(empty)" for a zero-length extent.
std::string range_cell(int64_t offset, int64_t size) {
  if (size == 0) return "(empty)";
  return std::to_string(offset) + "-" + std::to_string(offset + size - 1);
}

// "partial(sum) over mesh dim 1 (tp)" for every Partial placement, "; "-joined.
std::string partial_note(const MeshShape& mesh, const Placements& placements) {
  std::string note;
  for (size_t i = 0; i < placements.size(); ++i) {
    if (!placements[i].is_partial()) continue;
    if (!note.empty()) note += "; ";
    note += detail::str_cat("partial(", reduce_op_name(placements[i].reduce_op()),
                            ") over mesh dim ", i);
    if (mesh.has_dim_names()) note += " (" + mesh.dim_names()[i] + ")";
  }
  return note;
}

std::string separator_line(const std::vector<size_t>& widths, char fill) {
  std::string line = "+";
  for (size_t width : widths) line += std::string(width + 2, fill) + "+";
  return line + "\n";
}

std::string row_line(const Row& row, const std::vector<size_t>& widths) {
  std::string line = "|";
  for (size_t c = 0; c < row.size(); ++c) {
    line += " " + row[c] + std::string(widths[c] - row[c].size(), ' ') + " |";
  }
  return line + "\n";
}

// tabulate's "grid" format: '=' under the header, '-' between rows.
std::string render_grid(const Row& headers, const std::vector<Row>& rows) {
  std::vector<size_t> widths;
  for (const std::string& h : headers) widths.push_back(h.size());
  for (const Row& row : rows) {
    for (size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  }
  std::string out = separator_line(widths, '-') + row_line(headers, widths) +
                    separator_line(widths, '=');
  for (const Row& row : rows) out += row_line(row, widths) + separator_line(widths, '-');
  return out;
}

}  // namespace

std::string visualize_sharding(const std::vector<int64_t>& global_shape, const MeshShape& mesh,
                               const Placements& placements, std::string_view header) {
  DTENSOR_LAYOUT_CHECK(global_shape.size() == 1 || global_shape.size() == 2,
                       "visualize_sharding: only 1-D and 2-D tensors are drawn, got the ",
                       global_shape.size(), "-D shape ", detail::shape_to_string(global_shape),
                       " with ", to_string(placements), " on ", mesh.to_string(),
                       "; draw a 1-D or 2-D view of it instead");
  const bool is_2d = global_shape.size() == 2;
  const Placements normalized =
      validate_placements(placements, mesh, static_cast<int64_t>(global_shape.size()));
  const std::string note = partial_note(mesh, normalized);
  Row headers = {"Row range"};
  if (is_2d) headers.push_back("Col range");
  headers.push_back("Ranks");
  if (!note.empty()) headers.push_back("Note");

  std::vector<Row> rows;
  for (const Block& block : collect_blocks(global_shape, mesh, normalized)) {
    const ShardLayout& layout = block.layout;
    Row row = {range_cell(layout.global_offset[0], layout.local_shape[0])};
    if (is_2d) row.push_back(range_cell(layout.global_offset[1], layout.local_shape[1]));
    row.push_back(format_rank_list(block.ranks));
    if (!note.empty()) row.push_back(note);
    rows.push_back(std::move(row));
  }
  std::string out = header.empty() ? "" : std::string(header) + "\n";
  return out + render_grid(headers, rows);
}

}  // namespace dtensor
