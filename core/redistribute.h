// Local redistribution: turns this rank's shard under one spec into its shard
// under other placements by running the plan from layout/'s planner
// through core/collectives. No autograd here: DTensor::redistribute
// (core/dtensor.h) wraps it in an autograd function.
//   at::Tensor shard = redistribute_local(local, spec, {Replicate(), Shard(1)});
#pragma once

#include <ATen/core/Tensor.h>

#include <memory>

#include "core/dtensor_spec.h"
#include "layout/redistribute_plan.h"

namespace dtensor {

/// This rank's local tensor under `to`, given `local` laid out as `from`.
/// Collectives run on the communicators of `from.mesh`. Returns `local`
/// itself when the placements are equal. Throws (naming placements, shape,
/// mesh and rank) for transitions that are refused, e.g. Partial(max) -> Partial(sum).
at::Tensor redistribute_local(const at::Tensor& local, const DTensorSpec& from,
                              const Placements& to);

/// The plan redistribute_local runs for `from` -> `to`, from the same caches
/// (See Note [Redistribute plan cache] in redistribute.cc): sharding
/// propagation costs candidates with it. Throws c10::Error (naming
/// placements, shape, mesh and rank) for refused transitions. Shared and
/// immutable: it stays valid when the cache evicts it.
std::shared_ptr<const RedistributePlan> redistribute_plan(const DTensorSpec& from,
                                                          const Placements& to);

/// Plan cache statistics of the calling thread (misses include plans found
/// in the process-wide cache). See Note [Redistribute plan
/// cache] in redistribute.cc.
struct RedistributePlanCacheStats {
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t size = 0;
};
RedistributePlanCacheStats redistribute_plan_cache_stats();
/// Empties the calling thread's cache and the process-wide one.
void clear_redistribute_plan_cache();

}  // namespace dtensor
