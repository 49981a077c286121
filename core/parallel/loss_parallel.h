// Loss parallelism, as PyTorch's torch.distributed.tensor.parallel.loss_parallel():
// cross entropy on logits sharded on the class dim, without gathering them.
//   { auto guard = dtensor::loss_parallel();
//     at::Tensor loss = torch::nn::functional::cross_entropy(logits, target);   // logits [S(1)]
//     loss.backward(); }                                                       // grad [S(1)], no comm
#pragma once

#include "core/dispatch/dispatch_mode.h"

namespace dtensor {

/// While it lives, on this thread (one rank of a fake world), cross entropy
/// (log_softmax + nll_loss, and nll_loss2d for inputs with more dims) on a
/// DTensor of logits sharded on the class dim (Shard(1), or Shard(0) for a
/// 1-D input [C]) of a 1-D mesh runs the sharded algorithm of Note [Loss
/// parallel] (core/ops/loss_parallel_rules.cc): forward 3 all_reduces, a
/// Replicate loss; backward no collective, a gradient sharded like the
/// logits. Reductions "none", "mean" and "sum", ignore_index and class
/// weights are supported; label smoothing and class-probability targets are
/// not. The target and the weights must be replicated: plain tensors are
/// taken as Replicate. Preconditions (checked, c10::Error naming the op and
/// placements): every _log_softmax and nll_loss on DTensors inside has its
/// input sharded on the class dim of a 1-D mesh; the backward runs inside
/// the guard too; nll_loss_backward's input is a log_softmax output (its
/// gradient is the logits', fused as PyTorch does). Guards nest.
/// Example:
///   DTensor x = distribute_tensor(logits, mesh, {Shard(1)});
///   { LossParallelGuard guard; torch::nn::functional::cross_entropy(x, target).backward(); }
class LossParallelGuard {
 public:
  LossParallelGuard();
  LossParallelGuard(const LossParallelGuard&) = delete;
  LossParallelGuard& operator=(const LossParallelGuard&) = delete;

 private:
  RuleModeGuard mode_;
};

/// A LossParallelGuard, the name PyTorch's context manager has.
/// Example: { auto guard = dtensor::loss_parallel(); loss = cross_entropy(x, t); loss.backward(); }
inline LossParallelGuard loss_parallel() { return LossParallelGuard(); }

}  // namespace dtensor
