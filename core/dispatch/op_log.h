// The log lines of sharding propagation (DTENSOR_LOG, core/log.h): one per
// DTensor op, written by the DTensor kernel once the plan is known.
//   if (log_enabled(LogLevel::kInfo)) log_op_decision(call, result, cache_hit);
#pragma once

#include "core/dispatch/op_call.h"
#include "core/dispatch/sharding_propagator.h"

namespace dtensor {

/// Writes, at LogLevel::kInfo, "aten::mm.default: [S(0)] f64[8, 16], [R]
/// f64[16, 4] -> [S(0)] f64[8, 4]" (inputs as passed, outputs as produced)
/// and, when the plan wants other input placements, "; plan [S(0)], [S(0)]
/// -> [S(0)]". At kDebug it adds whether the sharding cache hit and, per
/// mesh dim, the strategy chosen and the cheapest rejected with their costs.
/// Precondition: log_enabled(LogLevel::kInfo).
void log_op_decision(const OpCall& call, const PropagationResult& result, bool cache_hit);

}  // namespace dtensor
