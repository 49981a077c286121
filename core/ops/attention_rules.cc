// The fused attention kernels and their backwards: flash, memory-efficient
// and cuDNN (what scaled_dot_product_attention runs on CUDA ranks, Note
// [Fused attention on CUDA ranks] in core/ops/autograd_overrides.cc) and
// the CPU flash kernel. Each computes every (batch, head) pair on its own,
// so the batch dim (0) and the heads dim (1) of every [B, H, ...] tensor
// shard with no communication, as PyTorch 2.15's single-dim strategies say.
//   _scaled_dot_product_flash_attention(q [S(1)], k [S(1)], v [S(1)]) -> out, logsumexp [S(1)], rng_state [R]
//   _scaled_dot_product_efficient_attention_backward(grad, q, k, v, ... [S(0)]) -> grads [S(0)]
#include <string>
#include <vector>

#include "core/ops/builtin_rules.h"
#include "core/ops/strategy_builders.h"

namespace dtensor {
namespace {

// Note [Which tensors of an attention call carry heads]
// The query, key, value, output, their gradients, the log-sum-exp ([B, H, L]
// or cuDNN's [B, H, L, 1]), an attention bias and the debug mask all begin
// with [batch, heads] and have at least 3 dims. The other tensors are per
// call: the RNG state (flash: uint64 [2] and []), the philox seed and offset
// ([]), the cumulative sequence lengths of variable-length batches ([B + 1]),
// and the empty placeholders a kernel returns for what it did not compute
// (log-sum-exp without compute_log_sumexp: [B, H, 0] is still 3-D and
// shards; a debug mask not asked for: [0]); they stay Replicate. This is
// PyTorch 2.15's placement list of each of these ops, read by rank rather
// than by position, so one rule serves all eight overloads and their
// optional arguments.
bool carries_heads(const TensorMeta& meta) { return meta.shape.size() >= 3; }

DimStrategy heads_or_batch_sharded(const OpCall& call, int64_t dim) {
  DimStrategy s = detail::all_replicate(call);
  for (size_t i = 0; i < call.inputs.size(); ++i) {
    if (carries_heads(call.inputs[i].meta)) s.inputs[i] = Shard(dim);
  }
  for (size_t o = 0; o < call.outputs.size(); ++o) {
    if (carries_heads(call.outputs[o])) s.outputs[o] = Shard(dim);
  }
  return s;
}

// All-Replicate, heads-sharded, batch-sharded: PyTorch 2.15's rows. There
// is no Partial row: softmax is not linear in the scores.
DimRule attention_rule() {
  return [](const OpCall& call, int mesh_dim) {
    (void)mesh_dim;
    return std::vector<DimStrategy>{detail::all_replicate(call), heads_or_batch_sharded(call, 1),
                                    heads_or_batch_sharded(call, 0)};
  };
}

}  // namespace

void register_attention_rules(ShardingRegistry& registry) {
  registry.add({"aten::_scaled_dot_product_flash_attention", "aten::_scaled_dot_product_flash_attention_backward",
                "aten::_scaled_dot_product_efficient_attention",
                "aten::_scaled_dot_product_efficient_attention_backward",
                "aten::_scaled_dot_product_cudnn_attention", "aten::_scaled_dot_product_cudnn_attention_backward",
                // No rule in PyTorch 2.15 (its CPU DTensor SDPA raises there).
                "aten::_scaled_dot_product_flash_attention_for_cpu",
                "aten::_scaled_dot_product_flash_attention_for_cpu_backward"},
               detail::single_dim_rule(attention_rule()));
}

}  // namespace dtensor
