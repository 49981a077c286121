// Ops that create or copy tensors shaped like an input (clone, detach,
// _to_copy, *_like, fill_, zero_, copy_, new_*), and item().
//   zeros_like(P(sum)) -> R (zeros need no reduction);  copy_(self [S(0)], src [R]) -> src chunked
#include <ATen/Functions.h>
#include <c10/util/Exception.h>

#include <algorithm>

#include "layout/strides.h"
#include "core/collectives.h"
#include "core/ops/arg_parsing.h"
#include "core/ops/builtin_rules.h"
#include "core/ops/strategy_builders.h"

namespace dtensor {
namespace {

using detail::placement_of;

// clone, detach, alias, _to_copy: same placements, Partial included
// (a dtype cast of a Partial(sum) value is still a partial sum).
DimRule same_placements() {
  return [](const OpCall& call, int mesh_dim) {
    return std::vector<DimStrategy>{detail::follow_first_input(call, mesh_dim)};
  };
}

// zeros_like, ones_like, empty_like, full_like: values do not depend
// on the input, so a Partial input gives a Replicate output (ones_like of a
// partial sum must not be summed).
DimRule like_placements() {
  return [](const OpCall& call, int mesh_dim) {
    DimStrategy s = detail::follow_first_input(call, mesh_dim);
    for (auto& out : s.outputs) {
      if (out.is_partial()) out = Replicate();
    }
    return std::vector<DimStrategy>{s};
  };
}

// fill_ / zero_ in place: zero_ keeps any placement (zero partials sum to zero);
// fill_ on a Partial tensor turns it Replicate (every rank holds the value).
ShardingRule fill_rule(bool keeps_partial) {
  return [keeps_partial](const OpCall& call) {
    ShardingPlan plan;
    for (const auto& in : call.inputs) plan.input_placements.push_back(in.placements);
    Placements out = call.inputs[0].placements;
    for (auto& p : out) {
      if (p.is_partial() && !keeps_partial) {
        p = Replicate();
        plan.self_placements_change = true;
      }
    }
    plan.output_placements.assign(call.outputs.size(), out);
    return plan;
  };
}

// copy_(self, src): self keeps its placements, src is redistributed to match
// (broadcast dims of src replicated).
DimRule copy_rule() {
  return [](const OpCall& call, int mesh_dim) {
    const Placement& self = placement_of(call, 0, mesh_dim);
    DimStrategy s{{self}, {self}};
    const auto& dst = call.inputs[0].meta.shape;
    for (size_t i = 1; i < call.inputs.size(); ++i) {
      const auto& src = call.inputs[i].meta.shape;
      Placement p = self;
      if (self.is_shard()) {
        // A dim of size 1 in both is not broadcast: src takes self's split of
        // it (AccumulateGrad copies a [3, 1] S(1) gradient into a new [3, 1]
        // S(1) one, all but one rank empty; PyTorch 2.15 issues nothing).
        const int64_t d = self.shard_dim() - (static_cast<int64_t>(dst.size()) - static_cast<int64_t>(src.size()));
        const bool same_extent = d >= 0 && d < static_cast<int64_t>(src.size()) &&
                                 src[static_cast<size_t>(d)] == dst[static_cast<size_t>(self.shard_dim())];
        p = same_extent ? Placement(Shard(d))
                        : detail::broadcast_operand_shard(src, static_cast<int64_t>(dst.size()), self.shard_dim());
      }
      // A Partial self takes src as the same Partial, broadcast or not: every
      // rank writes a piece and the pieces reduce to src (R -> P(sum) divides
      // by n). Keeping src Replicate would make the sum n * src.
      s.inputs.push_back(p);
    }
    return std::vector<DimStrategy>{s};
  };
}

// copy(self, src) (functional; what copy.out derives from): src broadcast to
// self's shape and dtype, so self gives only the layout. Candidates: every
// tensor Replicate, the result sharded on any dim (self likewise, src on its
// own dim, replicated where src broadcasts), or src's Partial kept with self
// Replicate (only src's values reach the result).
DimRule copy_functional_rule() {
  return [](const OpCall& call, int mesh_dim) {
    const auto& dst = call.inputs[0].meta.shape;
    const auto& src = call.inputs[1].meta.shape;
    std::vector<DimStrategy> candidates{detail::all_replicate(call)};
    const int64_t ndim = static_cast<int64_t>(dst.size());
    for (int64_t d = 0; d < ndim; ++d) {
      candidates.push_back(DimStrategy{{Shard(d), detail::broadcast_operand_shard(src, ndim, d)}, {Shard(d)}});
    }
    const Placement& from = placement_of(call, 1, mesh_dim);
    if (from.is_partial()) candidates.push_back(DimStrategy{{Replicate(), from}, {from}});
    return candidates;
  };
}

// new_empty, new_zeros, new_ones, new_full, new_empty_strided: the size
// argument is global. As in PyTorch, a result shaped like the input keeps the
// input's shards and is created at the local size (a Partial only where the
// fresh values are exact under it, below); any other shape is replicated. AccumulateGrad
// relies on this: it calls new_empty_strided(grad.sizes(), grad.strides())
// when a gradient arrives with other strides (e.g. through a transpose), and
// a replicated result would gather every sharded gradient.
ShardingRule new_factory() {
  return [](const OpCall& call) {
    ShardingPlan plan;
    const DTensorSpec& in = call.inputs[0];
    for (const auto& input : call.inputs) plan.input_placements.push_back(input.placements);
    Placements out(static_cast<size_t>(call.mesh_ndim()), Replicate());
    if (call.outputs[0].shape == in.meta.shape) {
      // Fresh values under a Partial: uninitialized or zeros reduce to what
      // they are under any op; ones or a fill value only under avg, max and
      // min (n ones sum to n). So AccumulateGrad's new_empty_strided +
      // copy_ of a Partial gradient stays Partial, as in PyTorch, where a
      // Replicate buffer all_reduced it (g18_02146).
      const bool any_partial_ok = call.name == "aten::new_empty" || call.name == "aten::new_empty_strided" ||
                                  call.name == "aten::new_zeros";
      out = in.placements;
      for (auto& p : out) {
        if (!p.is_partial() || any_partial_ok) continue;
        if (p.reduce_op() == ReduceOp::kSum || p.reduce_op() == ReduceOp::kProduct) p = Replicate();
      }
    }
    plan.output_placements.assign(call.outputs.size(), out);
    const std::vector<int64_t> local = DTensorSpec{call.mesh, out, call.outputs[0]}.local_shape();
    plan.local_arg_overrides.emplace_back(1, c10::IValue(local));
    if (call.name == "aten::new_empty_strided") {
      // Dense strides for the local sizes, dims ordered as the global strides.
      const std::vector<int64_t> strides = dense_strides_ordered_like(local, call.arg(2).toIntVector());
      plan.local_arg_overrides.emplace_back(2, c10::IValue(strides));
    }
    return plan;
  };
}

// view.dtype(self, dtype): self's bytes read as another dtype. Each mesh
// dim keeps its placement, except that a Partial is reduced first unless
// the reading is linear, a sum or average reading as the same values
// (float64 as complex128 pairs, complex128 as float64 pairs: the bits of a
// partial sum of floats read as integers are no partial sum; PyTorch 2.15
// keeps every Partial and gathers nonsense there), and where the element
// size changes (float64 read as complex128 halves the last dim) a split of
// the last dim is gathered (a shard need not hold whole elements: PyTorch
// 2.15 raises there).
DimRule view_dtype_rule() {
  return [](const OpCall& call, int mesh_dim) {
    const Placement& p = placement_of(call, 0, mesh_dim);
    const int64_t ndim = detail::input_ndim(call, 0);
    const at::ScalarType from = call.inputs[0].meta.dtype;
    const auto to = static_cast<at::ScalarType>(call.arg(1).toInt());
    const bool linear = to == from || (at::isComplexType(to) && c10::toRealValueType(to) == from) ||
                        (at::isComplexType(from) && c10::toRealValueType(from) == to);
    const bool keeps_partial =
        p.is_partial() && (to == from || (linear && (p.reduce_op() == ReduceOp::kSum || p.reduce_op() == ReduceOp::kAvg)));
    const bool resized = c10::elementSize(to) != c10::elementSize(from);
    const bool splits_last = p.splits_dim() && ndim > 0 && p.normalized(ndim).shard_dim() == ndim - 1;
    const Placement q = (p.is_partial() && !keeps_partial) || (resized && (splits_last || p.is_strided_shard()))
                            ? Placement(Replicate())
                            : p;
    return std::vector<DimStrategy>{{{q}, {q}}};
  };
}

// item(), equal(): need the whole value on every rank.
DimRule replicate_all() {
  return [](const OpCall& call, int) { return std::vector<DimStrategy>{detail::all_replicate(call)}; };
}

}  // namespace

void register_tensor_rules(ShardingRegistry& registry) {
  registry.add({"aten::clone", "aten::detach", "aten::detach_", "aten::alias", "aten::_to_copy",
                "aten::lift_fresh", "aten::lift", "aten::_conj", "aten::conj_physical",
                "aten::positive", "aten::contiguous"},
               per_mesh_dim(same_placements()));
  // rand_like, randn_like, randint_like: nn_rules.cc (drawn by the DTensor RNG).
  registry.add({"aten::zeros_like", "aten::ones_like", "aten::empty_like", "aten::full_like"},
               per_mesh_dim(like_placements()));
  // The functional fills (what _foreach_zero_ and the out= forms derive
  // from): zero keeps a Partial (zeros sum to zero), fill.Scalar does not.
  registry.add({"aten::zero"}, per_mesh_dim(same_placements()));
  registry.add({"aten::fill.Scalar"}, per_mesh_dim(like_placements()));
  registry.add({"aten::zero_"}, fill_rule(/*keeps_partial=*/true));
  registry.add({"aten::fill_"}, fill_rule(/*keeps_partial=*/false));
  registry.add({"aten::copy_"}, per_mesh_dim(copy_rule()));
  registry.add({"aten::copy"}, per_mesh_dim(copy_functional_rule()));
  registry.add({"aten::new_empty", "aten::new_zeros", "aten::new_ones", "aten::new_full",
                "aten::new_empty_strided"},
               new_factory());
  registry.add({"aten::_local_scalar_dense", "aten::allclose", "aten::is_nonzero"}, per_mesh_dim(replicate_all()));
  // Not "aten::view"'s rule (a size list), which the name lookup would fall back to.
  registry.add({"aten::view.dtype"}, per_mesh_dim(view_dtype_rule()));
  // equal(a, b) (PyTorch 2.15: a single-dim strategy asking one non-Partial
  // layout of both, then one all_reduce(min) of the answers): per mesh dim
  // both take a shard either has (a Replicate one is chunked for free; a's
  // when both shard differently), else Replicate; each rank compares its
  // shards and the answers meet in one all_reduce(min) over the mesh dims
  // that shard (over the flattened mesh when there are several). Tensors of
  // different global shapes are unequal with no communication.
  constexpr const char* kEqualShards = "dtensor::equal_shards";
  registry.add({"aten::equal"}, [](const OpCall& call) {
    if (call.inputs.size() != 2) return per_mesh_dim(replicate_all())(call);
    const Placements& a = call.inputs[0].placements;
    const Placements& b = call.inputs[1].placements;
    Placements target(a.size(), Replicate());
    const bool same_shape = call.inputs[0].meta.shape == call.inputs[1].meta.shape;
    for (size_t d = 0; d < a.size() && same_shape; ++d) {
      if (a[d].splits_dim()) {
        target[d] = a[d];
      } else if (b[d].splits_dim()) {
        target[d] = b[d];
      }
    }
    ShardingPlan plan;
    plan.input_placements = same_shape ? std::vector<Placements>{target, target} : std::vector<Placements>{a, b};
    plan.local_kernel = kEqualShards;
    return plan;
  });
  registry.add_local_kernel(kEqualShards, [](const LocalCall& c, std::vector<c10::IValue>* stack) {
    const OpCall& call = c.call;
    bool equal = call.inputs[0].meta.shape == call.inputs[1].meta.shape;
    if (equal) {
      const at::Tensor mine = (*stack)[0].toTensor();
      at::Tensor agreed = at::scalar_tensor(at::equal(mine, (*stack)[1].toTensor()) ? 1.0 : 0.0,
                                            mine.options().dtype(at::kDouble));
      std::vector<int> sharded;
      for (int d = 0; d < call.mesh_ndim(); ++d) {
        const Placement& p = c.plan.input_placements[0][static_cast<size_t>(d)];
        if (p.splits_dim() && call.mesh.size(d) > 1) sharded.push_back(d);
      }
      if (sharded.size() == 1) {
        agreed = collectives::all_reduce(agreed, call.mesh, sharded[0], ReduceOp::kMin);
      } else if (sharded.size() > 1) {
        agreed = collectives::all_reduce(agreed, call.mesh.flatten(), 0, ReduceOp::kMin);
      }
      equal = agreed.item<double>() == 1.0;
    }
    stack->clear();
    stack->emplace_back(equal);
  });
  // eye.out(n, *, out) / eye.m_out(n, m, *, out) have no tensor input: out
  // keeps its placements and each rank writes its own piece of the identity
  // (PyTorch 2.15 refuses a sharded out; a replicated one is the same here).
  constexpr const char* kEyePiece = "dtensor::eye_piece";
  registry.add({"aten::eye.out", "aten::eye.m_out"}, [](const OpCall& call) {
    const DTensorSpec& out = call.inputs.at(0);
    TORCH_CHECK(!call.outputs.empty() && call.outputs[0].shape == out.meta.shape, call.describe(),
                ": out has the global shape ", c10::IntArrayRef(out.meta.shape), ", not the identity's ",
                call.outputs.empty() ? c10::IntArrayRef() : c10::IntArrayRef(call.outputs[0].shape),
                "; a DTensor out cannot be resized, so create it with that shape");
    ShardingPlan plan;
    plan.input_placements = {out.placements};
    plan.output_placements = {out.placements};
    plan.local_kernel = kEyePiece;
    return plan;
  });
  registry.add_local_kernel(kEyePiece, [](const LocalCall& c, std::vector<c10::IValue>* stack) {
    const DTensorSpec& out = c.call.inputs.at(0);
    at::Tensor local = stack->back().toTensor();
    const int64_t n = stack->front().toInt();
    const int64_t m = stack->size() == 3 ? (*stack)[1].toInt() : n;
    local.copy_(collectives::slice_of_full(at::eye(n, m, local.options()), out.mesh, out.placements));
    stack->clear();
    stack->emplace_back(local);
  });
  // is_same_size compares the global shapes, as PyTorch's custom handler:
  // no redistribution, no communication, whatever the placements. The
  // shapes are part of the cached decision's key, so the rule answers and
  // the kernel returns the answer.
  constexpr const char* kSameSize = "dtensor::same_size";
  constexpr const char* kNotSameSize = "dtensor::not_same_size";
  registry.add({"aten::is_same_size"}, [](const OpCall& call) {
    ShardingPlan plan;
    for (const DTensorSpec& in : call.inputs) plan.input_placements.push_back(in.placements);
    plan.local_kernel = call.inputs.at(0).meta.shape == call.inputs.at(1).meta.shape ? kSameSize : kNotSameSize;
    plan.local_kernel_reads_no_specs = true;
    return plan;
  });
  for (const bool same : {true, false}) {
    registry.add_local_kernel(same ? kSameSize : kNotSameSize, [same](const LocalCall&, std::vector<c10::IValue>* stack) {
      stack->clear();
      stack->emplace_back(same);
    });
  }
}

}  // namespace dtensor
