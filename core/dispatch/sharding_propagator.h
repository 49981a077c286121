// Sharding propagation with a per-thread cache: for an operator call, the
// global metadata of its outputs (found by running the operator on the meta
// device with global shapes) and the rule's ShardingPlan.
//   std::shared_ptr<const PropagationResult> r = propagate(call, scalar_key);
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/dispatch/op_call.h"

namespace dtensor {

/// A cached decision, immutable once made.
struct PropagationResult {
  std::vector<TensorMeta> output_metas;
  ShardingPlan plan;
  /// The kernel plan.local_kernel names, resolved once; empty: the op itself.
  LocalKernel local_kernel;
  /// The spec of each output (one per output_metas entry) on the mesh of the
  /// call that made this result. See Note [Shared output specs].
  std::vector<std::shared_ptr<const DTensorSpec>> output_specs;
};

// Note [Shared output specs]
// Wrapping an output in a DTensor needs its spec: mesh, placements, global
// shape and strides. Built per call, that is three vector copies and a mesh
// reference for every op. A cached result keeps each output's spec built
// once, and the dispatcher hands the same immutable object to every DTensor
// it wraps for a call on that same mesh object (DeviceMesh::same_object; a
// hit for an equal mesh of another object builds its own, so an output
// always carries its call's mesh). A wrap then costs a reference count.

/// Returns the plan and the global metadata of the outputs. `arg_key` encodes
/// the non-tensor arguments that can change the decision (see Note [Sharding
/// cache key]). call.outputs is filled only on a cache miss, for the rule that
/// runs then; afterwards read the outputs from the result (a hit copies
/// nothing, See Note [Sharding cache lookup]). The result is shared with the
/// cache and stays valid however the cache changes (a rule or local kernel
/// may issue DTensor ops that evict it). Throws when the op has no rule.
/// Example: auto r = propagate(call, key); r->plan.output_placements[0];
std::shared_ptr<const PropagationResult> propagate(OpCall& call, const std::vector<int64_t>& arg_key);

// Note [Identity fast path]
// A training loop calls each operator again and again on DTensors whose spec
// objects recur: parameters keep theirs, and a cached decision wraps every
// output in one shared spec (Note [Shared output specs]). Such a call need
// not copy its input specs into the OpCall, hash them and compare them field
// by field (a third of a cached op's cost): per thread, the last decision of
// each operator (a direct-mapped table) is kept with the spec objects of its
// inputs, held so that their addresses cannot be reused, its argument key,
// the registry generation and the rule modes. A call whose inputs are those
// very objects and whose key, generation and modes are equal gets that
// decision; it counts as a cache hit. The dispatcher takes this path only
// when nothing needs the specs copied (no plain tensor input, no op observer,
// no logging); a decision that redistributes or runs a local kernel copies
// them afterwards. clear_propagation_cache() clears the table too.

/// The decision remembered for `op` on these very spec objects (null for a
/// plain tensor input: never remembered), or null. The pointer is the
/// table's: valid until this thread's next DTensor op (copy it to hold the
/// decision across one, as a call whose local kernel issues DTensor ops must).
/// A found decision counts as a cache hit unless `count_hit` is false (the
/// unboxed fast path counts it with count_unboxed_hit() once it uses it).
const std::shared_ptr<const PropagationResult>* propagate_by_identity(
    const c10::OperatorHandle& op, const std::vector<int64_t>& arg_key,
    const std::vector<const std::shared_ptr<const DTensorSpec>*>& inputs, bool count_hit = true);
/// Counts a cache hit of the calling thread taken by the unboxed fast path
/// (Note [Unboxed fast path] in core/dispatch/fast_kernels.cc).
void count_unboxed_hit();
/// Remembers `result` as the decision for `op` on these spec objects.
void remember_by_identity(const c10::OperatorHandle& op, const std::vector<int64_t>& arg_key,
                          const std::vector<const std::shared_ptr<const DTensorSpec>*>& inputs,
                          std::shared_ptr<const PropagationResult> result);

/// Cache statistics of the calling thread.
struct PropagationCacheStats {
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t unboxed = 0;  // hits whose op ran by the unboxed fast path
  uint64_t size = 0;
};
PropagationCacheStats propagation_cache_stats();
void clear_propagation_cache();

/// Entries the calling thread's cache holds before it clears itself (default
/// 8192); for tests of eviction. Precondition: entries >= 1.
/// Example: set_propagation_cache_capacity(1);   // every miss evicts
void set_propagation_cache_capacity(size_t entries);

}  // namespace dtensor
