// Context parallelism, as PyTorch's torch.distributed.tensor.experimental.
// context_parallel: attention on query/key/value sharded on the sequence dim.
//   DTensor q = distribute_tensor(q_full, mesh, {Shard(2)});   // [batch, heads, seq, head_dim]; k, v alike
//   { auto guard = dtensor::experimental::context_parallel();
//     at::Tensor out = at::scaled_dot_product_attention(q, k, v, {}, 0.0, /*is_causal=*/true); }   // S(2)
#pragma once

#include "core/dispatch/dispatch_mode.h"

namespace dtensor::experimental {

/// While it lives, on this thread (one rank of a fake world),
/// at::scaled_dot_product_attention on DTensors whose query is sharded on
/// the sequence dim (dim -2: Shard(2) of [batch, heads, seq, head_dim]) runs
/// the algorithm of Note [Context parallel attention]
/// (core/experimental/context_parallel.cc): key and value are all-gathered
/// along the sequence (one all_gather each; no ring), each rank attends its
/// own query block with the causal mask shifted by the block's offset, and
/// the output is sharded like the query. Backward (through autograd, inside
/// or outside the guard): one reduce_scatter each for the key and value
/// gradients, none for the query's. Uneven sequence shards (torch.chunk
/// sizes) are supported. Preconditions (checked, c10::Error): key and value
/// have the query's placements; no attn_mask, dropout_p == 0; with
/// is_causal, query and key have the same sequence length. Attention whose
/// query is not sequence-sharded runs as outside the guard. Unlike
/// PyTorch's, it does not shard buffers itself (distribute the inputs with
/// Shard(seq_dim)) and does not reorder the sequence for load balance.
/// Guards nest. Example:
///   { ContextParallelGuard guard; at::Tensor o = at::scaled_dot_product_attention(q, k, v); }
class ContextParallelGuard {
 public:
  ContextParallelGuard();
  ContextParallelGuard(const ContextParallelGuard&) = delete;
  ContextParallelGuard& operator=(const ContextParallelGuard&) = delete;

 private:
  RuleModeGuard mode_;
  ContextParallelAttentionScope attention_;
};

/// A ContextParallelGuard, the name of PyTorch's context manager.
/// Example: { auto guard = dtensor::experimental::context_parallel(); out = attention(x); }
inline ContextParallelGuard context_parallel() { return ContextParallelGuard(); }

}  // namespace dtensor::experimental
