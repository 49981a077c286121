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

// Note [Reduce-scatter onto a dim smaller than the group]
// PyTorch's whole-mesh expansion of its matrix products skips a strategy
// that would shard an input dim over more ranks than it has elements
// (is_tensor_shardable). For a Partial input that strategy looks cheapest
// here (a reduce_scatter of a few bytes) but leaves a Partial(sum) product
// that a later step all_reduces, where PyTorch all_reduces the input once
// (issue #18: matmul of a P(min) [2, 3] on 4 ranks). Only Partial inputs are
// filtered: a Replicate input split that way costs nothing and PyTorch's
// alternative (gathering another input) is not cheaper over a program.
void drop_partial_to_tiny_shard(const OpCall& call, int mesh_dim, std::vector<DimStrategy>& candidates) {
  auto tiny = [&](const DimStrategy& s) {
    for (size_t i = 0; i < call.inputs.size() && i < s.inputs.size(); ++i) {
      const Placement& to = s.inputs[i];
      if (!to.is_shard() || !placement_of(call, i, mesh_dim).is_partial()) continue;
      if (call.inputs[i].meta.shape[static_cast<size_t>(to.shard_dim())] < call.mesh.size(mesh_dim)) return true;
    }
    return false;
  };
  candidates.erase(std::remove_if(candidates.begin(), candidates.end(), tiny), candidates.end());
}

// Note [All-to-all onto a dim smaller than the group]
// The same filter of PyTorch (is_tensor_shardable) also refuses moving a
// shard by all_to_all onto a dim with fewer elements than ranks. Here that
// candidate can look cheapest by bytes: the weight gradient of a Linear whose
// batch is 2 or 3 rows over 4 ranks, mm(grad^T [S(0)], x [S(0)]), moves grad^T
// to S(1) (a few bytes) and contracts into a Partial(sum) gradient, where
// PyTorch gathers x into an S(0) gradient, also one collective. The Partial
// gradient is then reduce_scattered again by every in-place optimizer op
// that reads it (s18_0072: Adam, 3 more reduce_scatters; s18_0074, s18_0105:
// SGD, 1 more). Such a candidate is not dropped but costs one more latency:
// still chosen where it saves a whole collective (addmm of [4, 3] S(1) by
// [3, 3] S(1) with a P(sum) bias: one all_to_all, the alternatives three).
// A shard kept where it is (no collective) on such a dim only loses exact
// ties (half a byte): Linear's forward of x [2, 8] S(0) on 4 ranks gathers x
// (output S(1), PyTorch's choice) rather than the weight (output S(0), two
// rows over four ranks; s18_0146's Colwise output then needed an all_to_all
// and its backward a Partial weight gradient). Dropping kept shards as PyTorch
// does made ops on such dims, size-1 dims most, issue more collectives, and
// size-1 dims are left out of the tie-break (g18_01939 moved more bytes).
// The whole-mesh check of nested shards (Note [Whole-mesh check of nested
// shards]) prices whole plans without this extra cost.
void discourage_tiny_shards(const OpCall& call, int mesh_dim, std::vector<DimStrategy>& candidates) {
  const int64_t ranks = call.mesh.size(mesh_dim);
  for (DimStrategy& s : candidates) {
    for (size_t i = 0; i < call.inputs.size() && i < s.inputs.size(); ++i) {
      const Placement& from = placement_of(call, i, mesh_dim);
      const Placement& to = s.inputs[i];
      if (!to.is_shard()) continue;
      const int64_t size = call.inputs[i].meta.shape[static_cast<size_t>(to.shard_dim())];
      if (size >= ranks) continue;
      if (from.is_shard() && !(from == to)) {
        s.extra_cost = step_latency_bytes(StepKind::kAllToAll, ranks);  // an all_to_all onto it
        break;
      }
      if (from == to && size > 1) s.extra_cost = std::max(s.extra_cost, 0.5);  // kept: ties only
    }
  }
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
