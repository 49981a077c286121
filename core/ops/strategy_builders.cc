// Candidates of per-mesh-dim rules and the checks that allow them.
#include "core/ops/strategy_builders.h"

#include <algorithm>
#include <set>

#include "layout/shard_layout.h"
#include "layout/transitions.h"
#include "core/ops/arg_parsing.h"

namespace dtensor::detail {

DimStrategy all_replicate(const OpCall& call) { return every_tensor_as(call, Replicate()); }

DimStrategy every_tensor_as(const OpCall& call, const Placement& p) {
  return DimStrategy{std::vector<Placement>(call.inputs.size(), p),
                     std::vector<Placement>(call.outputs.size(), p)};
}

DimStrategy follow_first_input(const OpCall& call, int mesh_dim) {
  DimStrategy s;
  for (size_t i = 0; i < call.inputs.size(); ++i) s.inputs.push_back(placement_of(call, i, mesh_dim));
  Placement first = call.inputs.empty() ? Replicate() : placement_of(call, 0, mesh_dim);
  s.outputs.assign(call.outputs.size(), first);
  return s;
}

Placement partial_to_replicate(const Placement& p) { return p.is_partial() ? Placement(Replicate()) : p; }

std::vector<DimStrategy> shard_dims_except(const OpCall& call, int mesh_dim, const std::vector<int64_t>& kept,
                                           const std::function<DimStrategy(int64_t)>& row,
                                           const std::vector<DimStrategy>& partial_rows) {
  std::vector<DimStrategy> candidates{all_replicate(call)};
  for (int64_t d = 0; d < input_ndim(call, 0); ++d) {
    if (std::find(kept.begin(), kept.end(), d) == kept.end()) candidates.push_back(row(d));
  }
  for (const DimStrategy& s : partial_rows) {
    bool keeps = false;
    for (size_t i = 0; i < call.inputs.size() && i < s.inputs.size(); ++i) {
      const Placement& p = placement_of(call, i, mesh_dim);
      keeps = keeps || (p.is_partial() && s.inputs[i] == p);
    }
    if (keeps) candidates.push_back(s);
  }
  return candidates;
}

bool evenly_sharded(const OpCall& call, size_t i, int64_t dim) {
  const DTensorSpec& spec = call.inputs[i];
  int64_t parts = 1;
  for (int m : spec.mesh_dims_sharding(dim)) parts *= spec.mesh.size(m);
  return spec.meta.shape[static_cast<size_t>(dim)] % parts == 0;
}

std::set<int64_t> piece_sizes(const std::vector<int64_t>& shape, const DeviceMesh& mesh, const Placements& placements,
                              int64_t dim) {
  std::set<int64_t> sizes{shape[static_cast<size_t>(dim)]};
  for (size_t m = 0; m < placements.size(); ++m) {
    if (!placements[m].is_shard() || placements[m].shard_dim() != dim) continue;
    const int64_t n = mesh.size(static_cast<int>(m));
    std::set<int64_t> next;
    for (int64_t size : sizes) {
      for (int64_t j = 0; j < n; ++j) next.insert(chunk_span(size, n, j).size);
    }
    sizes = next;
  }
  return sizes;
}

bool no_empty_pieces(const OpCall& call, const std::vector<Placements>& inputs, bool batch_may_be_empty) {
  for (size_t i = 0; i < call.inputs.size() && i < inputs.size(); ++i) {
    const DTensorSpec& spec = call.inputs[i];
    for (int64_t dim = batch_may_be_empty ? 1 : 0; dim < static_cast<int64_t>(spec.meta.shape.size()); ++dim) {
      const bool split = std::any_of(inputs[i].begin(), inputs[i].end(),
                                     [dim](const Placement& p) { return p.is_shard() && p.shard_dim() == dim; });
      if (split && piece_sizes(spec.meta.shape, spec.mesh, inputs[i], dim).count(0) > 0) return false;
    }
  }
  return true;
}

PlanCheck no_empty_pieces_check(bool batch_may_be_empty) {
  return [batch_may_be_empty](const OpCall& call, const std::vector<Placements>& inputs) {
    return no_empty_pieces(call, inputs, batch_may_be_empty);
  };
}

// Note [Matrix products shard only what is sharded]
// PyTorch 2.11 expands mm, addmm, bmm and baddbmm from single-mesh-dim
// strategies whose shards are placeholders, filled with the shard types the
// inputs use (_fill_single_dim_strategy_placeholders): when no input is
// sharded on any mesh dim, only the Replicate and Partial candidates remain.
// A Partial(max) operand is then all_reduced, never reduce_scattered into a
// row shard. Per mesh dim, bytes alone prefer the reduce_scatter, but its
// shard is one no input had, and what follows pays for it: the unfold view
// of a folded matmul cannot keep a row shard of 6 * 2 rows over 4 ranks and
// gathers it (g18_01431: reduce_scatter + all_gather, PyTorch one
// all_reduce), a `full_tensor` gathers it (g18_00123, g18_00424). We offer
// the same candidates as PyTorch.
Placement broadcast_operand_shard(const std::vector<int64_t>& operand, int64_t out_ndim, int64_t out_dim) {
  const int64_t d = out_dim - (out_ndim - static_cast<int64_t>(operand.size()));
  if (d < 0 || operand[static_cast<size_t>(d)] == 1) return Replicate();
  return Shard(d);
}

void drop_shards_unless_an_input_is_sharded(const OpCall& call, std::vector<DimStrategy>& candidates) {
  for (const DTensorSpec& spec : call.inputs) {
    for (const Placement& p : spec.placements) {
      if (p.is_shard()) return;
    }
  }
  // An out= call's out tensor is an argument too, whose shards PyTorch fills
  // placeholders with (Note [Derived rules: out= and in-place overloads]).
  if (call.out_placements != nullptr) {
    for (const Placement& p : *call.out_placements) {
      if (p.is_shard()) return;
    }
  }
  auto shards = [](const DimStrategy& s) {
    return std::any_of(s.inputs.begin(), s.inputs.end(), [](const Placement& p) { return p.is_shard(); });
  };
  candidates.erase(std::remove_if(candidates.begin(), candidates.end(), shards), candidates.end());
}

DimRule single_dim_strategy(DimRule rule) {
  return [rule = std::move(rule)](const OpCall& call, int mesh_dim) {
    std::vector<DimStrategy> candidates = rule(call, mesh_dim);
    drop_shards_unless_an_input_is_sharded(call, candidates);
    return candidates;
  };
}

bool tensor_shardable(const OpCall& call, const std::vector<Placements>& inputs, bool allow_uneven) {
  for (size_t i = 0; i < call.inputs.size() && i < inputs.size(); ++i) {
    const DTensorSpec& spec = call.inputs[i];
    if (allow_uneven && inputs[i] == spec.placements) continue;
    for (int64_t dim = 0; dim < static_cast<int64_t>(spec.meta.shape.size()); ++dim) {
      int64_t ranks = 1;
      for (size_t m = 0; m < inputs[i].size(); ++m) {
        if (inputs[i][m].is_shard() && inputs[i][m].shard_dim() == dim) ranks *= spec.mesh.size(static_cast<int>(m));
      }
      if (spec.meta.shape[static_cast<size_t>(dim)] < ranks) return false;
    }
  }
  return true;
}

ShardingRule single_dim_rule(DimRule rule, SingleDimOptions options) {
  PlanCheck check = [options](const OpCall& call, const std::vector<Placements>& inputs) {
    return tensor_shardable(call, inputs, options.allow_uneven) && (!options.check || options.check(call, inputs));
  };
  return per_mesh_dim(single_dim_strategy(std::move(rule)), std::move(check));
}

}  // namespace dtensor::detail
