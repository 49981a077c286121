// torch.chunk spans, per-rank local shape/offset and the global-shape inverse.
// See shard_layout.h, Note [Chunk semantics] and Note [Nested sharding order].
#include "layout/shard_layout.h"

#include <algorithm>

#include "layout/layout_error.h"

namespace dtensor {
namespace {

void check_extents(const std::vector<int64_t>& shape, const char* caller, const char* what) {
  for (size_t d = 0; d < shape.size(); ++d) {
    DTENSOR_LAYOUT_CHECK(shape[d] >= 0, caller, ": ", what, " ", detail::shape_to_string(shape),
                         " has negative size ", shape[d], " at tensor dim ", d,
                         "; sizes must be >= 0");
  }
}

// For each tensor dim, the product of the sizes of the mesh dims sharding it.
std::vector<int64_t> shard_factors(size_t tensor_ndim, const MeshShape& mesh,
                                   const Placements& normalized) {
  std::vector<int64_t> factors(tensor_ndim, 1);
  for (size_t i = 0; i < normalized.size(); ++i) {
    if (normalized[i].splits_dim()) {
      // Cannot overflow: the product of all mesh sizes fits (MeshShape::create checked).
      factors[static_cast<size_t>(normalized[i].shard_dim())] *= mesh.size(static_cast<int>(i));
    }
  }
  return factors;
}

using DimSpans = std::vector<ChunkSpan>;

int64_t total_size(const DimSpans& spans) {
  int64_t total = 0;
  for (const ChunkSpan& span : spans) total += span.size;
  return total;
}

// Global position of element `at` of the concatenated spans (`at` may be
// their total, meaning the end of the last span).
int64_t position_of(const DimSpans& spans, int64_t at) {
  for (const ChunkSpan& span : spans) {
    if (at < span.size) return span.offset + at;
    at -= span.size;
  }
  return spans.back().offset + spans.back().size;
}

// Elements [begin, begin + size) of the concatenated spans, as global spans,
// appended to `out` (merged with its last span where they touch). An empty
// range adds an empty span at its position only when `out` is still empty,
// so an empty dim keeps one span with its (clamped) offset.
void append_range(const DimSpans& spans, int64_t begin, int64_t size, DimSpans* out) {
  if (size == 0) {
    if (out->empty()) out->push_back({position_of(spans, begin), 0});
    return;
  }
  if (out->size() == 1 && out->front().size == 0) out->clear();
  for (const ChunkSpan& span : spans) {
    if (size == 0) break;
    if (begin >= span.size) {
      begin -= span.size;
      continue;
    }
    const int64_t take = std::min(size, span.size - begin);
    const ChunkSpan piece{span.offset + begin, take};
    if (!out->empty() && out->back().offset + out->back().size == piece.offset) {
      out->back().size += take;
    } else {
      out->push_back(piece);
    }
    size -= take;
    begin = 0;
  }
}

// The body shared by local_spans and its callers; `normalized` has passed
// validate_placements and `coordinate` is on the mesh. Each mesh dim splits
// what earlier mesh dims left (Note [Nested sharding order], Note [Strided
// shards]).
std::vector<DimSpans> spans_at(const std::vector<int64_t>& global_shape, const MeshShape& mesh,
                               const Placements& normalized, const std::vector<int64_t>& coordinate) {
  std::vector<DimSpans> spans;
  spans.reserve(global_shape.size());
  for (int64_t size : global_shape) spans.push_back({{0, size}});
  for (size_t i = 0; i < normalized.size(); ++i) {
    const Placement& p = normalized[i];
    if (!p.splits_dim()) continue;  // Replicate / Partial keep the full extent.
    DimSpans& dim = spans[static_cast<size_t>(p.shard_dim())];
    const int64_t n = mesh.size(static_cast<int>(i));
    const int64_t total = total_size(dim);
    DimSpans next;
    if (p.is_shard()) {
      const ChunkSpan mine = chunk_span(total, n, coordinate[i]);
      append_range(dim, mine.offset, mine.size, &next);
    } else {
      for (const ChunkSpan& mine : strided_chunk_spans(total, p.split_factor(), n, coordinate[i])) {
        append_range(dim, mine.offset, mine.size, &next);
      }
    }
    dim = std::move(next);
  }
  return spans;
}

std::vector<int64_t> shape_of(const std::vector<DimSpans>& spans) {
  std::vector<int64_t> shape;
  shape.reserve(spans.size());
  for (const DimSpans& dim : spans) shape.push_back(total_size(dim));
  return shape;
}

// The single-block layout, or a LayoutError naming the dim held in pieces.
ShardLayout layout_at(const std::vector<int64_t>& global_shape, const MeshShape& mesh,
                      const Placements& normalized, const std::vector<int64_t>& coordinate) {
  const std::vector<DimSpans> spans = spans_at(global_shape, mesh, normalized, coordinate);
  ShardLayout layout{shape_of(spans), std::vector<int64_t>(global_shape.size(), 0)};
  for (size_t d = 0; d < spans.size(); ++d) {
    if (spans[d].size() > 1) {
      std::string pieces;
      for (const ChunkSpan& span : spans[d]) {
        pieces += detail::str_cat(pieces.empty() ? "" : ", ", "[", span.offset, ", ",
                                  span.offset + span.size, ")");
      }
      throw LayoutError(detail::str_cat(
          "local_shape_and_offset: under ", to_string(normalized), " on ", mesh.to_string(),
          " the rank at coordinate ", detail::shape_to_string(coordinate), " holds ",
          spans[d].size(), " separate spans of tensor dim ", d, " (", pieces, ") of ",
          detail::shape_to_string(global_shape),
          ", so it has no single global offset; use local_spans() or local_shape(), or ",
          "redistribute to a layout where each rank holds one block (See Note [Strided shards])"));
    }
    layout.global_offset[d] = spans[d].front().offset;
  }
  return layout;
}

// Sums, for tensor dim d, the local extents along the mesh dims sharding d:
// the ranks whose coordinate is 0 on every other mesh dim tile d exactly once.
int64_t sum_shards_of_dim(size_t d, const std::vector<std::vector<int64_t>>& local_shapes,
                          const MeshShape& mesh, const Placements& normalized) {
  int64_t total = 0;
  for (int64_t rank = 0; rank < mesh.num_ranks(); ++rank) {
    const std::vector<int64_t> coordinate = mesh.coordinate_of(rank);
    bool on_axis = true;
    for (size_t i = 0; i < normalized.size() && on_axis; ++i) {
      on_axis = normalized[i].splits_dim(static_cast<int64_t>(d)) || coordinate[i] == 0;
    }
    if (!on_axis) continue;
    DTENSOR_LAYOUT_CHECK(!__builtin_add_overflow(total, local_shapes[static_cast<size_t>(rank)][d], &total),
                         "global_shape_from_local: the global size of tensor dim ", d,
                         " overflows int64");
  }
  return total;
}

// Ranks that differ only along mesh dims not sharding tensor dim d hold the
// same part of d, so their extents along d must agree. Checked before the sum
// so that a bad replica is reported as such, naming both ranks.
void check_replicas_agree(const std::vector<std::vector<int64_t>>& local_shapes,
                          const MeshShape& mesh, const Placements& normalized) {
  for (int64_t rank = 0; rank < mesh.num_ranks(); ++rank) {
    const std::vector<int64_t> coordinate = mesh.coordinate_of(rank);
    for (size_t d = 0; d < local_shapes[0].size(); ++d) {
      std::vector<int64_t> lead = coordinate;
      for (size_t i = 0; i < normalized.size(); ++i) {
        if (!normalized[i].splits_dim(static_cast<int64_t>(d))) lead[i] = 0;
      }
      const int64_t lead_rank = mesh.rank_of(lead);
      const int64_t mine = local_shapes[static_cast<size_t>(rank)][d];
      const int64_t theirs = local_shapes[static_cast<size_t>(lead_rank)][d];
      DTENSOR_LAYOUT_CHECK(
          mine == theirs, "global_shape_from_local: rank ", rank, " (coordinate ",
          detail::shape_to_string(coordinate), ") has size ", mine, " along tensor dim ", d,
          " but rank ", lead_rank, " (coordinate ", detail::shape_to_string(lead), ") has ",
          theirs, "; under ", to_string(normalized), " on ", mesh.to_string(),
          " they hold the same part of tensor dim ", d, ", so their sizes must match");
    }
  }
}

// "[[4], [4], [1]]", cut after 16 ranks, for error messages.
std::string shapes_to_string(const std::vector<std::vector<int64_t>>& shapes) {
  std::string out = "[";
  for (size_t rank = 0; rank < shapes.size() && rank < 16; ++rank) {
    if (rank > 0) out += ", ";
    out += detail::shape_to_string(shapes[rank]);
  }
  return out + (shapes.size() > 16 ? ", ...]" : "]");
}

void check_local_shapes(const std::vector<std::vector<int64_t>>& local_shapes,
                        const MeshShape& mesh) {
  DTENSOR_LAYOUT_CHECK(static_cast<int64_t>(local_shapes.size()) == mesh.num_ranks(),
                       "global_shape_from_local: got ", local_shapes.size(), " local shapes for ",
                       mesh.to_string(), " which has ", mesh.num_ranks(),
                       " ranks; pass the local shape of every rank, indexed by rank");
  for (size_t rank = 0; rank < local_shapes.size(); ++rank) {
    DTENSOR_LAYOUT_CHECK(local_shapes[rank].size() == local_shapes[0].size(),
                         "global_shape_from_local: rank ", rank, " has a ",
                         local_shapes[rank].size(), "-D local shape ",
                         detail::shape_to_string(local_shapes[rank]), " but rank 0 has the ",
                         local_shapes[0].size(), "-D shape ",
                         detail::shape_to_string(local_shapes[0]),
                         "; all ranks must hold shards of the same tensor");
    check_extents(local_shapes[rank], "global_shape_from_local", "local shape");
  }
}

// The checks both layout queries make: the coordinate is on the mesh, no
// extent is negative, the placements are valid; returns them normalized.
Placements checked_layout_inputs(const std::vector<int64_t>& global_shape, const MeshShape& mesh,
                                 const Placements& placements, const std::vector<int64_t>& coordinate,
                                 const char* caller) {
  mesh.rank_of(coordinate);  // Throws if the coordinate is not on the mesh.
  check_extents(global_shape, caller, "global shape");
  return validate_placements(placements, mesh, static_cast<int64_t>(global_shape.size()));
}

}  // namespace

ChunkSpan chunk_span(int64_t dim_size, int64_t num_chunks, int64_t index) {
  DTENSOR_LAYOUT_CHECK(dim_size >= 0, "chunk_span: dim size ", dim_size,
                       " is negative; sizes must be >= 0");
  DTENSOR_LAYOUT_CHECK(num_chunks >= 1, "chunk_span: cannot split dim of size ", dim_size,
                       " into ", num_chunks, " chunks; num_chunks must be >= 1");
  DTENSOR_LAYOUT_CHECK(index >= 0 && index < num_chunks, "chunk_span: chunk index ", index,
                       " is out of range for ", num_chunks, " chunks; use an index in [0, ",
                       num_chunks - 1, "]");
  // ceil(dim_size / num_chunks) written so that it cannot overflow.
  const int64_t chunk = dim_size / num_chunks + (dim_size % num_chunks != 0 ? 1 : 0);
  int64_t start = 0;
  if (__builtin_mul_overflow(chunk, index, &start) || start > dim_size) start = dim_size;
  // See Note [Chunk semantics]: trailing chunks shrink, possibly to nothing.
  return ChunkSpan{start, std::min(chunk, dim_size - start)};
}

std::vector<ChunkSpan> strided_chunk_spans(int64_t extent, int64_t split_factor,
                                           int64_t num_chunks, int64_t index) {
  DTENSOR_LAYOUT_CHECK(split_factor >= 1, "strided_chunk_spans: split factor ", split_factor,
                       " must be >= 1");
  std::vector<ChunkSpan> spans;
  spans.reserve(static_cast<size_t>(split_factor));
  for (int64_t j = 0; j < split_factor; ++j) {
    const ChunkSpan piece = chunk_span(extent, split_factor, j);
    const ChunkSpan mine = chunk_span(piece.size, num_chunks, index);
    spans.push_back({piece.offset + mine.offset, mine.size});
  }
  return spans;
}

ShardLayout local_shape_and_offset(const std::vector<int64_t>& global_shape,
                                   const MeshShape& mesh, const Placements& placements,
                                   int64_t rank) {
  return local_shape_and_offset(global_shape, mesh, placements, mesh.coordinate_of(rank));
}

ShardLayout local_shape_and_offset(const std::vector<int64_t>& global_shape,
                                   const MeshShape& mesh, const Placements& placements,
                                   const std::vector<int64_t>& coordinate) {
  const Placements normalized =
      checked_layout_inputs(global_shape, mesh, placements, coordinate, "local_shape_and_offset");
  return layout_at(global_shape, mesh, normalized, coordinate);
}

std::vector<std::vector<ChunkSpan>> local_spans(const std::vector<int64_t>& global_shape,
                                                const MeshShape& mesh,
                                                const Placements& placements,
                                                const std::vector<int64_t>& coordinate) {
  const Placements normalized =
      checked_layout_inputs(global_shape, mesh, placements, coordinate, "local_spans");
  return spans_at(global_shape, mesh, normalized, coordinate);
}

std::vector<int64_t> local_shape(const std::vector<int64_t>& global_shape, const MeshShape& mesh,
                                 const Placements& placements,
                                 const std::vector<int64_t>& coordinate) {
  return shape_of(local_spans(global_shape, mesh, placements, coordinate));
}

std::vector<int64_t> local_shape(const std::vector<int64_t>& global_shape, const MeshShape& mesh,
                                 const Placements& placements, int64_t rank) {
  return local_shape(global_shape, mesh, placements, mesh.coordinate_of(rank));
}

std::vector<ShardLayout> local_blocks(const std::vector<int64_t>& global_shape,
                                      const MeshShape& mesh, const Placements& placements,
                                      int64_t rank) {
  std::vector<ShardLayout> blocks = {ShardLayout{}};
  for (const DimSpans& dim : local_spans(global_shape, mesh, placements, mesh.coordinate_of(rank))) {
    std::vector<ShardLayout> next;
    for (const ShardLayout& block : blocks) {
      for (const ChunkSpan& span : dim) {
        ShardLayout grown = block;
        grown.local_shape.push_back(span.size);
        grown.global_offset.push_back(span.offset);
        next.push_back(std::move(grown));
      }
    }
    blocks = std::move(next);
  }
  return blocks;
}

bool has_strided_shard(const Placements& placements) {
  return std::any_of(placements.begin(), placements.end(),
                     [](const Placement& p) { return p.is_strided_shard(); });
}

// See Note [Strided shards that split last].
bool strided_shard_splits_last(const std::vector<int64_t>& global_shape, const MeshShape& mesh,
                               const Placements& placements, int mesh_dim) {
  const Placement& strided = placements[static_cast<size_t>(mesh_dim)];
  if (!strided.is_strided_shard() || mesh.size(mesh_dim) == 1) return false;
  const int64_t d = strided.shard_dim();
  // The mesh dims splitting d in the order they cut it when nested: the
  // earlier ones, the later ones (both in mesh order), then mesh_dim.
  std::vector<int> dims;
  int64_t later = 1;
  int64_t pieces = mesh.size(mesh_dim);
  for (int j = 0; j < mesh.ndim(); ++j) {
    if (j == mesh_dim || mesh.size(j) == 1 || !placements[static_cast<size_t>(j)].splits_dim(d)) continue;
    if (!placements[static_cast<size_t>(j)].is_shard()) return false;
    dims.push_back(j);
    pieces *= mesh.size(j);
    if (j > mesh_dim) later *= mesh.size(j);
  }
  if (later == 1 || later != strided.split_factor()) return false;
  dims.push_back(mesh_dim);
  const int64_t extent = global_shape[static_cast<size_t>(d)];
  if (extent % pieces == 0) return true;  // even: both are rows [k * extent / pieces, ...)
  constexpr int64_t kMaxCompared = 65'536;
  if (pieces > kMaxCompared) return false;
  std::vector<int64_t> coordinate(static_cast<size_t>(mesh.ndim()), 0);
  for (int64_t c = 0; c < pieces; ++c) {
    int64_t rest = c;
    ChunkSpan nested{0, extent};
    for (int j : dims) {
      coordinate[static_cast<size_t>(j)] = rest % mesh.size(j);
      rest /= mesh.size(j);
      const ChunkSpan sub = chunk_span(nested.size, mesh.size(j), coordinate[static_cast<size_t>(j)]);
      nested = {nested.offset + sub.offset, sub.size};
    }
    int64_t held = 0;
    const std::vector<DimSpans> spans = local_spans(global_shape, mesh, placements, coordinate);  // named: [d] of a temporary would dangle
    for (const ChunkSpan& span : spans[static_cast<size_t>(d)]) {
      if (span.size == 0) continue;
      if (held > 0 || span != nested) return false;
      held = span.size;
    }
    if (held != nested.size) return false;
  }
  return true;
}

std::vector<int64_t> global_shape_from_local(
    const std::vector<std::vector<int64_t>>& local_shapes_by_rank, const MeshShape& mesh,
    const Placements& placements) {
  check_local_shapes(local_shapes_by_rank, mesh);
  const size_t ndim = local_shapes_by_rank[0].size();
  const Placements normalized =
      validate_placements(placements, mesh, static_cast<int64_t>(ndim));
  check_replicas_agree(local_shapes_by_rank, mesh, normalized);
  std::vector<int64_t> global_shape(ndim);
  for (size_t d = 0; d < ndim; ++d) {
    global_shape[d] = sum_shards_of_dim(d, local_shapes_by_rank, mesh, normalized);
  }
  // The sum is only a candidate: every rank must hold exactly its chunk of it.
  for (int64_t rank = 0; rank < mesh.num_ranks(); ++rank) {
    const std::vector<int64_t> coordinate = mesh.coordinate_of(rank);
    const std::vector<int64_t> expected = shape_of(spans_at(global_shape, mesh, normalized, coordinate));
    const std::vector<int64_t>& actual = local_shapes_by_rank[static_cast<size_t>(rank)];
    DTENSOR_LAYOUT_CHECK(
        expected == actual, "global_shape_from_local: rank ", rank, " (coordinate ",
        detail::shape_to_string(coordinate), ") has local shape ", detail::shape_to_string(actual),
        " but the shards sum to global shape ", detail::shape_to_string(global_shape),
        ", whose torch.chunk shard on rank ", rank, " is ",
        detail::shape_to_string(expected), " under ", to_string(placements), " on ",
        mesh.to_string(), " (local shapes by rank: ", shapes_to_string(local_shapes_by_rank),
        "); local shapes must be the torch.chunk shards of one global shape");
  }
  return global_shape;
}

std::vector<int64_t> global_shape_from_even_local(const std::vector<int64_t>& local_shape,
                                                  const MeshShape& mesh,
                                                  const Placements& placements) {
  check_extents(local_shape, "global_shape_from_even_local", "local shape");
  const Placements normalized =
      validate_placements(placements, mesh, static_cast<int64_t>(local_shape.size()));
  const std::vector<int64_t> factors = shard_factors(local_shape.size(), mesh, normalized);
  std::vector<int64_t> global_shape(local_shape.size());
  for (size_t d = 0; d < local_shape.size(); ++d) {
    DTENSOR_LAYOUT_CHECK(!__builtin_mul_overflow(local_shape[d], factors[d], &global_shape[d]),
                         "global_shape_from_even_local: the global size of tensor dim ", d,
                         " of local shape ", detail::shape_to_string(local_shape),
                         " overflows int64");
  }
  return global_shape;
}

bool is_evenly_sharded(const std::vector<int64_t>& global_shape, const MeshShape& mesh,
                       const Placements& placements) {
  check_extents(global_shape, "is_evenly_sharded", "global shape");
  const Placements normalized =
      validate_placements(placements, mesh, static_cast<int64_t>(global_shape.size()));
  if (has_strided_shard(normalized)) {
    // Strided pieces are uneven in ways no factor shows: compare every rank.
    const std::vector<int64_t> first = shape_of(spans_at(global_shape, mesh, normalized, mesh.coordinate_of(0)));
    for (int64_t rank = 1; rank < mesh.num_ranks(); ++rank) {
      if (shape_of(spans_at(global_shape, mesh, normalized, mesh.coordinate_of(rank))) != first) return false;
    }
    return true;
  }
  const std::vector<int64_t> factors = shard_factors(global_shape.size(), mesh, normalized);
  for (size_t d = 0; d < global_shape.size(); ++d) {
    // Nested chunks are all equal iff the size divides by the product of the
    // mesh sizes: n % a == 0 && (n / a) % b == 0  <=>  n % (a * b) == 0.
    if (global_shape[d] % factors[d] != 0) return false;
  }
  return true;
}

int64_t shape_numel(const std::vector<int64_t>& shape) {
  return detail::checked_numel(shape, "shape_numel");
}

int64_t local_numel(const std::vector<int64_t>& global_shape, const MeshShape& mesh,
                    const Placements& placements, int64_t rank) {
  return detail::checked_numel(local_shape(global_shape, mesh, placements, rank), "local_numel");
}

int64_t local_bytes(const std::vector<int64_t>& global_shape, const MeshShape& mesh,
                    const Placements& placements, int64_t rank, int64_t element_size) {
  DTENSOR_LAYOUT_CHECK(element_size >= 1, "local_bytes: element size ", element_size,
                       " must be >= 1 byte (e.g. 4 for float32)");
  int64_t bytes = 0;
  DTENSOR_LAYOUT_CHECK(
      !__builtin_mul_overflow(local_numel(global_shape, mesh, placements, rank), element_size, &bytes),
      "local_bytes: the byte count of the shard of ", detail::shape_to_string(global_shape),
      " on rank ", rank, " overflows int64");
  return bytes;
}

}  // namespace dtensor
