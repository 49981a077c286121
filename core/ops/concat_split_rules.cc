// Concatenation and splitting: split / split_with_sizes / unbind (chunk and
// narrow decompose to split and slice before reaching us), cat, stack,
// repeat, flip, roll, index_select, gather, scatter, and the backward helpers
// slice_backward / select_backward. A shard moves with its dim when the op
// leaves that dim alone; a shard of the dim the op cuts, joins or reorders is
// gathered first (as PyTorch DTensor does).
//   split([S(0)] f[8,6], 3, dim=1) -> S(0), S(0);  cat([S(0)], [S(0)], dim=1) -> S(0)
//   cat([S(1)], [S(1)], dim=1) -> inputs gathered to R
#include <c10/util/Exception.h>

#include <algorithm>

#include "core/ops/arg_parsing.h"
#include "core/ops/builtin_rules.h"
#include "core/ops/strategy_builders.h"

namespace dtensor {
namespace {

using detail::placement_of;

int64_t dim_arg(const OpCall& call, size_t arg, int64_t ndim, int64_t fallback = 0) {
  return detail::wrap_dim(detail::int_arg(call, arg, fallback), ndim);
}

// split.Tensor / split_with_sizes / unbind.int (self, ..., dim): every piece
// keeps a shard of another dim; unbind drops `dim` from the outputs.
DimRule split_rule(size_t dim_arg_index, bool removes_dim) {
  return [dim_arg_index, removes_dim](const OpCall& call, int mesh_dim) {
    const int64_t dim = dim_arg(call, dim_arg_index, detail::input_ndim(call, 0));
    std::vector<DimStrategy> candidates{detail::all_replicate(call)};
    const Placement& p = placement_of(call, 0, mesh_dim);
    if (p.is_partial()) {
      candidates.push_back(detail::every_tensor_as(call, p));  // slicing is linear
    } else if (p.is_shard() && p.shard_dim() != dim) {
      const int64_t d = p.shard_dim();
      DimStrategy s{{p}, std::vector<Placement>(call.outputs.size(),
                                                Shard(removes_dim && d > dim ? d - 1 : d))};
      candidates.push_back(s);
    }
    return candidates;
  };
}

// Inputs of cat that take part (LibTorch skips legacy 1-D empty tensors).
bool joins(const OpCall& call, size_t i, int64_t out_ndim) {
  const auto& shape = call.inputs[i].meta.shape;
  return !(shape.size() == 1 && shape[0] == 0 && out_ndim != 1);
}

// cat(tensors, dim) / stack(tensors, dim): all inputs sharded on one dim the
// op does not join; all Partial with the same op (both ops only place values).
DimRule join_rule(bool stacks) {
  return [stacks](const OpCall& call, int mesh_dim) {
    const int64_t out_ndim = detail::output_ndim(call, 0);
    const int64_t out_dim = detail::wrap_dim(detail::int_arg(call, 1, 0), out_ndim);
    std::vector<DimStrategy> candidates{detail::all_replicate(call)};
    std::vector<int64_t> tried;
    for (size_t i = 0; i < call.inputs.size(); ++i) {
      const Placement& p = placement_of(call, i, mesh_dim);
      if (p.is_partial()) {
        DimStrategy s = detail::every_tensor_as(call, p);
        for (size_t j = 0; j < call.inputs.size(); ++j) {
          if (!joins(call, j, out_ndim)) s.inputs[j] = Replicate();
        }
        candidates.push_back(s);
        if (p.reduce_op() == ReduceOp::kMax || p.reduce_op() == ReduceOp::kMin ||
            p.reduce_op() == ReduceOp::kAvg) {
          // max, min and avg of equal values are that value: a Replicate
          // input joins a Partial(max|min|avg) one as it is (PyTorch keeps
          // cat([R], [P(max)]) -> P(max) without a collective).
          for (size_t j = 0; j < call.inputs.size(); ++j) {
            if (placement_of(call, j, mesh_dim) != p) s.inputs[j] = Replicate();
          }
          candidates.push_back(s);
        }
        continue;
      }
      if (!p.is_shard() || !joins(call, i, out_ndim)) continue;
      const int64_t d = p.shard_dim();
      const int64_t o = stacks && d >= out_dim ? d + 1 : d;
      if (o == out_dim || std::find(tried.begin(), tried.end(), d) != tried.end()) continue;
      tried.push_back(d);
      DimStrategy s = detail::every_tensor_as(call, Shard(d));
      for (size_t j = 0; j < call.inputs.size(); ++j) {
        if (!joins(call, j, out_ndim)) s.inputs[j] = Replicate();
      }
      s.outputs.assign(call.outputs.size(), Shard(o));
      candidates.push_back(s);
    }
    return candidates;
  };
}

// repeat(self, repeats): input dims align right; a dim repeated more than
// once would interleave the shards, so only dims with repeat 1 keep a shard.
DimRule repeat_rule() {
  return [](const OpCall& call, int mesh_dim) {
    const std::vector<int64_t> repeats = call.arg(1).toIntVector();
    const int64_t offset = static_cast<int64_t>(repeats.size()) - detail::input_ndim(call, 0);
    std::vector<DimStrategy> candidates{detail::all_replicate(call)};
    const Placement& p = placement_of(call, 0, mesh_dim);
    if (p.is_partial()) {
      candidates.push_back(detail::every_tensor_as(call, p));
    } else if (p.is_shard() && repeats[static_cast<size_t>(p.shard_dim() + offset)] == 1) {
      candidates.push_back(DimStrategy{{p}, {Shard(p.shard_dim() + offset)}});
    }
    return candidates;
  };
}

// Ops that keep every dim but reorder/index along some (`touched`): flip,
// roll, index_select-like. A shard of an untouched dim stays; Partial stays
// when the op is linear in `self`.
DimRule keep_untouched_dims(std::function<std::vector<int64_t>(const OpCall&)> touched, bool linear) {
  return [touched, linear](const OpCall& call, int mesh_dim) {
    std::vector<DimStrategy> candidates{detail::all_replicate(call)};
    const Placement& p = placement_of(call, 0, mesh_dim);
    if (p.is_partial() && linear) {
      DimStrategy s = detail::all_replicate(call);
      s.inputs[0] = p;
      s.outputs.assign(call.outputs.size(), p);
      candidates.push_back(s);
    } else if (p.is_shard()) {
      std::vector<int64_t> dims = touched(call);
      if (std::find(dims.begin(), dims.end(), p.shard_dim()) == dims.end()) {
        DimStrategy s = detail::all_replicate(call);
        s.inputs[0] = p;
        s.outputs.assign(call.outputs.size(), p);
        candidates.push_back(s);
      }
    }
    return candidates;
  };
}

std::vector<int64_t> flip_dims(const OpCall& call) {
  return detail::dims_arg(call, 1, detail::input_ndim(call, 0), /*empty_means_all=*/false);
}

std::vector<int64_t> roll_dims(const OpCall& call) {
  // roll without dims rolls the flattened tensor: every dim is touched.
  return detail::dims_arg(call, 2, detail::input_ndim(call, 0), /*empty_means_all=*/true);
}

std::vector<int64_t> dim_arg1(const OpCall& call) { return {dim_arg(call, 1, detail::input_ndim(call, 0))}; }

// index_select(self, dim, index): a shard of another dim of self stays; a
// sharded index (1-D) shards the output's `dim`.
DimRule index_select_rule() {
  DimRule keep = keep_untouched_dims(dim_arg1, /*linear=*/true);
  return [keep](const OpCall& call, int mesh_dim) {
    std::vector<DimStrategy> candidates = keep(call, mesh_dim);
    const int64_t dim = dim_arg(call, 1, detail::input_ndim(call, 0));
    if (placement_of(call, 1, mesh_dim).is_shard()) {
      candidates.push_back(DimStrategy{{Replicate(), Shard(0)}, {Shard(dim)}});
    }
    return candidates;
  };
}

// gather(self, dim, index) and scatter(self, dim, index, src) / scatter_add:
// every tensor sharded on the same dim d != dim, when index (and src) match
// self's size there, so the local index addresses local rows.
DimRule gather_scatter_rule() {
  return [](const OpCall& call, int mesh_dim) {
    const int64_t ndim = detail::input_ndim(call, 0);
    const int64_t dim = dim_arg(call, 1, ndim);
    std::vector<DimStrategy> candidates{detail::all_replicate(call)};
    for (size_t i = 0; i < call.inputs.size(); ++i) {
      const Placement& p = placement_of(call, i, mesh_dim);
      if (!p.is_shard() || p.shard_dim() == dim) continue;
      const int64_t d = p.shard_dim();
      bool aligned = true;
      for (const auto& in : call.inputs) {
        aligned = aligned && static_cast<int64_t>(in.meta.shape.size()) == ndim &&
                  in.meta.shape[static_cast<size_t>(d)] == call.inputs[0].meta.shape[static_cast<size_t>(d)];
      }
      if (aligned) candidates.push_back(detail::every_tensor_as(call, Shard(d)));
      break;
    }
    return candidates;
  };
}

// gather(self, dim, index): as gather_scatter_rule, and also the index
// sharded on the gathered dim with self whole: out[i][j] = self[index[i][j]][j]
// reads, along `dim`, only its index element, so the output is sharded like
// the index there (along another dim, j is a global position: self would
// have to be sharded alike, which gather_scatter_rule offers). A candidate
// PyTorch 2.15 has (x18_2003 gathers the index for an out laid out so).
DimRule gather_rule() {
  return [](const OpCall& call, int mesh_dim) {
    std::vector<DimStrategy> candidates = gather_scatter_rule()(call, mesh_dim);
    const int64_t dim = dim_arg(call, 1, detail::input_ndim(call, 0));
    const Placement& index = placement_of(call, 1, mesh_dim);
    if (index.is_shard(dim)) candidates.push_back(DimStrategy{{Replicate(), index}, {index}});
    if (call.out_placements != nullptr) {
      const Placement& out = (*call.out_placements)[static_cast<size_t>(mesh_dim)];
      if (out.is_shard(dim) && !(index == out)) candidates.push_back(DimStrategy{{Replicate(), out}, {out}});
    }
    return candidates;
  };
}

// index_add(self, dim, index, source, alpha) (index_select's backward): self
// and source sharded alike on a dim other than `dim`, the index whole; linear
// in (self, source), so both Partial(sum) stay Partial.
DimRule index_add_rule() {
  return [](const OpCall& call, int mesh_dim) {
    const int64_t dim = dim_arg(call, 1, detail::input_ndim(call, 0));
    std::vector<DimStrategy> candidates{detail::all_replicate(call)};
    for (size_t i : {size_t{0}, size_t{2}}) {
      const Placement& p = placement_of(call, i, mesh_dim);
      if (p.is_shard() && p.shard_dim() != dim) {
        candidates.push_back(DimStrategy{{p, Replicate(), p}, {p}});
      } else if (p.is_partial() && p.reduce_op() == ReduceOp::kSum) {
        candidates.push_back(DimStrategy{{p, Replicate(), p}, {p}});
      }
    }
    return candidates;
  };
}

// slice_backward(grad, input_sizes, dim, start, end, step) and
// select_backward(grad, input_sizes, dim, index): zeros of the input's size
// with the gradient placed at the slice. A shard of another dim stays (the
// sizes become local sizes); the gradient is linear, so Partial stays.
ShardingRule index_backward_rule(bool removes_dim) {
  DimRule rule = [removes_dim](const OpCall& call, int mesh_dim) {
    const int64_t out_ndim = detail::output_ndim(call, 0);
    const int64_t dim = detail::wrap_dim(detail::int_arg(call, 2, 0), out_ndim);
    std::vector<DimStrategy> candidates{detail::all_replicate(call)};
    const Placement& p = placement_of(call, 0, mesh_dim);
    if (p.is_partial()) {
      candidates.push_back(detail::every_tensor_as(call, p));
    } else if (p.is_shard()) {
      const int64_t o = removes_dim && p.shard_dim() >= dim ? p.shard_dim() + 1 : p.shard_dim();
      if (o != dim) candidates.push_back(DimStrategy{{p}, {Shard(o)}});
    }
    return candidates;
  };
  return [rule](const OpCall& call) {
    ShardingPlan plan = expand_per_mesh_dim(call, rule);
    DTensorSpec out{call.mesh, plan.output_placements[0], call.outputs[0]};
    plan.local_arg_overrides.emplace_back(1, c10::IValue(out.local_shape()));
    return plan;
  };
}

}  // namespace

void register_concat_split_rules(ShardingRegistry& registry) {
  registry.add({"aten::split.Tensor", "aten::split_copy.Tensor", "aten::unsafe_split.Tensor"},
               per_mesh_dim(split_rule(/*dim_arg_index=*/2, /*removes_dim=*/false)));
  registry.add({"aten::split_with_sizes", "aten::split_with_sizes_copy",
                "aten::unsafe_split_with_sizes"},
               per_mesh_dim(split_rule(/*dim_arg_index=*/2, /*removes_dim=*/false)));
  registry.add({"aten::unbind.int", "aten::unbind_copy.int"},
               per_mesh_dim(split_rule(/*dim_arg_index=*/1, /*removes_dim=*/true)));
  registry.add({"aten::cat", "aten::cat.out"},
               per_mesh_dim(join_rule(/*stacks=*/false)));
  registry.add({"aten::stack", "aten::stack.out"}, per_mesh_dim(join_rule(/*stacks=*/true)));
  registry.add({"aten::repeat"}, per_mesh_dim(repeat_rule()));
  registry.add({"aten::flip"}, per_mesh_dim(keep_untouched_dims(flip_dims, /*linear=*/true)));
  registry.add({"aten::roll"}, per_mesh_dim(keep_untouched_dims(roll_dims, /*linear=*/true)));
  // A single-dim strategy in PyTorch 2.15: an index split into more pieces
  // than it has elements is gathered (g18_01879: a [3] [S(0), S(0)] index on
  // 2x2 is gathered on mesh dim 1 for an [S(0), R] output, whose gradient's
  // index_add_ then gathers once fewer).
  registry.add({"aten::index_select"}, detail::single_dim_rule(index_select_rule()));
  registry.add({"aten::gather"}, per_mesh_dim(gather_rule()));
  registry.add({"aten::scatter.src", "aten::scatter_.src", "aten::scatter.value",
                "aten::scatter_.value", "aten::scatter_add", "aten::scatter_add_"},
               per_mesh_dim(gather_scatter_rule()));
  registry.add({"aten::index_add", "aten::index_add_"}, per_mesh_dim(index_add_rule()));
  registry.add({"aten::slice_backward"}, index_backward_rule(/*removes_dim=*/false));
  registry.add({"aten::select_backward"}, index_backward_rule(/*removes_dim=*/true));
}

}  // namespace dtensor
