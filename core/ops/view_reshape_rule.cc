// The reshape family (view, _unsafe_view, _reshape_alias): group input and
// output dims whose products match, then decide per group whether a shard can
// follow the data. See Note [Shards through reshapes].
#include <c10/util/Exception.h>

#include <algorithm>
#include <optional>

#include "core/ops/arg_parsing.h"
#include "core/ops/builtin_rules.h"
#include "core/ops/strategy_builders.h"

namespace dtensor {
namespace {

// Note [Shards through reshapes]
// A reshape maps runs of input dims onto runs of output dims with the same
// number of elements. A shard of the first non-1 input dim of a run stays a
// shard of the first non-1 output dim of that run when the chunks line up:
//  - same size (a dim that is only renumbered): always;
//  - merge (several input dims -> one): the sharded dim must split evenly over
//    the ranks sharding it, else torch.chunk's last chunk would differ;
//  - split (one input dim -> several): the leading output dim must split evenly.
// An inner dim of a merge becomes a strided shard of the merged dim, as in
// PyTorch 2.15 (Note [Strided shards through a merge]); any other shard (a
// run that both merges and splits) is gathered first.
struct DimGroup {
  std::vector<int64_t> in_dims;
  std::vector<int64_t> out_dims;
};

std::vector<DimGroup> group_dims(const std::vector<int64_t>& in, const std::vector<int64_t>& out) {
  std::vector<DimGroup> groups;
  size_t i = 0, j = 0;
  while (i < in.size() || j < out.size()) {
    DimGroup g;
    int64_t pin = 1, pout = 1;
    if (i < in.size()) { g.in_dims.push_back(static_cast<int64_t>(i)); pin = in[i++]; }
    if (j < out.size()) { g.out_dims.push_back(static_cast<int64_t>(j)); pout = out[j++]; }
    while (pin != pout) {
      if (pin < pout && i < in.size()) {
        g.in_dims.push_back(static_cast<int64_t>(i));
        pin *= in[i++];
      } else if (j < out.size()) {
        g.out_dims.push_back(static_cast<int64_t>(j));
        pout *= out[j++];
      } else {
        break;
      }
    }
    groups.push_back(g);
  }
  return groups;
}

int64_t first_non_unit(const std::vector<int64_t>& dims, const std::vector<int64_t>& shape) {
  for (int64_t d : dims) {
    if (shape[static_cast<size_t>(d)] != 1) return d;
  }
  return -1;
}

int64_t count_non_unit(const std::vector<int64_t>& dims, const std::vector<int64_t>& shape) {
  int64_t n = 0;
  for (int64_t d : dims) n += shape[static_cast<size_t>(d)] != 1;
  return n;
}

// Output dim that keeps a shard of input dim `d`, or -1.
int64_t reshape_target(const OpCall& call, int64_t d) {
  const auto& in = call.inputs[0].meta.shape;
  const auto& out = call.outputs[0].shape;
  int64_t parts = 1;
  for (int m : call.inputs[0].mesh_dims_sharding(d)) parts *= call.mesh.size(m);
  for (const DimGroup& g : group_dims(in, out)) {
    // A dim only renumbered keeps its shard, a size-1 one too (PyTorch keeps
    // S(1) of [4, 1] through unflatten(0, [2, 2]) as S(2)).
    if (g.in_dims.size() == 1 && g.in_dims[0] == d && g.out_dims.size() == 1 &&
        in[static_cast<size_t>(d)] == out[static_cast<size_t>(g.out_dims[0])]) {
      return g.out_dims[0];
    }
    if (first_non_unit(g.in_dims, in) != d) continue;
    const int64_t lead_out = first_non_unit(g.out_dims, out);
    if (lead_out < 0) return -1;
    const int64_t n_in = count_non_unit(g.in_dims, in), n_out = count_non_unit(g.out_dims, out);
    if (n_in == 1 && n_out == 1) return lead_out;
    if (n_out == 1 && in[static_cast<size_t>(d)] % parts == 0) return lead_out;
    if (n_in == 1 && out[static_cast<size_t>(lead_out)] % parts == 0) return lead_out;
    return -1;
  }
  return -1;
}

// Note [Strided shards through a merge]
// flatten of [A, B] with B sharded over n: the merged dim is A runs of B,
// each run split n ways, so a rank holds its piece of every run: that is
// _StridedShard(dim, split_factor=A) (PyTorch 2.15's view rule gives the same,
// e.g. g18_01306: [6, 6, 4] [S(0), S(1)] flattened to [S(0), _S(0, 3)]).
// The split factor counts the runs a rank holds when this mesh dim splits:
// the outer dims of the run as earlier mesh dims left them (A / 2 = 3 above).
// Exact only when the pieces line up with torch.chunk's: the sharded dim is
// the last of the run or splits evenly over every mesh dim sharding it, the
// earlier splits of the outer dims are even (every rank must agree on the
// split factor), and no dim after it in the run is sharded. Otherwise the
// shard is gathered. A strided dim leading a merge keeps its placement when
// every split of it is even (Note [Strided shards through a split] covers
// the other direction).
// Mesh dims on which `spec` splits tensor dim `dim` (Shard or _StridedShard).
std::vector<int> mesh_dims_splitting(const DTensorSpec& spec, int64_t dim) {
  std::vector<int> dims;
  for (size_t m = 0; m < spec.placements.size(); ++m) {
    if (spec.placements[m].splits_dim() && spec.placements[m].shard_dim() == dim) dims.push_back(static_cast<int>(m));
  }
  return dims;
}

std::optional<Placement> strided_reshape_target(const OpCall& call, int mesh_dim, int64_t d) {
  const DTensorSpec& spec = call.inputs[0];
  const auto& in = spec.meta.shape;
  const auto& out = call.outputs[0].shape;
  // d may be split on several mesh dims (nested plain shards): each of them
  // becomes _S(merged, sf) with the same sf (PyTorch 2.15: [6, 5, 6]
  // [S(2), S(2)] viewed as [180] is [_S(0, 30), _S(0, 30)]).
  int64_t parts = 1;
  for (int m : mesh_dims_splitting(spec, d)) {
    if (spec.placements[static_cast<size_t>(m)].is_strided_shard()) return std::nullopt;
    parts *= call.mesh.size(m);
  }
  for (const DimGroup& g : group_dims(in, out)) {
    auto at = std::find(g.in_dims.begin(), g.in_dims.end(), d);
    if (at == g.in_dims.end()) continue;
    if (count_non_unit(g.out_dims, out) != 1) return std::nullopt;  // a merge into one dim only
    int64_t inner = 1;
    for (auto it = at + 1; it != g.in_dims.end(); ++it) {
      if (!mesh_dims_splitting(spec, *it).empty()) return std::nullopt;
      inner *= in[static_cast<size_t>(*it)];
    }
    if (inner != 1 && in[static_cast<size_t>(d)] % parts != 0) return std::nullopt;
    int64_t split_factor = 1;
    for (auto it = g.in_dims.begin(); it != at; ++it) {
      int64_t size = in[static_cast<size_t>(*it)];
      for (int m : mesh_dims_splitting(spec, *it)) {
        if (spec.placements[static_cast<size_t>(m)].is_strided_shard()) return std::nullopt;
        if (m >= mesh_dim) continue;
        if (size % call.mesh.size(m) != 0) return std::nullopt;
        size /= call.mesh.size(m);
      }
      split_factor *= size;
    }
    const int64_t target = first_non_unit(g.out_dims, out);
    if (split_factor == 1) return Placement(Shard(target));
    return Placement(StridedShard(target, split_factor));
  }
  return std::nullopt;
}

// The output dim that input dim `d` only becomes under a reshape (its group
// has no other non-1 input dim and one non-1 output dim: unsqueeze, a view
// that adds or drops size-1 dims, or reshapes other dims), or -1.
int64_t renumbered_dim(const std::vector<int64_t>& in, const std::vector<int64_t>& out, int64_t d) {
  for (const DimGroup& g : group_dims(in, out)) {
    if (std::find(g.in_dims.begin(), g.in_dims.end(), d) == g.in_dims.end()) continue;
    if (in[static_cast<size_t>(d)] == 1) {  // a size-1 dim alone in its group (so its output is size 1 too)
      return g.in_dims.size() == 1 && g.out_dims.size() == 1 ? g.out_dims[0] : -1;
    }
    if (count_non_unit(g.in_dims, in) != 1 || count_non_unit(g.out_dims, out) != 1) return -1;
    return first_non_unit(g.out_dims, out);
  }
  return -1;
}

// The output dim a _StridedShard(d, sf) input dim keeps its placement on
// when d leads a merge of unsharded dims ([6, 5] [_S(0, 2), S(0)] flattened
// is [_S(0, 2), S(0)] of [30]): each row becomes a run of the inner extent,
// exact when every chunking of d is even (the sf runs, then every mesh dim
// splitting d). -1 otherwise.
int64_t strided_merge_target(const OpCall& call, int mesh_dim, int64_t d, int64_t split_factor) {
  const DTensorSpec& spec = call.inputs[0];
  const auto& in = spec.meta.shape;
  const auto& out = call.outputs[0].shape;
  int64_t parts = 1;
  for (int m : mesh_dims_splitting(spec, d)) parts *= call.mesh.size(m);
  const int64_t extent = in[static_cast<size_t>(d)];
  if (extent % parts != 0 || extent % (split_factor * call.mesh.size(mesh_dim)) != 0) return -1;
  for (const DimGroup& g : group_dims(in, out)) {
    if (first_non_unit(g.in_dims, in) != d) continue;
    if (count_non_unit(g.out_dims, out) != 1) return -1;
    for (int64_t other : g.in_dims) {
      if (other != d && !mesh_dims_splitting(spec, other).empty()) return -1;
    }
    return first_non_unit(g.out_dims, out);
  }
  return -1;
}

// Note [Strided shards through a split]
// The inverse of Note [Strided shards through a merge]: unflatten of a dim
// _StridedShard(d, sf) into [A, B, ...] where the first output dims hold
// exactly the sf runs (A == sf, counting A as the plain shards of d on
// earlier mesh dims left it) gives back a plain shard of the next output
// dim, B, when B splits evenly or is the last dim of the run. Matmul's
// reshape of a 3-D operand to 2-D and back goes through both (g18_00306).
std::optional<Placement> strided_split_target(const OpCall& call, int mesh_dim, int64_t d, int64_t split_factor) {
  const DTensorSpec& spec = call.inputs[0];
  const auto& in = spec.meta.shape;
  const auto& out = call.outputs[0].shape;
  if (mesh_dims_splitting(spec, d).size() != spec.mesh_dims_sharding(d).size() + 1) return std::nullopt;
  int64_t earlier = 1;  // plain shards of d before this mesh dim split the leading output dim
  for (int m : spec.mesh_dims_sharding(d)) {
    if (m < mesh_dim) earlier *= call.mesh.size(m);
  }
  const int64_t n = call.mesh.size(mesh_dim);
  for (const DimGroup& g : group_dims(in, out)) {
    if (first_non_unit(g.in_dims, in) != d || count_non_unit(g.in_dims, in) != 1) continue;
    int64_t runs = 1;
    bool leading = true;
    for (size_t k = 0; k < g.out_dims.size(); ++k) {
      const int64_t o = g.out_dims[k];
      int64_t size = out[static_cast<size_t>(o)];
      if (size == 1) continue;
      if (runs == split_factor) {
        int64_t inner = 1;
        for (size_t j = k + 1; j < g.out_dims.size(); ++j) inner *= out[static_cast<size_t>(g.out_dims[j])];
        if (inner != 1 && size % n != 0) return std::nullopt;
        return Placement(Shard(o));
      }
      if (leading) {
        if (size % earlier != 0) return std::nullopt;
        size /= earlier;
        leading = false;
      }
      runs *= size;
      if (runs > split_factor) return std::nullopt;
    }
    return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace

DimRule reshape_dim_rule() {
  return [](const OpCall& call, int mesh_dim) {
    std::vector<DimStrategy> candidates{detail::all_replicate(call)};
    const Placement& p = detail::placement_of(call, 0, mesh_dim);
    DimStrategy keep = detail::follow_first_input(call, mesh_dim);
    int64_t numel = 1;
    for (int64_t s : call.inputs[0].meta.shape) numel *= s;
    if (p.is_partial()) {
      candidates.push_back(keep);
    } else if (p.is_shard() && numel > 0) {
      int64_t target = reshape_target(call, p.shard_dim());
      if (target >= 0) {
        keep.outputs.assign(call.outputs.size(), Shard(target));
        candidates.push_back(keep);
      } else if (std::optional<Placement> strided = strided_reshape_target(call, mesh_dim, p.shard_dim())) {
        keep.outputs.assign(call.outputs.size(), *strided);
        candidates.push_back(keep);
      }
    } else if (p.is_strided_shard() && numel > 0) {
      // A strided dim that is only renumbered keeps its rows as they are (as
      // PyTorch 2.15: `_S(0, 3)` of [7, 10] viewed as [7, 2, 5] stays `_S(0, 3)`).
      if (const int64_t target = renumbered_dim(call.inputs[0].meta.shape, call.outputs[0].shape, p.shard_dim());
          target >= 0) {
        keep.outputs.assign(call.outputs.size(), StridedShard(target, p.split_factor()));
        candidates.push_back(keep);
      } else if (const int64_t merged = strided_merge_target(call, mesh_dim, p.shard_dim(), p.split_factor());
                 merged >= 0) {
        keep.outputs.assign(call.outputs.size(), StridedShard(merged, p.split_factor()));
        candidates.push_back(keep);
      } else if (std::optional<Placement> target =
                     strided_split_target(call, mesh_dim, p.shard_dim(), p.split_factor())) {
        keep.outputs.assign(call.outputs.size(), *target);
        candidates.push_back(keep);
      }
    }
    return candidates;
  };
}

}  // namespace dtensor
