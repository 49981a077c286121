// Sharding propagation with a per-thread cache: for an operator call, the
// global metadata of its outputs (found by running the operator on the meta
// device with global shapes) and the rule's ShardingPlan.
//   const PropagationResult& r = propagate(call, scalar_key);
#pragma once

#include <cstdint>
#include <vector>

#include "core/dispatch/op_call.h"

namespace dtensor {

struct PropagationResult {
  std::vector<TensorMeta> output_metas;
  ShardingPlan plan;
};

/// Returns the plan and the global metadata of the outputs. `arg_key` encodes
/// the non-tensor arguments that can change the decision (see Note [Sharding
/// cache key]). call.outputs is filled only on a cache miss, for the rule that
/// runs then; afterwards read the outputs from the result (a hit copies
/// nothing, See Note [Sharding cache lookup]). The result stays valid until
/// the next call on this thread.
const PropagationResult& propagate(OpCall& call, const std::vector<int64_t>& arg_key);

/// Cache statistics of the calling thread.
struct PropagationCacheStats {
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t size = 0;
};
PropagationCacheStats propagation_cache_stats();
void clear_propagation_cache();

}  // namespace dtensor
