// Placement kinds, their text form, the placement parser and validation.
// See placement.h for the API and the accepted grammar.
#include "layout/placement.h"

#include <cctype>

#include "layout/layout_error.h"

namespace dtensor {
namespace {

constexpr const char* kGrammar =
    "accepted placements: S(<dim>) | Shard(<dim>) | Shard(dim=<dim>) | R | Replicate | "
    "Replicate() | P | P(<op>) | Partial | Partial(<op>) | Partial(reduce_op=<op>) | "
    "_S(<dim>, <sf>) | _StridedShard(dim=<dim>, sf=<sf>) | _StridedShard(<dim>, split_factor=<sf>), "
    "with <dim> an integer, <sf> a split factor >= 1 and <op> one of sum, avg, max, min, "
    "product (bare P means sum); "
    "a list is comma-separated, optionally inside [ ], e.g. \"[S(0), R, P(sum)]\"";

// A hand-written recursive-descent parser over the grammar in kGrammar.
// Every failure reports the position so users can find the typo.
class PlacementParser {
 public:
  PlacementParser(std::string_view text, const char* caller) : text_(text), caller_(caller) {}

  Placement parse_single() {
    Placement placement = read_placement();
    skip_space();
    if (!at_end()) fail("unexpected text after the placement (use parse_placements for a list)");
    return placement;
  }

  Placements parse_list() {
    Placements placements;
    skip_space();
    const bool bracketed = consume('[');
    skip_space();
    const bool empty = bracketed ? peek() == ']' : at_end();
    while (!empty) {
      placements.push_back(read_placement());
      skip_space();
      if (!consume(',')) break;
    }
    skip_space();
    if (bracketed && !consume(']')) fail("expected ',' or ']' after a placement");
    skip_space();
    if (!at_end()) fail(bracketed ? "unexpected text after ']'" : "expected ',' or the end of the text");
    return placements;
  }

 private:
  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[pos_]; }

  void skip_space() {
    while (!at_end() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }

  bool consume(char c) {
    skip_space();
    if (peek() != c) return false;
    ++pos_;
    return true;
  }

  void expect(char c, const char* context) {
    if (!consume(c)) fail(detail::str_cat("expected '", c, "' ", context));
  }

  std::string_view read_identifier() {
    skip_space();
    const size_t start = pos_;
    while (!at_end() && (std::isalpha(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) {
      ++pos_;
    }
    return text_.substr(start, pos_ - start);
  }

  // Consumes "<keyword> =" when the next identifier is `keyword`; else rewinds.
  void skip_keyword(std::string_view keyword) {
    const size_t start = pos_;
    if (read_identifier() == keyword && consume('=')) return;
    pos_ = start;
  }

  int64_t read_integer(const char* what = "tensor dim") {
    skip_space();
    const bool negative = consume('-');
    if (!negative) consume('+');
    skip_space();
    if (!std::isdigit(static_cast<unsigned char>(peek()))) fail(detail::str_cat("expected an integer ", what));
    int64_t value = 0;
    while (std::isdigit(static_cast<unsigned char>(peek()))) {
      value = value * 10 + (text_[pos_++] - '0');
      if (value > (int64_t{1} << 31)) fail(detail::str_cat(what, " is too large"));
    }
    return negative ? -value : value;
  }

  Placement read_shard() {
    expect('(', "after Shard");
    skip_keyword("dim");
    const int64_t dim = read_integer();
    expect(')', "after the shard dim");
    return Shard(dim);
  }

  // "(<dim>, <sf>)" with optional dim= and sf= / split_factor= keywords.
  Placement read_strided_shard() {
    expect('(', "after _StridedShard");
    skip_keyword("dim");
    const int64_t dim = read_integer();
    expect(',', "after the shard dim of a _StridedShard (it needs a split factor)");
    skip_keyword("sf");
    skip_keyword("split_factor");
    const size_t factor_start = pos_;
    const int64_t split_factor = read_integer("split factor");
    if (split_factor < 1) {
      pos_ = factor_start;
      fail("a split factor must be >= 1");
    }
    expect(')', "after the split factor");
    return StridedShard(dim, split_factor);
  }

  Placement read_partial() {
    if (!consume('(') || consume(')')) return Partial(ReduceOp::kSum);
    skip_keyword("reduce_op");
    skip_space();
    const size_t op_start = pos_;
    const std::string_view name = read_identifier();
    const std::optional<ReduceOp> op = parse_reduce_op(name);
    if (!op) {
      pos_ = op_start;
      fail(detail::str_cat("unknown reduce op '", name, "'"));
    }
    expect(')', "after the reduce op");
    return Partial(*op);
  }

  Placement read_placement() {
    skip_space();
    const size_t start = pos_;
    const std::string_view name = read_identifier();
    if (name == "S" || name == "Shard") return read_shard();
    if (name == "R" || name == "Replicate") {
      if (consume('(')) expect(')', "after Replicate(");
      return Replicate();
    }
    if (name == "P" || name == "Partial") return read_partial();
    if (name == "_S" || name == "_StridedShard") return read_strided_shard();
    pos_ = start;
    if (name.empty()) fail("expected a placement");
    fail(detail::str_cat("unknown placement '", name, "'"));
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw LayoutError(detail::str_cat(caller_, ": ", what, " at position ", pos_, " in \"", text_,
                                      "\":\n  ", text_, "\n  ", std::string(pos_, ' '), "^\n",
                                      kGrammar));
  }

  std::string_view text_;
  const char* caller_;
  size_t pos_ = 0;
};

}  // namespace

int64_t Placement::shard_dim() const {
  DTENSOR_LAYOUT_CHECK(splits_dim(), "Placement::shard_dim: called on ", to_string(),
                       ", which is not a Shard placement; check splits_dim() first");
  return dim_;
}

int64_t Placement::split_factor() const {
  DTENSOR_LAYOUT_CHECK(is_strided_shard(), "Placement::split_factor: called on ", to_string(),
                       ", which is not a _StridedShard; check is_strided_shard() first");
  return split_factor_;
}

ReduceOp Placement::reduce_op() const {
  DTENSOR_LAYOUT_CHECK(is_partial(), "Placement::reduce_op: called on ", to_string(),
                       ", which is not a Partial placement; check is_partial() first");
  return op_;
}

Placement Placement::normalized(int64_t tensor_ndim) const {
  if (!splits_dim()) return *this;
  DTENSOR_LAYOUT_CHECK(tensor_ndim >= 0, "Placement::normalized: tensor rank ", tensor_ndim,
                       " is negative; pass the number of tensor dims");
  DTENSOR_LAYOUT_CHECK(dim_ >= -tensor_ndim && dim_ < tensor_ndim, "Placement::normalized: ",
                       to_string(), " shards tensor dim ", dim_, " but the tensor has ",
                       tensor_ndim, " dims; use a shard dim in [", -tensor_ndim, ", ",
                       tensor_ndim - 1, "]");
  const int64_t dim = dim_ < 0 ? dim_ + tensor_ndim : dim_;
  return is_strided_shard() ? StridedShard(dim, split_factor_) : Shard(dim);
}

std::string Placement::to_string() const {
  switch (kind_) {
    case Kind::kShard:
      return "S(" + std::to_string(dim_) + ")";
    case Kind::kReplicate:
      return "R";
    case Kind::kPartial:
      return std::string("P(") + reduce_op_name(op_) + ")";
    case Kind::kStridedShard:
      return "_S(" + std::to_string(dim_) + ", " + std::to_string(split_factor_) + ")";
  }
  return "?";
}

Placement Shard(int64_t dim) {
  Placement placement;
  placement.kind_ = Placement::Kind::kShard;
  placement.dim_ = dim;
  return placement;
}

Placement Replicate() { return Placement(); }

Placement StridedShard(int64_t dim, int64_t split_factor) {
  DTENSOR_LAYOUT_CHECK(split_factor >= 1, "StridedShard(", dim, ", ", split_factor,
                       "): the split factor must be >= 1 (the number of shards cut before ",
                       "this mesh dim's split; 1 is a plain Shard)");
  Placement placement;
  placement.kind_ = Placement::Kind::kStridedShard;
  placement.dim_ = dim;
  placement.split_factor_ = split_factor;
  return placement;
}

Placement Partial(ReduceOp op) {
  Placement placement;
  placement.kind_ = Placement::Kind::kPartial;
  placement.op_ = op;
  return placement;
}

std::string to_string(const Placements& placements) {
  std::string out = "[";
  for (size_t i = 0; i < placements.size(); ++i) {
    if (i > 0) out += ", ";
    out += placements[i].to_string();
  }
  return out + "]";
}

Placement parse_placement(std::string_view text) {
  return PlacementParser(text, "parse_placement").parse_single();
}

Placements parse_placements(std::string_view text) {
  return PlacementParser(text, "parse_placements").parse_list();
}

Placements validate_placements(const Placements& placements, const MeshShape& mesh,
                               int64_t tensor_ndim) {
  DTENSOR_LAYOUT_CHECK(placements.size() == static_cast<size_t>(mesh.ndim()),
                       "validate_placements: got ", placements.size(), " placements ",
                       to_string(placements), " for ", mesh.to_string(), " with ", mesh.ndim(),
                       " dims; give exactly one placement per mesh dim");
  DTENSOR_LAYOUT_CHECK(tensor_ndim >= 0, "validate_placements: tensor rank ", tensor_ndim,
                       " is negative; pass the number of tensor dims");
  Placements normalized;
  normalized.reserve(placements.size());
  for (size_t i = 0; i < placements.size(); ++i) {
    const Placement& p = placements[i];
    if (p.splits_dim()) {
      const int64_t dim = p.shard_dim();
      DTENSOR_LAYOUT_CHECK(dim >= -tensor_ndim && dim < tensor_ndim, "validate_placements: ",
                           p.to_string(), " on mesh dim ", i, " of ", to_string(placements),
                           " (", mesh.to_string(), ") shards tensor dim ", dim,
                           " but the tensor has ", tensor_ndim, " dims; use a shard dim in [",
                           -tensor_ndim, ", ", tensor_ndim - 1, "]");
    }
    normalized.push_back(p.normalized(tensor_ndim));
  }
  return normalized;
}

std::ostream& operator<<(std::ostream& out, const Placement& placement) {
  return out << placement.to_string();
}

size_t PlacementsHash::operator()(const Placements& placements) const {
  size_t seed = placements.size();
  for (const Placement& p : placements) {
    seed ^= std::hash<Placement>{}(p) + 0x9e3779b97f4a7c15ull + (seed << 6) + (seed >> 2);
  }
  return seed;
}

}  // namespace dtensor

size_t std::hash<dtensor::Placement>::operator()(const dtensor::Placement& placement) const {
  const size_t kind = static_cast<size_t>(placement.kind());
  const size_t dim = placement.splits_dim() ? static_cast<size_t>(placement.shard_dim()) : 0;
  const size_t op = placement.is_partial() ? static_cast<size_t>(placement.reduce_op()) : 0;
  const size_t factor =
      placement.is_strided_shard() ? static_cast<size_t>(placement.split_factor()) : 0;
  return ((dim * 31 + op) * 37 + factor) * 4 + kind;
}
