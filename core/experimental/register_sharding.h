// register_sharding: user-defined sharding rules for aten operators (as
// torch.distributed.tensor.experimental.register_sharding). The function sees
// one call (input specs, non-tensor arguments) and lists the acceptable
// placements on ONE mesh dim; they are expanded to the whole mesh, the
// cheapest is picked per mesh dim, and the rule replaces any built-in one.
//   register_sharding("aten::erfinv", [](const OpCall& call) {
//     return std::vector<AcceptableSharding>{{{Replicate()}, {Replicate()}},
//                                            {{Shard(0)}, {Shard(0)}}};
//   });
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/dispatch/op_call.h"

namespace dtensor::experimental {

/// One acceptable layout on a single mesh dim: a placement per tensor output
/// and per tensor input (in argument order, as OpCall::inputs). Shard(-1)
/// counts from the end of that tensor's dims.
struct AcceptableSharding {
  std::vector<Placement> outputs;
  std::vector<Placement> inputs;
};

/// `call.inputs` holds the input specs (placements on every mesh dim, global
/// shape), `call.arg(i)` the schema arguments (dims, scalars, flags),
/// `call.outputs` the global output shapes. Return at least one layout.
using ShardingFn = std::function<std::vector<AcceptableSharding>(const OpCall& call)>;

/// Registers `fn` for `op_name` ("aten::mm" matches every overload,
/// "aten::add.Tensor" one). Replaces the built-in rule; cached decisions are
/// dropped. Thread-safe; call it before or between steps, on every rank (the
/// registry is per process: in a fake world once is enough). Throws when no
/// such aten operator exists, or when it never reaches DTensor (it has a
/// CompositeImplicitAutograd kernel: register the ops it decomposes into).
/// Example: register_sharding("aten::erfinv", fn).
void register_sharding(const std::string& op_name, ShardingFn fn);
void register_sharding(const std::vector<std::string>& op_names, ShardingFn fn);

}  // namespace dtensor::experimental
