// OpCall: one operator call as sharding rules see it: the operator, its
// arguments (DTensors still wrapped), the spec of every tensor input and the
// global metadata of every output. ShardingPlan is what a rule answers.
//   ShardingPlan plan = rule(call);   // input placements to redistribute to, output placements
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/ivalue.h>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtensor_spec.h"

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

  int mesh_ndim() const { return mesh.ndim(); }
  /// Argument `i` of the schema (non-tensor arguments: dims, scalars, flags).
  const c10::IValue& arg(size_t i) const { return (*args)[i]; }
  size_t num_args() const { return args->size(); }
  /// "aten::mm([S(0), R] f32[8, 4], [R, R] f32[4, 2])", for error messages.
  std::string describe() const;
};

/// A rule's answer: the placements every tensor input must have (inputs are
/// redistributed when they differ) and the placements of every tensor output.
struct ShardingPlan {
  std::vector<Placements> input_placements;
  std::vector<Placements> output_placements;
  /// For in-place ops whose result takes a new spec (fill_ on a Partial
  /// tensor becomes Replicate; squeeze_ changes shape and shard dims): the
  /// written input takes output 0's placements and metadata.
  bool self_placements_change = false;
  /// Non-tensor arguments to replace in the local call (schema index ->
  /// value), e.g. a view's global size becomes this rank's local size. Plans
  /// are cached per thread, and every rank of a fake world is its own thread.
  std::vector<std::pair<size_t, c10::IValue>> local_arg_overrides;
  /// Last-moment fix-up of the local call's arguments given the local tensors
  /// (e.g. a view's strides computed from the actual local strides).
  std::function<void(std::vector<c10::IValue>& local_stack)> local_args_fixup;
};

}  // namespace dtensor
