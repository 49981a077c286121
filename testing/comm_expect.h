// GoogleTest assertions on comm counts (of a CommDebugMode, FakeWorldTrace,
// CommReport, or a block run on this rank). Part of //testing:gtest; goldens
// are EXPECT_MATCHES_GOLDEN in testing/assertions.h.
//   EXPECT_COMM_COUNTS(comm, {{"all_reduce", 1}});
//   EXPECT_COMM_COUNTS([&] { y.full_tensor(); }, {{"all_reduce", 1}});   // a block, on this rank
//   EXPECT_COMM_MODULE_COUNTS(comm, "MLPModule.net2", "forward", {{"all_reduce", 1}});
//   EXPECT_NO_IMPLICIT_REDISTRIBUTION(nn::call(model, x));   // strict mode: only explicit redistributions
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <type_traits>
#include <utility>

#include "debug/comm_debug_mode.h"
#include "trace/trace_model.h"

namespace dtensor::testing {

using trace::KindCounts;
using trace::ModuleCounts;

/// Passes when the counts are equal; the failure lists each differing kind.
::testing::AssertionResult CommCountsEqual(const char* actual_expr, const char* expected_expr,
                                           const KindCounts& actual, const KindCounts& expected);

/// The counts of `source`: source.get_comm_counts() for a CommDebugMode,
/// FakeWorldTrace or CommReport; for a callable (a block: `[&] { ... }`),
/// runs it once under a fresh CommDebugMode on the calling rank (which needs a
/// current world) and returns what it issued.
template <typename Source>
KindCounts comm_counts_of(Source&& source) {
  if constexpr (std::is_invocable_v<Source&>) {
    debug::CommDebugMode mode;
    {
      auto guard = mode.enter();
      source();
    }
    return mode.get_comm_counts();
  } else {
    return source.get_comm_counts();
  }
}

/// Runs `block` on this rank inside an ExplicitRedistributionGuard that
/// records (core/dispatch/explicit_redistribution.h, policy kRecord): passes
/// when sharding propagation redistributed no input in a way that
/// communicates; the failure lists each call site (op, module, input,
/// placements, collectives, and how to make it explicit). Modules are named
/// under `root` when given.
::testing::AssertionResult NoImplicitRedistribution(const char* block_expr, const std::function<void()>& block);

/// Counts of one module and phase ("forward"/"backward") of a module table;
/// a missing module or phase counts as empty.
KindCounts module_phase_counts(const ModuleCounts& counts, const std::string& fqn, const std::string& phase);

}  // namespace dtensor::testing

/// EXPECT_COMM_COUNTS(x, {{"all_reduce", 1}}): x.get_comm_counts() equals the
/// counts (x: CommDebugMode, FakeWorldTrace, CommReport), or x is a block
/// `[&] { ... }` that issues exactly these collectives (see comm_counts_of).
/// A comma at the top level of a block must be inside parentheses.
#define EXPECT_COMM_COUNTS(source, ...)                                                                 \
  EXPECT_PRED_FORMAT2(::dtensor::testing::CommCountsEqual,                                              \
                      ::dtensor::testing::comm_counts_of(source), ::dtensor::trace::KindCounts(__VA_ARGS__))
#define ASSERT_COMM_COUNTS(source, ...)                                                                 \
  ASSERT_PRED_FORMAT2(::dtensor::testing::CommCountsEqual,                                              \
                      ::dtensor::testing::comm_counts_of(source), ::dtensor::trace::KindCounts(__VA_ARGS__))

/// EXPECT_COMM_MODULE_COUNTS(x, fqn, phase, {{"all_reduce", 1}}): that module's
/// counts in x.get_comm_module_counts() for "forward" or "backward".
#define EXPECT_COMM_MODULE_COUNTS(source, fqn, phase, ...)                                              \
  EXPECT_PRED_FORMAT2(                                                                                  \
      ::dtensor::testing::CommCountsEqual,                                                              \
      ::dtensor::testing::module_phase_counts((source).get_comm_module_counts(), (fqn), (phase)),       \
      ::dtensor::trace::KindCounts(__VA_ARGS__))

/// EXPECT_NO_IMPLICIT_REDISTRIBUTION(statements): the statements (run once,
/// on this rank) make no implicit redistribution that communicates; see
/// NoImplicitRedistribution. Example:
///   EXPECT_NO_IMPLICIT_REDISTRIBUTION(auto y = nn::call(model, x); y.sum().backward());
#define EXPECT_NO_IMPLICIT_REDISTRIBUTION(...) \
  EXPECT_PRED_FORMAT1(::dtensor::testing::NoImplicitRedistribution, [&] { __VA_ARGS__; })
#define ASSERT_NO_IMPLICIT_REDISTRIBUTION(...) \
  ASSERT_PRED_FORMAT1(::dtensor::testing::NoImplicitRedistribution, [&] { __VA_ARGS__; })
