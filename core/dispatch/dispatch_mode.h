// Thread-local switches of the DTensor dispatcher, as RAII guards. The DTensor
// kernel (core/dispatch/op_dispatcher.cc) reads them; users reach them through
// core/experimental/ (implicit_replication, SkipDispatchGuard).
//   { dtensor::ImplicitReplicationGuard g; auto y = dt + plain; }   // plain treated as Replicate
//   { dtensor::SkipDispatchGuard g; p.add_(g, -lr); }                // ops run on local shards
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dtensor {

/// Inside it, plain tensors mixed with DTensors are treated as Replicate (as
/// PyTorch's implicit_replication context). Outside it only 0-dim plain
/// tensors are.
class ImplicitReplicationGuard {
 public:
  ImplicitReplicationGuard();
  ~ImplicitReplicationGuard();
  ImplicitReplicationGuard(const ImplicitReplicationGuard&) = delete;
  ImplicitReplicationGuard& operator=(const ImplicitReplicationGuard&) = delete;
  static bool active();

 private:
  bool previous_;
};

// Note [Skipping DTensor dispatch]
// Inside a SkipDispatchGuard, DTensor operators run directly on the local
// shards, for code that knows its layouts already agree (e.g. an optimizer
// update of a parameter and its gradient that share placements). Operators
// on the guard's allowlist keep dispatching normally. For an operator not on
// the allowlist:
//  - every DTensor argument is replaced by its local tensor (no
//    redistribution, no check that placements agree, no autograd: use it
//    under torch::NoGradGuard or on tensors that do not require grad);
//  - in-place and out= operators update the local tensor of the DTensor
//    they write and return that DTensor (its spec is kept, so the local
//    result must keep the local shape);
//  - other results are returned as plain local tensors.
// The public name is dtensor::experimental::SkipDispatchGuard
// (core/experimental/skip_dispatch.h).

/// Operators that still dispatch inside a SkipDispatchGuard unless the guard
/// is given its own list: item() / equal / allclose / is_nonzero (a local
/// answer would differ between ranks), the *_like factories, detach and
/// alias (so that new tensors and detached views stay DTensors).
const std::vector<std::string>& default_still_dispatched();

/// See Note [Skipping DTensor dispatch]. Per thread (per rank in a fake
/// world); guards nest, the innermost allowlist applies.
/// Example: { SkipDispatchGuard guard({"aten::mm"}); p.mul_(2); }   // mul_ local, mm dispatched
class SkipDispatchGuard {
 public:
  /// `still_dispatched`: operator names ("aten::mm" = every overload, or
  /// "aten::add.Tensor") that keep full DTensor dispatch inside the guard.
  explicit SkipDispatchGuard(std::vector<std::string> still_dispatched = default_still_dispatched());
  ~SkipDispatchGuard();
  SkipDispatchGuard(const SkipDispatchGuard&) = delete;
  SkipDispatchGuard& operator=(const SkipDispatchGuard&) = delete;

  /// True inside a guard on this thread.
  static bool active();

  struct State;  // this thread's allowlist; guards nest

 private:
  State* previous_;
};

// Note [Rule modes]
// Some scopes change what sharding rules decide rather than how the kernel
// runs: inside loss_parallel (core/parallel/loss_parallel.h) the log-softmax
// and nll-loss rules pick the class-sharded algorithm; inside
// context_parallel (core/experimental/context_parallel.h) attention on
// sequence-sharded inputs gathers keys and values (the scope brings that
// attention with it: ContextParallelAttentionScope). A scope sets its bit for
// this thread; rules read it with RuleModeGuard::active, and the sharding
// cache keys its entries on RuleModeGuard::bits() (Note [Sharding cache key]
// in core/dispatch/sharding_propagator.cc), so a plan made inside a scope is
// never reused outside it. A scope may also name operators whose plain tensor
// arguments are taken as Replicate while it is active (loss_parallel's
// targets and class weights), as ImplicitReplicationGuard does for every op.

/// Bits of Note [Rule modes].
enum class RuleMode : uint32_t {
  kLossParallel = 1u << 0,
  kContextParallel = 1u << 1,
};

/// Sets `mode` on this thread while it lives; guards nest.
/// Example: { RuleModeGuard g(RuleMode::kLossParallel, {"aten::nll_loss_forward"}); ... }
class RuleModeGuard {
 public:
  /// `replicate_plain_in`: operator names ("aten::nll_loss_forward" = every
  /// overload) whose plain tensor arguments are taken as Replicate inside.
  explicit RuleModeGuard(RuleMode mode, std::vector<std::string> replicate_plain_in = {});
  ~RuleModeGuard();
  RuleModeGuard(const RuleModeGuard&) = delete;
  RuleModeGuard& operator=(const RuleModeGuard&) = delete;

  /// True inside a guard of `mode` on this thread.
  static bool active(RuleMode mode);
  /// Every mode active on this thread, or-ed; 0 outside all guards.
  static uint32_t bits();

  struct State;

 private:
  State* previous_;
};

/// The attention of sequence-sharded DTensors inside context_parallel.
/// Arguments as at::scaled_dot_product_attention's.
using ContextParallelAttention = at::Tensor (*)(const at::Tensor& query, const at::Tensor& key,
                                                const at::Tensor& value, const c10::optional<at::Tensor>& attn_mask,
                                                double dropout_p, bool is_causal, c10::optional<double> scale,
                                                bool enable_gqa);

/// While it lives on this thread, the attention autograd kernel
/// (core/ops/autograd_overrides.cc) calls `attention` for a query sharded on
/// dim -2 when RuleMode::kContextParallel is active. ContextParallelGuard
/// (core/experimental/context_parallel.h) holds one beside its RuleModeGuard:
/// the algorithm is written on DTensor, above the kernels, so the scope
/// brings it instead of a process-wide hook. Scopes nest.
/// Example: { ContextParallelAttentionScope s(&my_attention); ... }
class ContextParallelAttentionScope {
 public:
  explicit ContextParallelAttentionScope(ContextParallelAttention attention);
  ~ContextParallelAttentionScope();
  ContextParallelAttentionScope(const ContextParallelAttentionScope&) = delete;
  ContextParallelAttentionScope& operator=(const ContextParallelAttentionScope&) = delete;

  /// The innermost scope's attention on this thread; nullptr outside all.
  static ContextParallelAttention current();

 private:
  ContextParallelAttention previous_;
};

namespace detail {

/// True when an active RuleModeGuard names `op` ("aten::nll_loss_forward")
/// as taking plain tensors as Replicate.
bool plain_tensors_replicated_in(std::string_view op);

/// The DTensor kernel's check: true when `op` (full name, "aten::add.Tensor")
/// must run on local tensors now.
bool skip_dispatch_for(const std::string& op);

/// Runs `op` on the local tensors of the DTensors on `stack` (boxed
/// convention: arguments in, results out), as Note [Skipping DTensor
/// dispatch] describes.
void run_on_local_tensors(const c10::OperatorHandle& op, torch::jit::Stack* stack);

}  // namespace detail
}  // namespace dtensor
