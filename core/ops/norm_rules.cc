// Batch norm and group norm, forward and backward (layer norm is in
// nn_rules.cc). Batch norm normalises each channel over the batch and the
// spatial dims, so only the channel dim shards: [N, C, *] tensors on dim 1,
// the per-channel ones ([C]: weight, bias, running and saved statistics) on
// dim 0. Group norm normalises each sample, so the batch dim shards.
//   native_batch_norm(x [S(1)], w [S(0)], b [S(0)], rm [S(0)], rv [S(0)]) -> S(1), S(0), S(0), no comm
//   native_group_norm(x [S(0)], w [R], b [R], N, C, HxW, G, eps) -> S(0) x3, N rewritten to this rank's
#include <c10/util/Exception.h>

#include <algorithm>

#include "core/ops/arg_parsing.h"
#include "core/ops/builtin_rules.h"
#include "core/ops/strategy_builders.h"

namespace dtensor {
namespace {

using detail::placement_of;

// Note [Batch norm keeps its running statistics where they are]
// In training, batch norm writes running_mean and running_var in place (the
// schemas of _native_batch_norm_legit and _batch_norm_with_update mark them
// `(a!)`; native_batch_norm writes them unmarked). If a plan redistributed
// them, the op would update a temporary copy and the module's buffers would
// silently keep their old values; PyTorch 2.15 does exactly that when it
// shards the channel dim of a replicated BatchNorm. Here a training call only
// takes candidates that leave both statistics as they are: with [C] buffers
// sharded S(0) like the weight the channel dim shards, with replicated buffers
// the whole op is replicated (data parallel: the batch is gathered, as the
// statistics need every sample).
// How a batch norm overload's schema reads: whether output 3 is cuDNN's
// reserve (opaque: Replicate) and when it writes running_mean and
// running_var (schema args 3 and 4).
struct BatchNormForm {
  enum class Writes { kNever, kWhenTraining, kAlways };  // kWhenTraining: the bool at arg 5
  Writes writes = Writes::kWhenTraining;
  bool reserve = false;
};

// The inputs a call writes in place: running_mean and running_var when the
// form writes them (Note [Batch norm keeps its running statistics where they are]).
std::vector<size_t> written_statistics(const OpCall& call, const BatchNormForm& form) {
  const bool writes = form.writes == BatchNormForm::Writes::kAlways ||
                      (form.writes == BatchNormForm::Writes::kWhenTraining && detail::bool_arg(call, 5, false));
  std::vector<size_t> written;
  if (!writes) return written;
  for (size_t a : {3, 4}) {
    const int64_t i = detail::input_at_arg(call, a);
    if (i >= 0) written.push_back(static_cast<size_t>(i));
  }
  return written;
}

DimRule batch_norm_rule(BatchNormForm form) {
  return [form](const OpCall& call, int mesh_dim) {
    DimStrategy channel;
    channel.inputs.assign(call.inputs.size(), Shard(0));
    channel.inputs[0] = Shard(1);
    channel.outputs.assign(call.outputs.size(), Shard(0));
    channel.outputs[0] = Shard(1);
    if (form.reserve) channel.outputs[3] = Replicate();
    std::vector<DimStrategy> candidates{detail::all_replicate(call), channel};

    const std::vector<size_t> written = written_statistics(call, form);
    auto keeps_statistics = [&](const DimStrategy& s) {
      return std::all_of(written.begin(), written.end(),
                         [&](size_t i) { return s.inputs[i] == placement_of(call, i, mesh_dim); });
    };
    candidates.erase(std::remove_if(candidates.begin(), candidates.end(),
                                    [&](const DimStrategy& s) { return !keeps_statistics(s); }),
                     candidates.end());
    TORCH_CHECK(!candidates.empty(), call.describe(), ": batch norm updates running_mean and running_var in ",
                "place, so they must keep their placements, but on mesh dim ", mesh_dim,
                " they are neither Replicate nor Shard(0) with the input's channel dim sharded. "
                "Distribute the BatchNorm buffers like its weight (Replicate, or Shard(0) for channel "
                "sharding), or call it with training=false");
    return candidates;
  };
}

// native_batch_norm_backward(grad_out, input, weight?, running_mean?,
// running_var?, save_mean?, save_invstd?, train, eps, output_mask) ->
// (grad_input [N, C, *], grad_weight [C], grad_bias [C]).
DimRule batch_norm_backward_rule() {
  return [](const OpCall& call, int) {
    DimStrategy channel;
    channel.inputs.assign(call.inputs.size(), Shard(0));
    channel.inputs[0] = channel.inputs[1] = Shard(1);
    channel.outputs.assign(call.outputs.size(), Shard(0));
    channel.outputs[0] = Shard(1);
    return std::vector<DimStrategy>{detail::all_replicate(call), channel};
  };
}

// Note [Group norm takes the local batch size]
// native_group_norm(input, weight?, bias?, N, C, HxW, group, eps) is told the
// global N, C and HxW by the composite group_norm above it; with the batch
// dim sharded this rank's kernel must be told its own N (C and HxW do not
// change: only dim 0 shards). So does the backward (arg 5 there).
ShardingRule group_norm_rule(size_t input, size_t n_arg, bool backward) {
  DimRule dim_rule = [input, backward](const OpCall& call, int) {
    DimStrategy batch = detail::every_tensor_as(call, Shard(0));
    for (size_t i = 0; i < call.inputs.size(); ++i) {
      if (i != input && (!backward || i > 3)) batch.inputs[i] = Replicate();  // weight, bias
    }
    if (backward) {  // grad_weight, grad_bias: partial sums over this rank's samples
      for (size_t o = 1; o < batch.outputs.size(); ++o) batch.outputs[o] = Partial();
    }
    return std::vector<DimStrategy>{detail::all_replicate(call), batch};
  };
  ShardingRule base = detail::single_dim_rule(dim_rule, {false, detail::no_empty_pieces_check(/*batch_may_be_empty=*/true)});
  return [base, input, n_arg](const OpCall& call) {
    ShardingPlan plan = base(call);
    const int64_t local_n = call.inputs[input].with_placements(plan.input_placements[input]).local_shape()[0];
    if (local_n != call.arg(n_arg).toInt()) plan.local_arg_overrides.emplace_back(n_arg, c10::IValue(local_n));
    return plan;
  };
}

// Note [Empty pieces of spatial ops]: every dim of batch norm's tensors that
// shards is a channel dim, never empty. Every candidate of batch_norm_rule
// keeps the statistics a call writes, so every combination the whole-mesh
// check tries does too; only its last resort, all-Replicate, may not.
ShardingRule batch_norm_sharding(DimRule rule, BatchNormForm form) {
  ShardingRule base =
      detail::single_dim_rule(std::move(rule), {false, detail::no_empty_pieces_check(/*batch_may_be_empty=*/false)});
  return [base, form](const OpCall& call) {
    const std::vector<size_t> written = written_statistics(call, form);
    if (call.self_input >= 0 && written.empty()) {
      // Eval mode: the schema marks the statistics written, but this call
      // only reads them, so they are laid out like any input (PyTorch 2.15
      // gathers [3] S(0) statistics over 4 ranks, y18_0056).
      OpCall reads = call;
      reads.self_input = -1;
      ShardingPlan plan = base(reads);
      plan.self_only_read = true;
      return plan;
    }
    ShardingPlan plan = base(call);
    for (size_t i : written) {
      TORCH_CHECK(plan.input_placements[i] == call.inputs[i].placements, call.describe(),
                  ": batch norm updates running_mean and running_var in place, so they must keep their "
                  "placements, but no layout of the channel dim this call can run with keeps ",
                  to_string(call.inputs[i].placements), " (every rank needs at least one channel). "
                  "Distribute the BatchNorm buffers like its weight (Replicate, or Shard(0) over fewer ranks "
                  "than channels), or call it with training=false");
    }
    return plan;
  };
}

ShardingRule batch_norm(BatchNormForm form) { return batch_norm_sharding(batch_norm_rule(form), form); }

// _fused_rms_norm_backward(grad_out, input, normalized_shape, rstd, weight?,
// output_mask) -> (grad_input, grad_weight), PyTorch 2.15's rows: a leading
// (not normalized) dim shards grad_out, input, rstd and grad_input alike,
// the weight stays whole and its gradient is a partial sum over the shards.
DimRule rms_norm_backward_rule() {
  return [](const OpCall& call, int mesh_dim) {
    (void)mesh_dim;
    const int64_t leading = detail::input_ndim(call, 1) - static_cast<int64_t>(call.arg(2).toIntVector().size());
    std::vector<DimStrategy> candidates{detail::all_replicate(call)};
    for (int64_t d = 0; d < leading; ++d) {
      DimStrategy s = detail::all_replicate(call);
      for (size_t i = 0; i < 3 && i < s.inputs.size(); ++i) s.inputs[i] = Shard(d);  // grad_out, input, rstd
      s.outputs[0] = Shard(d);
      if (s.outputs.size() > 1 && !call.outputs[1].shape.empty()) s.outputs[1] = Partial();
      candidates.push_back(s);
    }
    return candidates;
  };
}

}  // namespace

void register_norm_rules(ShardingRegistry& registry) {
  registry.add({"aten::_fused_rms_norm_backward"}, detail::single_dim_rule(rms_norm_backward_rule()));
  using Writes = BatchNormForm::Writes;
  registry.add({"aten::native_batch_norm"}, batch_norm({}));
  registry.add({"aten::_native_batch_norm_legit"}, batch_norm({}));
  registry.add({"aten::_native_batch_norm_legit.no_stats"}, batch_norm({Writes::kNever}));
  registry.add({"aten::_native_batch_norm_legit_no_training"}, batch_norm({Writes::kNever}));
  // The functional forms return the new statistics (two more [C] outputs) instead of writing them.
  registry.add({"aten::_native_batch_norm_legit_functional"}, batch_norm({Writes::kNever}));
  registry.add({"aten::_batch_norm_with_update"}, batch_norm({Writes::kAlways, true}));
  registry.add({"aten::_batch_norm_with_update_functional"}, batch_norm({Writes::kNever, true}));
  registry.add({"aten::native_batch_norm_backward"}, batch_norm_sharding(batch_norm_backward_rule(), {Writes::kNever}));
  registry.add({"aten::native_group_norm"}, group_norm_rule(/*input=*/0, /*n_arg=*/3, /*backward=*/false));
  registry.add({"aten::native_group_norm_backward"}, group_norm_rule(/*input=*/1, /*n_arg=*/5, /*backward=*/true));
}

}  // namespace dtensor
