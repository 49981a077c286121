// Placement: how a tensor is laid out along one mesh dim (Shard / Replicate /
// Partial, and _StridedShard for FSDP over tensor parallelism), its stable
// text form and parser, and validation against a mesh.
//   Placements p = {Shard(0), Replicate()};
//   to_string(p);                                 // "[S(0), R]"
//   parse_placements("S(0), P(max)") == Placements{Shard(0), Partial(ReduceOp::kMax)};
//   parse_placement("_StridedShard(dim=0, sf=2)") == StridedShard(0, 2);   // "_S(0, 2)"
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "layout/reduce_op.h"
#include "layout/mesh_shape.h"

namespace dtensor {

// One entry of a DTensor's placements, describing one mesh dim:
// - Shard(d): tensor dim d is split over the ranks of that mesh dim
//   (torch.chunk semantics, see shard_layout.h);
// - Replicate(): every rank of that mesh dim holds the full data;
// - Partial(op): every rank holds a partial value; reducing them with `op`
//   over that mesh dim gives the real value;
// - StridedShard(d, sf) (PyTorch's _StridedShard(dim=d, split_factor=sf)):
//   tensor dim d split as if sf shards had been cut first and this mesh dim
//   then split each of them; See Note [Strided shards] in shard_layout.h.
// Immutable value type; build it with Shard(), Replicate(), Partial() or
// StridedShard().
class Placement {
 public:
  enum class Kind { kShard, kReplicate, kPartial, kStridedShard };

  // Replicate(), so that containers can default-construct placements.
  Placement() = default;

  // Which of the four kinds this is.
  Kind kind() const { return kind_; }
  // True for any Shard placement. False for StridedShard: code that reads
  // is_shard() assumes contiguous torch.chunk pieces, which a strided shard
  // is not (use splits_dim() for "shards some tensor dim" in either form).
  bool is_shard() const { return kind_ == Kind::kShard; }
  // True for Shard(dim) with exactly this dim. Dims compare as written: call
  // normalized() first when negative dims may occur. Example: Shard(1).is_shard(1).
  bool is_shard(int64_t dim) const { return is_shard() && dim_ == dim; }
  // True for Replicate().
  bool is_replicate() const { return kind_ == Kind::kReplicate; }
  // True for any Partial placement.
  bool is_partial() const { return kind_ == Kind::kPartial; }
  // True for StridedShard(d, sf) with any d and sf.
  bool is_strided_shard() const { return kind_ == Kind::kStridedShard; }
  // True for Shard(d) or StridedShard(d, sf) with exactly this dim (or any dim
  // when `dim` is omitted): the mesh dim splits tensor dim d.
  bool splits_dim() const { return is_shard() || is_strided_shard(); }
  bool splits_dim(int64_t dim) const { return splits_dim() && dim_ == dim; }
  // The tensor dim of a Shard or StridedShard placement (may be negative until
  // normalized). Throws LayoutError for Replicate/Partial: check splits_dim() first.
  int64_t shard_dim() const;
  // The split factor of a StridedShard. Throws LayoutError for the other kinds.
  int64_t split_factor() const;
  // The reduction of a Partial placement. Throws LayoutError for Shard and
  // Replicate: check is_partial() first.
  ReduceOp reduce_op() const;

  // This placement with a negative shard dim mapped to [0, tensor_ndim), as
  // Python indexing does (Shard(-1) on a 2-D tensor is Shard(1)). Replicate and
  // Partial are returned unchanged. Throws LayoutError naming the dim and the
  // tensor rank when the dim is outside [-tensor_ndim, tensor_ndim).
  Placement normalized(int64_t tensor_ndim) const;

  // Stable short form: "S(0)", "R", "P(sum)", "P(avg)", "P(max)", "P(min)",
  // "P(product)", "_S(0, 2)" (PyTorch's str() of each). parse_placement()
  // reads it back.
  std::string to_string() const;

  friend bool operator==(const Placement& a, const Placement& b) {
    return a.kind_ == b.kind_ && a.dim_ == b.dim_ && a.op_ == b.op_ &&
           a.split_factor_ == b.split_factor_;
  }
  friend bool operator!=(const Placement& a, const Placement& b) { return !(a == b); }

 private:
  friend Placement Shard(int64_t dim);
  friend Placement Partial(ReduceOp op);
  friend Placement StridedShard(int64_t dim, int64_t split_factor);

  Kind kind_ = Kind::kReplicate;
  int64_t dim_ = 0;                // meaningful for kShard and kStridedShard only, else 0
  ReduceOp op_ = ReduceOp::kSum;   // meaningful for kPartial only, else kSum
  int64_t split_factor_ = 1;       // meaningful for kStridedShard only, else 1
};

// Shard tensor dim `dim` over a mesh dim. Negative dims count from the end
// of the tensor and are resolved by Placement::normalized / validate_placements.
Placement Shard(int64_t dim);
// Every rank along the mesh dim holds the whole tensor.
Placement Replicate();
// Ranks along the mesh dim hold partial values pending a reduction with `op`.
Placement Partial(ReduceOp op = ReduceOp::kSum);
// PyTorch's _StridedShard(dim, split_factor): tensor dim `dim` cut into
// `split_factor` torch.chunk pieces, each cut again over this mesh dim, and
// rank r holds its piece of each, in order. Throws LayoutError unless
// split_factor >= 1. Example: 8 rows, StridedShard(0, 2) on 2 ranks: rank 0
// holds rows 0-1 and 4-5. See Note [Strided shards] in shard_layout.h.
Placement StridedShard(int64_t dim, int64_t split_factor);

// A DTensor's placements: one entry per mesh dim, in mesh dim order.
using Placements = std::vector<Placement>;

// "[S(0), R]" (and "[]" for an empty list).
std::string to_string(const Placements& placements);

// Parses one placement. Accepted forms (ASCII whitespace allowed between
// tokens): S(<dim>), Shard(<dim>), Shard(dim=<dim>), R, Replicate, Replicate(),
// P, P(<op>), Partial, Partial(<op>), Partial(reduce_op=<op>) where <op> is
// sum|avg|max|min|product (case-insensitive) and a bare P/Partial means sum;
// _S(<dim>, <sf>), _StridedShard(<dim>, <sf>) with optional dim= and sf= or
// split_factor= keywords (PyTorch's str() and repr()).
// Throws LayoutError showing the text, the error position and this grammar.
// Example: parse_placement("Shard(-1)") == Shard(-1).
Placement parse_placement(std::string_view text);

// Parses a comma-separated list of placements, optionally inside [ ], e.g.
// "S(0),R" or "[S(0), P(avg)]"; "" and "[]" give an empty list. Throws like
// parse_placement. to_string(Placements) output always parses back.
Placements parse_placements(std::string_view text);

// Checks `placements` for a tensor of rank `tensor_ndim` on `mesh` and returns
// them normalized (negative shard dims resolved). Throws LayoutError when the
// count differs from mesh.ndim() or a shard dim is out of range.
// Example: validate_placements({Shard(-1), R}, Mesh(2, 2), 2) == {Shard(1), R}.
Placements validate_placements(const Placements& placements, const MeshShape& mesh,
                               int64_t tensor_ndim);

// Streams placement.to_string() (gtest prints values through this).
std::ostream& operator<<(std::ostream& out, const Placement& placement);

// Hash of a whole placement list, for caches keyed by placements.
struct PlacementsHash {
  size_t operator()(const Placements& placements) const;
};

}  // namespace dtensor

namespace std {
// Hash consistent with Placement's operator==.
template <>
struct hash<dtensor::Placement> {
  size_t operator()(const dtensor::Placement& placement) const;
};
}  // namespace std
