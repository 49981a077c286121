// OpCall: one operator call as sharding rules see it: the operator, its
// arguments (DTensors still wrapped), the spec of every tensor input and the
// global metadata of every output. ShardingPlan is what a rule answers: pure
// data, cached per thread. LocalKernel is the code an op may run on its local
// tensors instead of the operator itself (See Note [Local kernels]).
//   ShardingPlan plan = rule(call);   // input placements to redistribute to, output placements
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/ivalue.h>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtensor_spec.h"
#include "layout/collective_origin.h"

namespace dtensor {

/// Where a tensor input sits in the argument list.
struct TensorArgPosition {
  size_t arg_index = 0;      // index in the schema's arguments
  int64_t list_index = -1;   // index within a Tensor[] argument, or -1
};

struct OpCall {
  const c10::OperatorHandle* op = nullptr;
  std::string_view name;                // "aten::add.Tensor"; lives as long as the operator
  const std::vector<c10::IValue>* args = nullptr;  // schema arguments, as passed
  DeviceMesh mesh;
  std::vector<DTensorSpec> inputs;      // one per tensor input, in argument order
  std::vector<TensorArgPosition> positions;  // parallel to `inputs`
  std::vector<TensorMeta> outputs;      // global metadata of each tensor output
  int64_t self_input = -1;              // input written by an in-place/out= op, or -1
  /// Set by derived out= rules (Note [Derived rules: out= and in-place
  /// overloads]): output 0 must take these placements, the out tensor's.
  const Placements* out_placements = nullptr;

  int mesh_ndim() const { return mesh.ndim(); }
  /// Argument `i` of the schema (non-tensor arguments: dims, scalars, flags).
  const c10::IValue& arg(size_t i) const { return (*args)[i]; }
  size_t num_args() const { return args->size(); }
  /// "aten::mm([S(0), R] f32[8, 4], [R, R] f32[4, 2])", for error messages.
  std::string describe() const;
};

/// A rule's answer: the placements every tensor input must have (inputs are
/// redistributed when they differ) and the placements of every tensor output.
/// Pure data: a rule decides, it never computes on tensors (See Note [Local
/// kernels]). Plans are cached per thread, and every rank of a fake world is
/// its own thread.
/// Example: ShardingPlan{{{Shard(0)}, {Replicate()}}, {{Shard(0)}}}   // mm, row-sharded
struct ShardingPlan {
  std::vector<Placements> input_placements;
  std::vector<Placements> output_placements;
  /// For in-place ops whose result takes a new spec (fill_ on a Partial
  /// tensor becomes Replicate; squeeze_ changes shape and shard dims): the
  /// written input takes output 0's placements and metadata.
  bool self_placements_change = false;
  /// For ops whose schema marks an input written that this call only reads
  /// (batch norm in eval mode leaves running_mean and running_var alone):
  /// that input may be redistributed like any other.
  bool self_only_read = false;
  /// Non-tensor arguments to replace in the local call (schema index ->
  /// value), e.g. a view's global size becomes this rank's local size.
  std::vector<std::pair<size_t, c10::IValue>> local_arg_overrides;
  /// The override (if any) that holds output 0's local shape, as expand's
  /// size does: derived from output 0's placements alone, so it is
  /// recomputed when Note [Operators on strided shards] makes them strided.
  /// -1: none. Example: 1 for aten::expand.
  int local_shape_arg = -1;
  /// Name of the local kernel (ShardingRegistry::add_local_kernel) that runs
  /// on this rank's local arguments instead of the operator; empty: the
  /// operator itself. Example: "dtensor::masked_embedding".
  std::string local_kernel;
  /// The local kernel reads only global metadata (never a shard's offset or
  /// size), so it is exact for any layout of the rows, _StridedShard
  /// included (Note [Operators on strided shards]). Example: squeeze.
  bool local_kernel_any_layout = false;
  /// The local kernel reads nothing of LocalCall::call but its arguments
  /// (the rule put what it needs in the plan): a call decided by Note
  /// [Identity fast path] need not copy its input specs for it.
  bool local_kernel_reads_no_specs = false;
  /// A _foreach_ plan whose elements want one shared Replicate argument
  /// (_foreach_add.Tensor's 0-d `other`) laid out differently (Note [Foreach
  /// rules]): per element, per input, the placements that element takes it
  /// in, sliced locally (empty: the input as planned). Its local kernel runs
  /// the per-tensor op element by element.
  std::vector<std::vector<Placements>> element_input_placements;
  /// Per mesh dim, the strategy chosen and the cheapest rejected one, for
  /// the origins of implicit redistributions (Note [Collective origins] in
  /// core/redistribution_origin.h); filled by expand_per_mesh_dim, empty for
  /// rules that decide otherwise.
  std::vector<StrategyChoice> strategy_choices;
};

// Note [Local kernels]
// Some ops cannot run as "the same aten op on the local shards": a row-sharded
// embedding must mask the indices this rank does not hold, a random fill
// draws its block through the DTensor RNG, a mean loss over shards divides by
// the global count. The rule stays a pure decision: it names a local kernel in
// ShardingPlan::local_kernel, and the dispatcher runs that kernel on the
// local arguments (after redistribution and local_arg_overrides) in place of
// op.callBoxed. Kernels are registered by name, like rules
// (ShardingRegistry::add_local_kernel), next to the rule family that uses
// them; what a kernel needs it derives from the call and the plan. Ops whose
// autograd formula must change register an AutogradPrivateUse1 kernel
// instead (core/ops/autograd_overrides.cc).

/// What a local kernel sees: the call (input specs as passed, before
/// redistribution; call.outputs may be empty, use `output_metas`), the plan
/// and the global metadata of every output.
struct LocalCall {
  const OpCall& call;
  const ShardingPlan& plan;
  const std::vector<TensorMeta>& output_metas;
  /// Each output's spec (placements and global metadata; the mesh of the
  /// call that made the decision, equal to this call's), shared with the
  /// cached decision: a kernel that needs no input spec reads these and can
  /// set ShardingPlan::local_kernel_reads_no_specs.
  const std::vector<std::shared_ptr<const DTensorSpec>>& output_specs;
};

/// Runs the op on this rank's local arguments: `stack` holds them (boxed
/// convention, overrides applied) and must hold the op's returns afterwards.
/// Example: [](const LocalCall& c, std::vector<c10::IValue>* s) { c.call.op->callBoxed(s); }
using LocalKernel = std::function<void(const LocalCall& call, std::vector<c10::IValue>* stack)>;

}  // namespace dtensor
