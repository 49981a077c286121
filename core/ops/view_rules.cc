// View and shape ops: sharded dims move with the data. A view that merges or
// splits dims keeps a shard on the group's leading dim when the split is even;
// otherwise the input is gathered first. Size arguments become local sizes.
//   view([S(0)] f[8,4], {32}) -> S(0);  transpose([S(0)], 0, 1) -> S(1);  t(P) -> P
#include <ATen/TensorUtils.h>
#include <c10/util/Exception.h>

#include <algorithm>

#include "core/ops/arg_parsing.h"
#include "core/ops/builtin_rules.h"
#include "core/ops/strategy_builders.h"

namespace dtensor {
namespace {

using detail::placement_of;

// Input dim `d` of each output dim for ops that only reorder/insert/remove
// dims: out_to_in[o] = input dim or -1 (new dim).
DimRule dim_map_rule(std::function<std::vector<int64_t>(const OpCall&)> out_to_in_fn) {
  return [out_to_in_fn](const OpCall& call, int mesh_dim) {
    std::vector<DimStrategy> candidates{detail::all_replicate(call)};
    const Placement& p = placement_of(call, 0, mesh_dim);
    DimStrategy keep = detail::follow_first_input(call, mesh_dim);
    if (p.is_partial()) {
      candidates.push_back(keep);
    } else if (p.is_shard()) {
      std::vector<int64_t> out_to_in = out_to_in_fn(call);
      for (size_t o = 0; o < out_to_in.size(); ++o) {
        if (out_to_in[o] == p.shard_dim()) {
          keep.outputs.assign(call.outputs.size(), Shard(static_cast<int64_t>(o)));
          candidates.push_back(keep);
        }
      }
    }
    return candidates;
  };
}

int64_t in_ndim(const OpCall& call) { return static_cast<int64_t>(call.inputs[0].meta.shape.size()); }
int64_t out_ndim(const OpCall& call) { return static_cast<int64_t>(call.outputs[0].shape.size()); }

std::vector<int64_t> transpose_map(const OpCall& call) {
  const int64_t n = in_ndim(call);
  std::vector<int64_t> map(static_cast<size_t>(n));
  for (int64_t d = 0; d < n; ++d) map[static_cast<size_t>(d)] = d;
  if (n < 2) return map;
  int64_t a = 0, b = 1;
  if (call.num_args() >= 3 && call.arg(1).isInt()) {
    a = detail::wrap_dim(call.arg(1).toInt(), n);
    b = detail::wrap_dim(call.arg(2).toInt(), n);
  }
  std::swap(map[static_cast<size_t>(a)], map[static_cast<size_t>(b)]);
  return map;
}

// view_as_real: a complex [*] viewed as real [*, 2] (a new last dim);
// view_as_complex: the reverse (its last dim, the pair, stays whole).
std::vector<int64_t> view_as_real_map(const OpCall& call) {
  std::vector<int64_t> map;
  for (int64_t d = 0; d < in_ndim(call); ++d) map.push_back(d);
  map.push_back(-1);
  return map;
}

std::vector<int64_t> view_as_complex_map(const OpCall& call) {
  std::vector<int64_t> map;
  for (int64_t d = 0; d + 1 < in_ndim(call); ++d) map.push_back(d);
  return map;
}

std::vector<int64_t> permute_map(const OpCall& call) {
  std::vector<int64_t> map;
  for (int64_t d : call.arg(1).toIntVector()) map.push_back(detail::wrap_dim(d, in_ndim(call)));
  return map;
}

std::vector<int64_t> unsqueeze_map(const OpCall& call) {
  const int64_t dim = detail::wrap_dim(call.arg(1).toInt(), in_ndim(call) + 1);
  std::vector<int64_t> map;
  for (int64_t o = 0; o < out_ndim(call); ++o) map.push_back(o == dim ? -1 : (o < dim ? o : o - 1));
  return map;
}

// squeeze, squeeze.dim, squeeze.dims (and their in-place forms): the input
// dims the op removes, ascending, decided by the GLOBAL shape: size 1, and
// among the named dims when dims are given.
std::vector<int64_t> squeezed_dims(const OpCall& call) {
  const auto& shape = call.inputs[0].meta.shape;
  const int64_t ndim = in_ndim(call);
  std::vector<int64_t> named;
  if (call.num_args() >= 2 && call.arg(1).isInt()) {
    named.push_back(detail::wrap_dim(call.arg(1).toInt(), ndim));
  } else if (call.num_args() >= 2 && call.arg(1).isIntList()) {
    for (int64_t d : call.arg(1).toIntVector()) named.push_back(detail::wrap_dim(d, ndim));
  } else {
    for (int64_t d = 0; d < ndim; ++d) named.push_back(d);
  }
  std::vector<int64_t> squeezed;
  for (int64_t d : named) {
    if (d < static_cast<int64_t>(shape.size()) && shape[static_cast<size_t>(d)] == 1) squeezed.push_back(d);
  }
  std::sort(squeezed.begin(), squeezed.end());
  squeezed.erase(std::unique(squeezed.begin(), squeezed.end()), squeezed.end());
  return squeezed;
}

// The input dims that survive a squeeze, in order.
std::vector<int64_t> squeeze_map(const OpCall& call) {
  const std::vector<int64_t> squeezed = squeezed_dims(call);
  std::vector<int64_t> map;
  for (int64_t d = 0; d < in_ndim(call); ++d) {
    if (std::find(squeezed.begin(), squeezed.end(), d) == squeezed.end()) map.push_back(d);
  }
  return map;
}

// Note [Squeeze by the global shape]
// A shard can have size 1 in a dim whose global size is not 1 (6 rows over
// 4 ranks: 2, 2, 1, 1; 1 column over 2 ranks: 1, 0), and the op itself would
// drop that dim on some ranks only: the ranks would disagree on the output's
// rank and then on their collectives. The local kernel removes exactly the
// dims the global op removes; those are never sharded (the rule gathers a
// shard on a removed dim), so their local size is 1 too.
constexpr const char* kSqueezeGlobalDims = "dtensor::squeeze_global_dims";

void squeeze_global_dims(const LocalCall& local, std::vector<c10::IValue>* stack) {
  const std::vector<int64_t> dims = squeezed_dims(local.call);
  const bool in_place = local.call.self_input >= 0;
  at::Tensor out = (*stack)[0].toTensor();
  for (auto d = dims.rbegin(); d != dims.rend(); ++d) out = in_place ? out.squeeze_(*d) : out.squeeze(*d);
  stack->clear();
  stack->emplace_back(std::move(out));
}

ShardingRule squeeze_rule(ShardingRule rule) {
  return [rule = std::move(rule)](const OpCall& call) {
    ShardingPlan plan = rule(call);
    plan.local_kernel = kSqueezeGlobalDims;
    plan.local_kernel_any_layout = true;  // it reads the global shape only
    return plan;
  };
}

// select.int(self, dim, index) and slice.Tensor(self, dim, ...): the dim is
// indexed, so a shard on it must be gathered; select removes it. A slice
// that keeps the whole dim (same size: start 0, step 1, end past the size;
// narrow(x, d, 0, size) decomposes to it) is the identity there and keeps
// the shard, as in PyTorch.
std::vector<int64_t> index_map(const OpCall& call, bool removes) {
  const int64_t dim = detail::wrap_dim(call.arg(1).toInt(), in_ndim(call));
  const bool whole = !removes && call.outputs[0].shape[static_cast<size_t>(dim)] ==
                                     call.inputs[0].meta.shape[static_cast<size_t>(dim)];
  std::vector<int64_t> map;
  for (int64_t d = 0; d < in_ndim(call); ++d) {
    if (d == dim && removes) continue;
    map.push_back(d == dim && !whole ? -1 : d);
  }
  return map;
}

// expand: input dims align right; broadcast (size-1 -> n) dims cannot keep a shard.
std::vector<int64_t> expand_map(const OpCall& call) {
  const auto& in = call.inputs[0].meta.shape;
  const auto& out = call.outputs[0].shape;
  const int64_t offset = out_ndim(call) - in_ndim(call);
  std::vector<int64_t> map;
  for (int64_t o = 0; o < out_ndim(call); ++o) {
    int64_t d = o - offset;
    bool kept = d >= 0 && in[static_cast<size_t>(d)] == out[static_cast<size_t>(o)];
    map.push_back(kept ? d : -1);
  }
  return map;
}

std::vector<int64_t> local_output_shape(const OpCall& call, const ShardingPlan& plan) {
  return DTensorSpec{call.mesh, plan.output_placements[0], call.outputs[0]}.local_shape();
}

// Wraps a dim-map rule for ops whose `size_arg` must become the local size.
ShardingRule with_local_size(DimRule rule, size_t size_arg) {
  return [rule, size_arg](const OpCall& call) {
    ShardingPlan plan = expand_per_mesh_dim(call, rule);
    plan.local_arg_overrides.emplace_back(size_arg, c10::IValue(local_output_shape(call, plan)));
    plan.local_shape_arg = static_cast<int>(size_arg);
    return plan;
  };
}

// In-place views (transpose_, t_, squeeze_, unsqueeze_) rewrite the metadata
// of the tensor they are called on, so its shard dims are renumbered like the
// out-of-place op's output (squeeze_(0) on [S(1)] gives [S(0)]). What must not
// change is the data layout: the written tensor is never redistributed.
ShardingRule in_place_view(DimRule rule) {
  return [rule = std::move(rule)](const OpCall& call) {
    OpCall as_view = call;
    as_view.self_input = -1;
    ShardingPlan plan = expand_per_mesh_dim(as_view, rule);
    TORCH_CHECK(plan.input_placements[0] == call.inputs[0].placements, call.describe(),
                ": this in-place view needs its input redistributed to ", to_string(plan.input_placements[0]),
                " first; call redistribute() before it or use the out-of-place op");
    plan.self_placements_change = true;  // the global shape changes even when placements do not
    return plan;
  };
}

// _reshape_alias(self, size, stride): the size argument already holds the
// local shape (an override); the strides follow the actual local tensor,
// which may be a strided view, so a local kernel (See Note [Local kernels])
// computes them before running the op.
constexpr const char* kReshapeAliasLocalStrides = "dtensor::reshape_alias_local_strides";

void reshape_alias_local_strides(const LocalCall& local, std::vector<c10::IValue>* stack) {
  const at::Tensor& self = (*stack)[0].toTensor();
  const std::vector<int64_t> local_shape = (*stack)[1].toIntVector();
  auto strides = at::detail::computeStride(self.sizes(), self.strides(), c10::IntArrayRef(local_shape));
  TORCH_CHECK(strides.has_value(), "_reshape_alias: the local shard ", self.sizes(),
              " with strides ", self.strides(), " cannot be viewed as ",
              c10::IntArrayRef(local_shape), "; call .contiguous() first");
  (*stack)[2] = c10::IValue(*strides);
  local.call.op->callBoxed(stack);
}

}  // namespace

// Defined in view_reshape_rule.cc.
DimRule reshape_dim_rule();

void register_view_rules(ShardingRegistry& registry) {
  registry.add({"aten::transpose.int"}, per_mesh_dim(dim_map_rule(transpose_map)));
  // t is a single-dim strategy in PyTorch 2.15 (_matrix_ops.py), so an input
  // split into more pieces than its dim has elements is gathered first
  // (detail::tensor_shardable): t of a [1, 4] [S(0), S(0)] gathers it, and
  // mm's backward then reads the gathered copy it saved (g18_02146).
  registry.add({"aten::t"}, detail::single_dim_rule(dim_map_rule(transpose_map)));
  registry.add({"aten::transpose_", "aten::t_"}, in_place_view(dim_map_rule(transpose_map)));
  registry.add({"aten::permute"}, per_mesh_dim(dim_map_rule(permute_map)));
  registry.add({"aten::unsqueeze"}, per_mesh_dim(dim_map_rule(unsqueeze_map)));
  registry.add({"aten::unsqueeze_"}, in_place_view(dim_map_rule(unsqueeze_map)));
  // Every overload (squeeze, .dim, .dims); See Note [Squeeze by the global shape].
  registry.add({"aten::squeeze", "aten::squeeze.dim"}, squeeze_rule(per_mesh_dim(dim_map_rule(squeeze_map))));
  registry.add({"aten::squeeze_"}, squeeze_rule(in_place_view(dim_map_rule(squeeze_map))));
  registry.add_local_kernel(kSqueezeGlobalDims, squeeze_global_dims);
  registry.add({"aten::select.int"},
               per_mesh_dim(dim_map_rule([](const OpCall& c) { return index_map(c, true); })));
  registry.add({"aten::slice.Tensor"},
               per_mesh_dim(dim_map_rule([](const OpCall& c) { return index_map(c, false); })));
  registry.add({"aten::expand", "aten::expand_copy"}, with_local_size(dim_map_rule(expand_map), 1));
  registry.add({"aten::view", "aten::_unsafe_view", "aten::view_copy"}, with_local_size(reshape_dim_rule(), 1));
  registry.add({"aten::view_as_real"}, per_mesh_dim(dim_map_rule(view_as_real_map)));
  registry.add({"aten::view_as_complex"}, per_mesh_dim(dim_map_rule(view_as_complex_map)));
  registry.add({"aten::_reshape_alias"}, [](const OpCall& call) {
    ShardingPlan plan = expand_per_mesh_dim(call, reshape_dim_rule());
    plan.local_arg_overrides.emplace_back(1, c10::IValue(local_output_shape(call, plan)));
    plan.local_kernel = kReshapeAliasLocalStrides;
    return plan;
  });
  registry.add_local_kernel(kReshapeAliasLocalStrides, reshape_alias_local_strides);
}

}  // namespace dtensor
