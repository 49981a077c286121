// The reshape family (view, _unsafe_view, _reshape_alias): group input and
// output dims whose products match, then decide per group whether a shard can
// follow the data. See Note [Shards through reshapes].
#include <c10/util/Exception.h>

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
// Any other shard (an inner dim of a run, a run that both merges and splits)
// is gathered first.
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
      }
    }
    return candidates;
  };
}

}  // namespace dtensor
