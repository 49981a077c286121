// dtensor::init(): the one explicit registration of the built-ins: sharding
// rules and local kernels of core/ops/ into ShardingRegistry::global(), the
// autograd overrides, then the DTensor kernel (core/dispatch/). Explicit, not
// static initialisers, so that no registration depends on link order or on
// Bazel keeping an object file (See Note [Explicit registration]).
//   dtensor::init();   // once, before the first DTensor op (idempotent)
#pragma once

namespace dtensor {

/// Registers the built-in sharding rules and the DTensor kernel for every
/// aten operator known now. Idempotent and thread-safe; DTensor factories,
/// distribute_tensor, from_local and register_sharding call it, so users
/// rarely need to. Example: dtensor::init(); auto d = make_dtensor(local, spec);
void init();

}  // namespace dtensor
