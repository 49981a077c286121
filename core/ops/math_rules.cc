// Math ops that need a whole dim at once: softmax / log_softmax and their
// backward, logsumexp, var / std (and var_mean / std_mean), cumsum, topk,
// sort, tril / triu, and vector norms. A shard of that dim is gathered first (the output
// is Replicate there, as in PyTorch DTensor); shards of other dims stay.
//   _softmax([S(0)] f[8,6], dim=1) -> S(0);  _softmax([S(1)], dim=1) -> input gathered, R
//   topk([S(1)], k, dim=1) -> 1 all_gather;  var([S(0)], dim=1) -> S(0)
#include <c10/util/Exception.h>

#include <algorithm>

#include "core/ops/arg_parsing.h"
#include "core/ops/builtin_rules.h"
#include "core/ops/strategy_builders.h"

namespace dtensor {
namespace {

using detail::placement_of;

// keepdim_arg of ops whose output keeps every dim (softmax, cumsum, topk, sort).
constexpr size_t kKeepsDims = static_cast<size_t>(-1);
// dims arg of full reductions (no dims argument: every dim is reduced).
constexpr size_t kAllDims = static_cast<size_t>(-1);

// Where an op finds the dims it works along.
struct DimsSpec {
  size_t arg = 1;               // schema argument with the dim / dims
  bool none_means_all = false;  // int[]? None (or []) = every dim
  size_t keepdim_arg = kKeepsDims;  // bool keepdim argument, or kKeepsDims
};

std::vector<int64_t> worked_dims(const OpCall& call, const DimsSpec& spec) {
  const int64_t ndim = detail::input_ndim(call, 0);
  if (spec.arg < call.num_args() && call.arg(spec.arg).isInt()) {
    return {detail::wrap_dim(call.arg(spec.arg).toInt(), ndim)};
  }
  std::vector<int64_t> dims = detail::dims_arg(call, spec.arg, ndim, spec.none_means_all);
  std::sort(dims.begin(), dims.end());
  dims.erase(std::unique(dims.begin(), dims.end()), dims.end());
  return dims;
}

// One input (self), any number of outputs; `dims` must not be sharded and a
// Partial input is reduced first. Outputs drop the dims unless keepdim.
DimRule whole_dims_rule(DimsSpec spec) {
  return [spec](const OpCall& call, int mesh_dim) {
    std::vector<int64_t> dims = worked_dims(call, spec);
    const bool keepdim = spec.keepdim_arg == kKeepsDims || detail::bool_arg(call, spec.keepdim_arg, false);
    std::vector<DimStrategy> candidates{detail::all_replicate(call)};
    auto shard_on = [&](int64_t in_dim) {
      const int64_t o = keepdim ? in_dim : detail::dim_after_removal(in_dim, dims);
      DimStrategy s = detail::all_replicate(call);
      s.inputs[0] = Shard(in_dim);
      for (size_t i = 0; i < call.outputs.size(); ++i) {
        if (detail::output_ndim(call, i) > o) s.outputs[i] = Shard(o);
      }
      candidates.push_back(s);
    };
    auto worked = [&](int64_t d) { return std::find(dims.begin(), dims.end(), d) != dims.end(); };
    const Placement& p = placement_of(call, 0, mesh_dim);
    if (p.is_shard() && !worked(p.shard_dim())) shard_on(p.shard_dim());
    // An out= call whose out is sharded where the input is not: the input
    // dim that output dim comes from (PyTorch offers every unworked dim).
    if (call.out_placements != nullptr) {
      const Placement& out = (*call.out_placements)[static_cast<size_t>(mesh_dim)];
      if (out.is_shard()) {
        int64_t in_dim = out.shard_dim();
        for (int64_t d = 0, kept = 0; !keepdim && d < detail::input_ndim(call, 0); ++d) {
          if (worked(d)) continue;
          if (kept++ == out.shard_dim()) {
            in_dim = d;
            break;
          }
        }
        const bool already = p.is_shard() && p.shard_dim() == in_dim;
        if (in_dim < detail::input_ndim(call, 0) && !worked(in_dim) && !already) shard_on(in_dim);
      }
    }
    return candidates;
  };
}

// cumsum(self, dim): like whole_dims_rule, and linear, so Partial(sum) stays.
DimRule cumsum_rule() {
  DimRule base = whole_dims_rule(DimsSpec{1, false, kKeepsDims});
  return [base](const OpCall& call, int mesh_dim) {
    std::vector<DimStrategy> candidates = base(call, mesh_dim);
    const Placement& p = placement_of(call, 0, mesh_dim);
    if (p.is_partial() && (p.reduce_op() == ReduceOp::kSum || p.reduce_op() == ReduceOp::kAvg)) {
      candidates.push_back(detail::every_tensor_as(call, p));
    }
    return candidates;
  };
}

// _softmax_backward_data(grad_output, output, dim, input_dtype) and the
// log_softmax one: both tensors sharded alike on a dim other than `dim`; the
// gradient is linear in grad_output, so a Partial grad_output with a
// replicated output stays Partial.
DimRule softmax_backward_rule() {
  return [](const OpCall& call, int mesh_dim) {
    const int64_t dim = detail::wrap_dim(detail::int_arg(call, 2, -1), detail::input_ndim(call, 0));
    std::vector<DimStrategy> candidates{detail::all_replicate(call)};
    for (size_t i = 0; i < call.inputs.size(); ++i) {
      const Placement& p = placement_of(call, i, mesh_dim);
      if (p.is_shard() && p.shard_dim() != dim) candidates.push_back(detail::every_tensor_as(call, p));
    }
    const Placement& g = placement_of(call, 0, mesh_dim);
    if (g.is_partial() && (g.reduce_op() == ReduceOp::kSum || g.reduce_op() == ReduceOp::kAvg)) {
      candidates.push_back(DimStrategy{{g, Replicate()}, {g}});
    }
    return candidates;
  };
}

// tril / triu(self, diagonal): the mask depends on global row and column
// indices, so the last two dims stay whole; batch dims may stay sharded, and
// the op is linear (tril(a + b) = tril(a) + tril(b)), so Partial(sum/avg)
// stays. PyTorch replicates everything here (linalg_replicate_strategy).
DimRule triangle_rule() {
  return [](const OpCall& call, int mesh_dim) {
    const int64_t ndim = detail::input_ndim(call, 0);
    std::vector<DimStrategy> candidates{detail::all_replicate(call)};
    const Placement& p = placement_of(call, 0, mesh_dim);
    if ((p.is_shard() && p.shard_dim() < ndim - 2) ||
        (p.is_partial() && (p.reduce_op() == ReduceOp::kSum || p.reduce_op() == ReduceOp::kAvg))) {
      candidates.push_back(detail::every_tensor_as(call, p));
    }
    return candidates;
  };
}

// linalg_cross(self, other, dim=-1): pointwise on every dim but the
// length-3 cross-product dim, which stays whole (PyTorch 2.15's rule).
DimRule cross_rule() {
  return [](const OpCall& call, int mesh_dim) {
    const int64_t ndim = detail::output_ndim(call, 0);
    const int64_t cross = detail::wrap_dim(detail::int_arg(call, 2, -1), ndim);
    std::vector<DimStrategy> candidates{detail::all_replicate(call)};
    for (size_t i = 0; i < call.inputs.size(); ++i) {
      const Placement& p = placement_of(call, i, mesh_dim);
      if (p.is_shard() && p.shard_dim() != cross && detail::input_ndim(call, 0) == ndim &&
          detail::input_ndim(call, 1) == ndim) {
        candidates.push_back(detail::every_tensor_as(call, p));
      }
    }
    return candidates;
  };
}

// bucketize.Tensor(self, boundaries, out_int32, right): elementwise in self
// with the boundaries replicated; or the boundaries split, self replicated,
// each rank counting the boundaries below each value (a partial sum of the
// index); monotone in self, so a P(max|min) self stays so (PyTorch 2.15).
DimRule bucketize_rule() {
  return [](const OpCall& call, int mesh_dim) {
    std::vector<DimStrategy> candidates{detail::all_replicate(call)};
    const Placement& p = placement_of(call, 0, mesh_dim);
    if (p.is_shard()) candidates.push_back(DimStrategy{{p, Replicate()}, {p}});
    if (p.is_partial() && (p.reduce_op() == ReduceOp::kMax || p.reduce_op() == ReduceOp::kMin)) {
      candidates.push_back(DimStrategy{{p, Replicate()}, {p}});
    }
    if (placement_of(call, 1, mesh_dim).is_shard(0)) candidates.push_back(DimStrategy{{Replicate(), Shard(0)}, {Partial()}});
    return candidates;
  };
}

// histc(self, bins, min, max): with the range given, the histogram of a
// shard is a partial count; with min = max = 0 each shard would take its own
// range, so the input is gathered (the zeroness of both is part of the
// sharding cache key, Note [Sharding cache key]). PyTorch 2.15 splits
// whenever min and max are passed, 0 and 0 included.
DimRule histc_rule() {
  return [](const OpCall& call, int mesh_dim) {
    std::vector<DimStrategy> candidates{detail::all_replicate(call)};
    auto is_zero = [&](size_t arg) { return arg >= call.num_args() || call.arg(arg).toScalar().equal(0); };
    const Placement& p = placement_of(call, 0, mesh_dim);
    if (p.is_shard() && !(is_zero(2) && is_zero(3))) candidates.push_back(DimStrategy{{p}, {Partial()}});
    return candidates;
  };
}

}  // namespace

// Note [Norms of sharded dims]
// A p-norm over a sharded dim needs sum(|x|^p) across ranks before the root,
// a reduction no Partial kind expresses; and rules cannot read `ord` (scalar
// values are not part of the sharding cache key, see Note [Sharding cache
// key]). So the rule below gathers a sharded reduced dim, and the autograd
// override in autograd_overrides.cc handles DTensor norms over sharded dims
// before they reach it, with one all_reduce of the result (PyTorch: Partial
// norm reduced later, also one all_reduce).
void register_math_rules(ShardingRegistry& registry) {
  // _safe_softmax (LibTorch 2.5+): softmax that gives 0 on fully masked rows,
  // used by the math attention path.
  registry.add({"aten::_softmax", "aten::_log_softmax", "aten::_safe_softmax"},
               per_mesh_dim(whole_dims_rule(DimsSpec{1, false, kKeepsDims})));
  registry.add({"aten::_softmax_backward_data", "aten::_log_softmax_backward_data"},
               per_mesh_dim(softmax_backward_rule()));
  registry.add({"aten::logsumexp"}, per_mesh_dim(whole_dims_rule(DimsSpec{1, true, 2})));
  registry.add({"aten::var.correction", "aten::std.correction", "aten::var_mean.correction",
                "aten::std_mean.correction"},
               per_mesh_dim(whole_dims_rule(DimsSpec{1, true, 3})));
  registry.add({"aten::cumsum", "aten::cumsum_"}, per_mesh_dim(cumsum_rule()));
  registry.add({"aten::tril", "aten::triu", "aten::tril_", "aten::triu_"}, per_mesh_dim(triangle_rule()));
  registry.add({"aten::cumprod", "aten::logcumsumexp", "aten::cummax", "aten::cummin"},
               per_mesh_dim(whole_dims_rule(DimsSpec{1, false, kKeepsDims})));
  registry.add({"aten::topk"}, per_mesh_dim(whole_dims_rule(DimsSpec{2, false, kKeepsDims})));
  registry.add({"aten::sort"}, per_mesh_dim(whole_dims_rule(DimsSpec{1, false, kKeepsDims})));
  registry.add({"aten::sort.stable"}, per_mesh_dim(whole_dims_rule(DimsSpec{2, false, kKeepsDims})));
  registry.add({"aten::kthvalue"}, per_mesh_dim(whole_dims_rule(DimsSpec{2, false, 3})));
  registry.add({"aten::median.dim", "aten::nanmedian.dim", "aten::mode"},
               per_mesh_dim(whole_dims_rule(DimsSpec{1, false, 2})));
  registry.add({"aten::linalg_cross"}, per_mesh_dim(cross_rule()));
  registry.add({"aten::bucketize.Tensor"}, per_mesh_dim(bucketize_rule()));
  registry.add({"aten::histc"}, per_mesh_dim(histc_rule()));
  registry.add({"aten::linalg_vector_norm"}, per_mesh_dim(whole_dims_rule(DimsSpec{2, true, 3})));
  registry.add({"aten::norm.ScalarOpt_dim", "aten::norm.ScalarOpt_dim_dtype"},
               per_mesh_dim(whole_dims_rule(DimsSpec{2, true, 3})));
  registry.add({"aten::norm.Scalar", "aten::norm.ScalarOpt_dtype"},
               per_mesh_dim(whole_dims_rule(DimsSpec{kAllDims, true, kKeepsDims})));
}

}  // namespace dtensor
