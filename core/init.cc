// dtensor::init: rules first, then the kernel that looks them up.
#include "core/init.h"

#include <mutex>

#include "core/dispatch/foreach_rules.h"
#include "core/dispatch/op_dispatcher.h"
#include "core/dispatch/sharding_registry.h"
#include "core/ops/builtin_rules.h"

namespace dtensor {

// Note [Explicit registration]
// Everything is registered from this function, on first use, under one
// std::call_once: the registry is a function-local static (built on first
// use, never destroyed), so no global constructor of one object file depends
// on another's, and nothing relies on a static initialiser that the linker
// may drop from an unreferenced object file. Rules go in before the kernel,
// so that the first op the kernel sees already finds its rule.
void init() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_builtin_rules(ShardingRegistry::global());
    register_foreach_kernels(ShardingRegistry::global());
    register_dtensor_kernel();
  });
}

}  // namespace dtensor
