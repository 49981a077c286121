// Operators on _StridedShard inputs. See strided_inputs.h and Note
// [Operators on strided shards].
#include "core/dispatch/strided_inputs.h"

#include <c10/util/Exception.h>

#include <optional>
#include <vector>

#include "layout/shard_layout.h"

namespace dtensor {
namespace {

// Mesh dims on which some input is a _StridedShard.
std::vector<int> strided_mesh_dims(const OpCall& call) {
  std::vector<int> dims;
  for (int i = 0; i < call.mesh_ndim(); ++i) {
    for (const DTensorSpec& in : call.inputs) {
      if (in.placements[static_cast<size_t>(i)].is_strided_shard()) {
        dims.push_back(i);
        break;
      }
    }
  }
  return dims;
}

bool is_scalar(const DTensorSpec& spec) { return spec.meta.shape.empty(); }

// `placements` with every _StridedShard(d, sf) replaced by `replacement(d)`.
template <typename Replacement>
Placements replace_strided(Placements placements, Replacement replacement) {
  for (Placement& p : placements) {
    if (p.is_strided_shard()) p = replacement(p.shard_dim());
  }
  return placements;
}

// The rule's plan with S(d) standing in for every _S(d, sf), mapped back;
// nullopt where Note [Operators on strided shards] says it is not exact.
std::optional<ShardingPlan> stand_in_plan(const ShardingRule& rule, const OpCall& call,
                                          const std::vector<int>& strided) {
  const DTensorSpec* ref = nullptr;
  for (const DTensorSpec& in : call.inputs) {
    if (!is_scalar(in)) {
      ref = &in;
      break;
    }
  }
  if (ref == nullptr) return std::nullopt;
  for (const DTensorSpec& in : call.inputs) {
    if (is_scalar(in) ? !in.is_replicated()
                      : in.placements != ref->placements || in.meta.shape != ref->meta.shape) {
      return std::nullopt;
    }
  }
  const Placements stand_in = replace_strided(ref->placements, [](int64_t d) { return Shard(d); });
  const MeshShape& mesh = call.mesh.mesh_shape();
  if (is_evenly_sharded(ref->meta.shape, mesh, ref->placements) !=
      is_evenly_sharded(ref->meta.shape, mesh, stand_in)) {
    return std::nullopt;
  }
  OpCall sub = call;
  for (DTensorSpec& in : sub.inputs) {
    if (!is_scalar(in)) in.placements = stand_in;
  }
  ShardingPlan plan;
  try {
    plan = rule(sub);
  } catch (const c10::Error&) {
    return std::nullopt;  // the fallback asks again, and reports its own error
  }
  if (!plan.local_kernel.empty() || !plan.local_arg_overrides.empty()) return std::nullopt;
  for (int i : strided) {
    const auto mesh_dim = static_cast<size_t>(i);
    const Placement strided_placement = ref->placements[mesh_dim];
    const Placement shard = stand_in[mesh_dim];
    const auto d = static_cast<size_t>(shard.shard_dim());
    for (size_t k = 0; k < call.inputs.size(); ++k) {
      if (is_scalar(call.inputs[k])) continue;
      if (plan.input_placements[k][mesh_dim] != shard) return std::nullopt;
      plan.input_placements[k][mesh_dim] = strided_placement;
    }
    for (size_t o = 0; o < plan.output_placements.size(); ++o) {
      Placement& out = plan.output_placements[o][mesh_dim];
      if (out.is_partial()) continue;
      const std::vector<int64_t>& shape = call.outputs[o].shape;
      if (out != shard || shape.size() <= d || shape[d] != ref->meta.shape[d]) return std::nullopt;
      out = strided_placement;
    }
  }
  return plan;
}

}  // namespace

ShardingPlan plan_with_strided_inputs(const ShardingRule& rule, const OpCall& call) {
  const std::vector<int> strided = strided_mesh_dims(call);
  // A _foreach_ op's rule asks this of each element (foreach_rules.cc).
  if (strided.empty() || call.name.rfind("aten::_foreach_", 0) == 0) return rule(call);
  if (std::optional<ShardingPlan> plan = stand_in_plan(rule, call, strided)) return *std::move(plan);
  // An in-place op writes its input where it is: gathering it would write a copy.
  if (call.self_input >= 0) {
    const DTensorSpec& self = call.inputs[static_cast<size_t>(call.self_input)];
    TORCH_CHECK(!has_strided_shard(self.placements), call.describe(), " on rank ", call.mesh.global_rank(),
                ": this in-place op cannot run on the _StridedShard tensor it writes (",
                to_string(self.placements), ") without gathering it, and it cannot write a gathered ",
                "copy back; redistribute it first (x = x.redistribute(...)), or call the op out of place");
  }
  // Exact for every op: the rule sees the strided mesh dims gathered.
  OpCall gathered = call;
  for (DTensorSpec& in : gathered.inputs) {
    in.placements = replace_strided(in.placements, [](int64_t) { return Replicate(); });
  }
  return rule(gathered);
}

}  // namespace dtensor
