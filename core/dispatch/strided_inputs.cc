// Operators on _StridedShard inputs. See strided_inputs.h and Note
// [Operators on strided shards].
#include "core/dispatch/strided_inputs.h"

#include <c10/util/Exception.h>

#include <optional>
#include <string_view>
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

// True for an input that holds no _StridedShard: a "companion" the op
// reads whole on the strided mesh dims (mm's weight beside a strided
// activation), or slices there where it is already whole.
bool is_companion(const DTensorSpec& in) { return !has_strided_shard(in.placements); }

// True when `in` holds its strided rows as `ref` does: on every mesh dim
// the same kind of split (_S with the same split factor, S, or none) of
// dims of the same extent, so both hold the same permutation of rows
// (layout/shard_layout.h). mm's backward contracts a strided [1, 6] _S(1, 3)
// gradient with a [6, 4] _S(0, 3) input over those rows (g18_02146).
bool strided_alike(const DTensorSpec& in, const DTensorSpec& ref) {
  const size_t n = ref.placements.size();
  for (size_t m = 0; m < n; ++m) {
    const Placement& a = in.placements[m];
    const Placement& b = ref.placements[m];
    if (a.is_strided_shard() != b.is_strided_shard()) return false;
    if (!a.is_strided_shard()) continue;
    const int64_t da = a.shard_dim(), db = b.shard_dim();
    if (a.split_factor() != b.split_factor() ||
        in.meta.shape[static_cast<size_t>(da)] != ref.meta.shape[static_cast<size_t>(db)]) {
      return false;
    }
    for (size_t j = 0; j < n; ++j) {
      const Placement& x = in.placements[j];
      const Placement& y = ref.placements[j];
      if (x.splits_dim(da) != y.splits_dim(db)) return false;
      if (x.splits_dim(da) && (x.is_strided_shard() != y.is_strided_shard() ||
                               (x.is_strided_shard() && x.split_factor() != y.split_factor()))) {
        return false;
      }
    }
  }
  return true;
}

// The rule's plan with S(d) standing in for every _S(d, sf), mapped back;
// nullopt where Note [Operators on strided shards] says it is not exact.
std::optional<ShardingPlan> stand_in_plan(const ShardingRule& rule, const OpCall& call,
                                          const std::vector<int>& strided) {
  const DTensorSpec* ref = nullptr;
  for (const DTensorSpec& in : call.inputs) {
    if (has_strided_shard(in.placements)) {
      ref = &in;
      break;
    }
  }
  if (ref == nullptr) return std::nullopt;
  std::vector<bool> companion(call.inputs.size(), false);
  for (size_t k = 0; k < call.inputs.size(); ++k) {
    const DTensorSpec& in = call.inputs[k];
    if (is_scalar(in)) {
      if (!in.is_replicated()) return std::nullopt;
    } else if (is_companion(in)) {
      companion[k] = true;
    } else if (!strided_alike(in, *ref)) {
      return std::nullopt;
    }
  }
  const auto to_shard = [](int64_t d) { return Shard(d); };
  const MeshShape& mesh = call.mesh.mesh_shape();
  bool evenness_differs = false;
  OpCall sub = call;
  for (size_t k = 0; k < sub.inputs.size(); ++k) {
    if (is_scalar(sub.inputs[k]) || companion[k]) continue;
    const DTensorSpec& in = call.inputs[k];
    sub.inputs[k].placements = replace_strided(in.placements, to_shard);
    evenness_differs = evenness_differs || is_evenly_sharded(in.meta.shape, mesh, in.placements) !=
                                               is_evenly_sharded(in.meta.shape, mesh, sub.inputs[k].placements);
  }
  ShardingPlan plan;
  try {
    plan = rule(sub);
  } catch (const c10::Error&) {
    return std::nullopt;  // the fallback asks again, and reports its own error
  }
  if (!plan.local_kernel.empty() && !plan.local_kernel_any_layout) return std::nullopt;
  // An override other than output 0's local shape (recomputed below) reads
  // shard sizes or offsets of the stand-in layout.
  for (const auto& [index, value] : plan.local_arg_overrides) {
    if (static_cast<int>(index) != plan.local_shape_arg) return std::nullopt;
  }
  for (int i : strided) {
    const auto mesh_dim = static_cast<size_t>(i);
    const Placement strided_placement = ref->placements[mesh_dim];
    const int64_t extent = ref->meta.shape[static_cast<size_t>(strided_placement.shard_dim())];
    for (size_t k = 0; k < call.inputs.size(); ++k) {
      if (is_scalar(call.inputs[k])) continue;
      if (companion[k]) {
        // Gathered or kept whole, or, where it is whole already, split
        // like the strided input along a dim of the same extent (R -> _S is
        // a local slice): PyTorch's placeholders take the strided kind on
        // every operand of that mesh dim. The rule saw the companion's own
        // placements, so a gather is priced; a split of a sharded companion
        // would be priced as S(e) -> S(e) but is S(e) -> _S(e, sf), not free
        // (mm of a strided activation by an S(1) weight gathers the weight,
        // g18_02146, as PyTorch 2.15).
        Placement& planned = plan.input_placements[k][mesh_dim];
        if (planned.is_replicate()) continue;
        const auto& shape = call.inputs[k].meta.shape;
        if (!planned.is_shard() || !call.inputs[k].placements[mesh_dim].is_replicate() ||
            shape[static_cast<size_t>(planned.shard_dim())] != extent) {
          return std::nullopt;
        }
        planned = StridedShard(planned.shard_dim(), strided_placement.split_factor());
        continue;
      }
      // Each strided input kept as its own stand-in S(d_k).
      if (plan.input_placements[k][mesh_dim] != sub.inputs[k].placements[mesh_dim]) return std::nullopt;
      plan.input_placements[k][mesh_dim] = call.inputs[k].placements[mesh_dim];
    }
    for (size_t o = 0; o < plan.output_placements.size(); ++o) {
      Placement& out = plan.output_placements[o][mesh_dim];
      if (out.is_partial()) {
        // Only a sum is exact whatever the pieces' sizes (a mean over uneven
        // pieces is not, and an extremum of an empty piece fails).
        if (evenness_differs && out.reduce_op() != ReduceOp::kSum) return std::nullopt;
        continue;
      }
      // S(d) or S(e) of the same extent (a transpose renumbers the dim: its
      // rows are the same rows), which becomes _S(e, sf).
      const std::vector<int64_t>& shape = call.outputs[o].shape;
      if (!out.is_shard()) return std::nullopt;
      const auto e = static_cast<size_t>(out.shard_dim());
      if (shape.size() <= e || shape[e] != extent) return std::nullopt;
      out = StridedShard(out.shard_dim(), strided_placement.split_factor());
    }
  }
  for (auto& [index, value] : plan.local_arg_overrides) {  // only the local shape is left (above)
    value = c10::IValue(DTensorSpec{call.mesh, plan.output_placements[0], call.outputs[0]}.local_shape());
  }
  return plan;
}

// Reshapes map _StridedShard inputs themselves (Note [Strided shards
// through a split] in core/ops/view_reshape_rule.cc); the new_* factories
// copy the input's placements, strided ones included, and size the local
// result from them (tensor_rules.cc: AccumulateGrad's new_empty_strided for
// a strided gradient, v18_0202).
bool reads_strided_inputs(std::string_view name) {
  return name == "aten::view" || name == "aten::_unsafe_view" || name == "aten::view_copy" ||
         name == "aten::_reshape_alias" || name == "aten::new_empty" || name == "aten::new_zeros" ||
         name == "aten::new_ones" || name == "aten::new_full" || name == "aten::new_empty_strided";
}

}  // namespace

ShardingPlan plan_with_strided_inputs(const ShardingRule& rule, const OpCall& call) {
  const std::vector<int> strided = strided_mesh_dims(call);
  // A _foreach_ op's rule asks this of each element (foreach_rules.cc).
  if (strided.empty() || call.name.rfind("aten::_foreach_", 0) == 0 || reads_strided_inputs(call.name)) {
    return rule(call);
  }
  if (std::optional<ShardingPlan> plan = stand_in_plan(rule, call, strided)) return *std::move(plan);
  // An in-place op writes its input where it is: gathering it would write a copy.
  if (call.self_input >= 0) {
    const DTensorSpec& self = call.inputs[static_cast<size_t>(call.self_input)];
    TORCH_CHECK(!has_strided_shard(self.placements), call.describe(), " on rank ", call.mesh.global_rank(),
                ": this in-place op cannot run on the _StridedShard tensor it writes (",
                to_string(self.placements), ") without gathering it, and it cannot write a gathered ",
                "copy back; redistribute it first (x = x.redistribute(...)), or call the op out of place");
  }
  // Exact for every op: the rule sees the strided mesh dims gathered, and
  // with them every later mesh dim that splits the same tensor dim, which
  // the gather undoes first (Note [Redistribute step legality]): keeping
  // such a split is then a fresh local chunk, not free (v18_0150: mul of
  // [_S(0, 2), S(0)] by [S(0), R] kept S(0) on mesh dim 1, so its result
  // was gathered once more; PyTorch's is Replicate).
  OpCall gathered = call;
  for (DTensorSpec& in : gathered.inputs) {
    Placements& p = in.placements;
    for (size_t i = 0; i < p.size(); ++i) {
      if (!p[i].is_strided_shard()) continue;
      const int64_t d = p[i].shard_dim();
      for (size_t j = i; j < p.size(); ++j) {
        if (j == i || p[j].splits_dim(d)) p[j] = Replicate();
      }
    }
  }
  return rule(gathered);
}

}  // namespace dtensor
