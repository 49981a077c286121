// Skipping DTensor sharding propagation (public name): inside a
// SkipDispatchGuard, DTensor operators run directly on the local shards.
// The state lives with the dispatcher's other switches in
// core/dispatch/dispatch_mode.h; See Note [Skipping DTensor dispatch].
//   { dtensor::experimental::SkipDispatchGuard guard;  p.add_(g, -lr); }   // local add, no planning
#pragma once

#include "core/dispatch/dispatch_mode.h"

namespace dtensor::experimental {

/// RAII guard, per thread; nests. See dtensor::SkipDispatchGuard.
using SkipDispatchGuard = ::dtensor::SkipDispatchGuard;
using ::dtensor::default_still_dispatched;

namespace detail {
using ::dtensor::detail::run_on_local_tensors;
using ::dtensor::detail::skip_dispatch_for;
}  // namespace detail

}  // namespace dtensor::experimental
