// Ops over the spatial dims of [N, C, *spatial] tensors: convolution, pooling,
// upsampling and grid sampling, forward and backward. They never mix samples
// or channels, so the batch dim (0) and the channel dim (1) shard with no
// communication, as PyTorch 2.15's single-dim strategies say.
//   max_pool2d_with_indices(x [S(1)] f[N, C, H, W]) -> [S(1)] x2, no comm
//   convolution(x [S(0)], w [R], b [R]) -> S(0); its backward: grad_weight, grad_bias P(sum)
#include <c10/util/Exception.h>

#include <string>

#include "core/ops/arg_parsing.h"
#include "core/ops/builtin_rules.h"
#include "core/ops/strategy_builders.h"

namespace dtensor {
namespace {

using detail::placement_of;

// Note [Empty pieces of spatial ops]
// Pooling, upsampling, convolution and batch norm kernels refuse an empty
// channel (max_pool2d: "Expected 3D or 4D (batch mode) tensor with optional
// 0 dim batch size"), and batch norm's CPU backward divides by zero on one
// (SIGFPE: the differential corpus found it, c18_0193). torch.chunk leaves
// empty trailing pieces (5 channels over 4 ranks: 2, 2, 1, 0), so a rank
// would fail alone while the others go on to the next collective. So these
// rules never split a dim into an empty piece, except the batch dim, which
// every kernel here takes empty (not batch norm's: it has none to shard).
// They also keep PyTorch 2.15's own filter (is_tensor_shardable: no dim split
// over more ranks than it has elements, pooling keeping an input already
// placed so), so that they pick what 2.15 picks wherever it can run.

// The rule of a spatial op whose dim 0 is the batch (Note [Empty pieces of
// spatial ops]).
ShardingRule spatial(DimRule rule) {
  return detail::single_dim_rule(std::move(rule), {false, detail::no_empty_pieces_check(/*batch_may_be_empty=*/true)});
}

bool partial_sum_or_avg(const Placement& p) {
  return p.is_partial() && (p.reduce_op() == ReduceOp::kSum || p.reduce_op() == ReduceOp::kAvg);
}

// ------------------------------------------------------------------ pooling

// Pooling of input [N, C, *spatial] (or unbatched [C, *spatial]): every
// tensor, indices and fractional pooling's random samples included, shards on
// dim 0; on dim 1 too when the input is batched (dim 1 is then the channel).
// Average pooling is linear, so a Partial(sum|avg) input stays Partial.
DimRule pooling_rule(int spatial_rank, bool linear) {
  return [spatial_rank, linear](const OpCall& call, int mesh_dim) {
    std::vector<DimStrategy> candidates{detail::all_replicate(call), detail::every_tensor_as(call, Shard(0))};
    const Placement& p = placement_of(call, 0, mesh_dim);
    if (linear && partial_sum_or_avg(p)) candidates.push_back(detail::every_tensor_as(call, p));
    if (detail::input_ndim(call, 0) >= spatial_rank + 2) candidates.push_back(detail::every_tensor_as(call, Shard(1)));
    return candidates;
  };
}

// The backward of a pooling (grad_output, self, ..., [indices]) -> grad_input:
// sharded as the forward on dims 0 and 1; linear in grad_output, so a
// Partial(sum|avg) gradient stays Partial with self and indices replicated
// (indices are positions, not summable).
DimRule pooling_backward_rule(int spatial_rank) {
  return [spatial_rank](const OpCall& call, int mesh_dim) {
    std::vector<DimStrategy> candidates{detail::all_replicate(call), detail::every_tensor_as(call, Shard(0))};
    if (detail::input_ndim(call, 0) >= spatial_rank + 2) candidates.push_back(detail::every_tensor_as(call, Shard(1)));
    const Placement& g = placement_of(call, 0, mesh_dim);
    if (partial_sum_or_avg(g)) {
      DimStrategy s = detail::all_replicate(call);
      s.inputs[0] = g;
      s.outputs[0] = g;
      candidates.push_back(s);
    }
    return candidates;
  };
}

// Ops with no Partial row in PyTorch 2.15 (max_unpool, the adaptive average
// pooling backward): dims 0 and 1 only.
DimRule batch_or_channel_rule() {
  return [](const OpCall& call, int) {
    return std::vector<DimStrategy>{detail::all_replicate(call), detail::every_tensor_as(call, Shard(0)),
                                    detail::every_tensor_as(call, Shard(1))};
  };
}

// ---------------------------------------------------------------- upsampling

// Upsampling, forward and backward: one tensor in, one out, both [N, C, *];
// dims 0 and 1 shard, and interpolation is linear (Partial stays Partial).
DimRule upsample_rule() {
  return [](const OpCall& call, int mesh_dim) {
    std::vector<DimStrategy> candidates{detail::all_replicate(call), detail::every_tensor_as(call, Shard(0)),
                                        detail::every_tensor_as(call, Shard(1))};
    const Placement& p = placement_of(call, 0, mesh_dim);
    if (partial_sum_or_avg(p)) candidates.push_back(detail::every_tensor_as(call, p));
    return candidates;
  };
}

// Note [Upsampling backward takes the local input size]
// upsample_*_backward(grad_output, output_size, input_size, ...) is told the
// forward input's global size [N, C, *spatial]; with dim 0 or 1 sharded the
// local kernel must be told this rank's N and C, or it refuses the local
// gradient ("Expected grad_output to have the same shape as output").
// PyTorch 2.15 passes the global size and raises; here the size is rewritten.
ShardingRule upsample_backward_rule() {
  ShardingRule base = spatial(upsample_rule());
  return [base](const OpCall& call) {
    ShardingPlan plan = base(call);
    const std::vector<int64_t> local = call.inputs[0].with_placements(plan.input_placements[0]).local_shape();
    std::vector<int64_t> input_size = call.arg(2).toIntVector();
    if (input_size.size() >= 2 && local.size() >= 2 && (input_size[0] != local[0] || input_size[1] != local[1])) {
      input_size[0] = local[0];
      input_size[1] = local[1];
      plan.local_arg_overrides.emplace_back(2, c10::IValue(input_size));
    }
    return plan;
  };
}

// ------------------------------------------------------------- grid sampling

// grid_sampler_{2,3}d(input [N, C, *], grid [N, *, k]): the grid has no
// channel dim, so only the batch dim shards; linear in input, so a
// Partial(sum|avg) input with a replicated grid stays Partial.
DimRule grid_sampler_rule() {
  return [](const OpCall& call, int mesh_dim) {
    std::vector<DimStrategy> candidates{detail::all_replicate(call), detail::every_tensor_as(call, Shard(0))};
    const Placement& p = placement_of(call, 0, mesh_dim);
    if (partial_sum_or_avg(p)) candidates.push_back({{p, Replicate()}, {p}});
    return candidates;
  };
}

// grid_sampler_{2,3}d_backward(grad_output, input, grid, ...) -> (grad_input,
// grad_grid): batch dim only.
DimRule grid_sampler_backward_rule() {
  return [](const OpCall& call, int) {
    return std::vector<DimStrategy>{detail::all_replicate(call), detail::every_tensor_as(call, Shard(0))};
  };
}

// -------------------------------------------------------------- convolution

// Note [Convolution sharding]
// convolution(input [N, C_in, *], weight [C_out, C_in/g, *k], bias?) shards
// the batch dim with the weight and bias replicated. The last spatial dim
// shards too when windows never straddle a shard boundary: no padding or
// dilation on it, stride equal to the kernel width, and the dim divisible by
// stride x ranks (PyTorch 2.15's single-dim strategy and its whole-mesh
// filter). Halo exchange for overlapping windows (PyTorch's _tp_conv) is not
// done: such an input is gathered on that dim instead. The backward shards the
// same way; the weight and bias gradients are then partial sums.
bool last_dim_shardable(const OpCall& call, size_t input, size_t weight, size_t stride_arg, int mesh_dim) {
  const int64_t ndim = detail::input_ndim(call, input);
  if (ndim < 3 || ndim > 5 || ndim != detail::input_ndim(call, weight)) return false;
  const auto stride = call.arg(stride_arg).toIntVector();
  const auto padding = call.arg(stride_arg + 1).toIntVector();
  const auto dilation = call.arg(stride_arg + 2).toIntVector();
  const bool transposed = call.arg(stride_arg + 3).toBool();
  if (transposed || stride.empty() || padding.back() != 0 || dilation.back() != 1) return false;
  const int64_t last = ndim - 1;
  if (stride.back() != call.inputs[weight].meta.shape.back()) return false;
  for (int m = 0; m < call.mesh_ndim(); ++m) {  // one mesh dim may split the last dim
    if (m != mesh_dim && placement_of(call, input, m).splits_dim() &&
        placement_of(call, input, m).shard_dim() == last) {
      return false;
    }
  }
  return call.inputs[input].meta.shape.back() % (stride.back() * call.mesh.size(mesh_dim)) == 0;
}

// convolution(input, weight, bias?, stride, padding, dilation, transposed, output_padding, groups)
DimRule convolution_rule() {
  return [](const OpCall& call, int mesh_dim) {
    auto data_sharded = [&](const Placement& p) {
      DimStrategy s = detail::all_replicate(call);
      s.inputs[0] = p;
      s.outputs[0] = p;
      return s;
    };
    std::vector<DimStrategy> candidates{detail::all_replicate(call), data_sharded(Shard(0))};
    if (last_dim_shardable(call, 0, 1, 3, mesh_dim)) {
      candidates.push_back(data_sharded(Shard(detail::input_ndim(call, 0) - 1)));
    }
    return candidates;
  };
}

// convolution_backward(grad_output, input, weight, bias_sizes, stride, ...) ->
// (grad_input, grad_weight, grad_bias)
DimRule convolution_backward_rule() {
  return [](const OpCall& call, int mesh_dim) {
    auto data_sharded = [&](const Placement& p) {
      return DimStrategy{{p, p, Replicate()}, {p, Partial(), Partial()}};
    };
    std::vector<DimStrategy> candidates{detail::all_replicate(call), data_sharded(Shard(0))};
    if (last_dim_shardable(call, 1, 2, 4, mesh_dim)) {
      candidates.push_back(data_sharded(Shard(detail::input_ndim(call, 1) - 1)));
    }
    return candidates;
  };
}

// Pooling keeps an input already placed so (PyTorch 2.15's strategies allow
// uneven sharding); dim 0 is the batch only for a batched input, except that
// the adaptive poolings also take an unbatched input's channels as their
// leading dim and accept it empty (LibTorch 2.15: adaptive_avg_pool2d and
// adaptive_max_pool2d of a [0, 1, 5] input run; the fixed-window poolings
// refuse it; x18_0938, x18_0951).
void add_pooling(ShardingRegistry& registry, const std::string& name, int spatial_rank, bool linear,
                 bool leading_may_be_empty = false) {
  PlanCheck check = [spatial_rank, leading_may_be_empty](const OpCall& call, const std::vector<Placements>& inputs) {
    const bool batched = detail::input_ndim(call, 0) >= spatial_rank + 2;
    return detail::no_empty_pieces(call, inputs, /*batch_may_be_empty=*/batched || leading_may_be_empty);
  };
  registry.add({name}, detail::single_dim_rule(pooling_rule(spatial_rank, linear), {/*allow_uneven=*/true, std::move(check)}));
}

}  // namespace

void register_spatial_rules(ShardingRegistry& registry) {
  registry.add({"aten::convolution"}, spatial(convolution_rule()));
  registry.add({"aten::convolution_backward"}, spatial(convolution_backward_rule()));

  // The 1-d average poolings are composites of the 2-d ones in LibTorch, but
  // their out= forms are not: those derive their rules from these.
  add_pooling(registry, "aten::avg_pool1d", 1, /*linear=*/true);
  add_pooling(registry, "aten::adaptive_avg_pool1d", 1, /*linear=*/true, /*leading_may_be_empty=*/true);
  for (int d = 2; d <= 3; ++d) {
    const std::string nd = std::to_string(d) + "d";
    add_pooling(registry, "aten::avg_pool" + nd, d, /*linear=*/true);
    add_pooling(registry, "aten::_adaptive_avg_pool" + nd, d, /*linear=*/true, /*leading_may_be_empty=*/true);
    add_pooling(registry, "aten::adaptive_max_pool" + nd, d, /*linear=*/false, /*leading_may_be_empty=*/true);
    add_pooling(registry, "aten::max_pool" + nd + "_with_indices", d, /*linear=*/false);
    add_pooling(registry, "aten::fractional_max_pool" + nd, d, /*linear=*/false);
    // PyTorch 2.15 shards only max_pool2d's backward; the others (what every
    // CNN's backward calls) follow the same rule here.
    registry.add({"aten::avg_pool" + nd + "_backward"}, spatial(pooling_backward_rule(d)));
    registry.add({"aten::adaptive_max_pool" + nd + "_backward"}, spatial(pooling_backward_rule(d)));
    registry.add({"aten::max_pool" + nd + "_with_indices_backward"}, spatial(pooling_backward_rule(d)));
    registry.add({"aten::max_unpool" + nd}, spatial(batch_or_channel_rule()));
    registry.add({"aten::grid_sampler_" + nd}, spatial(grid_sampler_rule()));
    registry.add({"aten::grid_sampler_" + nd + "_backward"}, spatial(grid_sampler_backward_rule()));
  }
  registry.add({"aten::_adaptive_avg_pool2d_backward"}, spatial(batch_or_channel_rule()));
  registry.add({"aten::_adaptive_avg_pool3d_backward"}, spatial(batch_or_channel_rule()));

  const std::vector<std::string> upsample = {
      "upsample_nearest1d", "upsample_nearest2d", "upsample_nearest3d", "_upsample_nearest_exact1d",
      "_upsample_nearest_exact2d", "_upsample_nearest_exact3d", "_upsample_bilinear2d_aa", "_upsample_bicubic2d_aa",
      "_upsample_lanczos2d_aa", "upsample_bicubic2d", "upsample_bilinear2d", "upsample_linear1d",
      "upsample_trilinear3d"};
  for (const std::string& op : upsample) {
    // ".vec" (sizes or scale factors) is a composite of the default overload.
    registry.add({"aten::" + op}, spatial(upsample_rule()));
    registry.add({"aten::" + op + "_backward"}, upsample_backward_rule());
  }
}

}  // namespace dtensor
