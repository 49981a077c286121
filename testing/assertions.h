// GoogleTest assertions for DTensors, for use inside run_on_ranks / DTENSOR_TEST
// bodies (every rank calls them). Part of //testing:gtest.
//   EXPECT_DTENSOR_EQ(y, reference, 1e-6);     // gathers y on every rank
//   EXPECT_PLACEMENTS(y, "S(0),R");
//   EXPECT_COMM_COUNTS([&] { y = torch::mm(x, w); }, {{"all_reduce", 1}});
//   EXPECT_MATCHES_GOLDEN(comm, "testdata/mm.golden.json");
#pragma once

#include <ATen/core/Tensor.h>
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "layout/placement.h"
#include "debug/comm_debug_mode.h"
#include "debug/fake_world_trace.h"
#include "debug/report/comm_report.h"
#include "testing/comm_expect.h"  // EXPECT_COMM_COUNTS, EXPECT_COMM_MODULE_COUNTS

namespace dtensor::testing {

/// Passes when `actual`'s global value (full_tensor() of a DTensor, which is
/// a collective: every rank of its mesh must call it; a plain tensor as is)
/// has `reference`'s shape and every element within `tol` of it (absolute;
/// NaN equals NaN). The failure names the rank, both shapes and dtypes, the
/// DTensor's placements, mesh and local shape, the max |actual - reference|,
/// where it is, and how many elements are off. Dtypes may differ (values are
/// compared as double).
::testing::AssertionResult DTensorEqual(const char* actual_expr, const char* reference_expr, const char* tol_expr,
                                        const at::Tensor& actual, const at::Tensor& reference, double tol);

/// Passes when `actual` is a DTensor whose placements equal `expected`
/// ("S(0),R", "[S(0), R]", "P(sum)", see parse_placements).
::testing::AssertionResult PlacementsEqual(const char* actual_expr, const char* expected_expr,
                                           const at::Tensor& actual, std::string_view expected);
::testing::AssertionResult PlacementsEqual(const char* actual_expr, const char* expected_expr,
                                           const at::Tensor& actual, const Placements& expected);

/// A report of one rank's (or a merged fake world's) trace, for goldens:
/// program = the running test's "Suite.Name" (or "" outside tests), backend
/// and world size of the current world (fake and the trace's size outside).
debug::CommReport comm_report_of(const debug::CommDebugMode& mode);
debug::CommReport comm_report_of(const debug::FakeWorldTrace& trace);
inline const debug::CommReport& comm_report_of(const debug::CommReport& report) { return report; }

/// Compares report_json(report) with the golden file (what
/// debug::compare_report_json guards: program, backend, world size, counts
/// per kind and module and phase, bytes; a readable diff on mismatch). A
/// missing file fails, saying how to create it. With
/// DTENSOR_UPDATE_GOLDEN=1 the file is (re)written instead
/// ($DTENSOR_GOLDEN_DIR/path when that is set) and the check passes; inside a
/// world only rank 0 writes, other ranks pass. Relative paths are relative
/// to the working directory (the runfiles root under bazel test: add the
/// file to the test's data).
::testing::AssertionResult MatchesGolden(const char* report_expr, const char* path_expr,
                                         const debug::CommReport& report, const std::string& golden_path);

}  // namespace dtensor::testing

/// EXPECT_DTENSOR_EQ(dt, reference, tol): see DTensorEqual. Call it on every rank.
#define EXPECT_DTENSOR_EQ(actual, reference, tol) \
  EXPECT_PRED_FORMAT3(::dtensor::testing::DTensorEqual, actual, reference, tol)
#define ASSERT_DTENSOR_EQ(actual, reference, tol) \
  ASSERT_PRED_FORMAT3(::dtensor::testing::DTensorEqual, actual, reference, tol)

/// EXPECT_PLACEMENTS(dt, "S(0),R"): see PlacementsEqual.
#define EXPECT_PLACEMENTS(actual, expected) EXPECT_PRED_FORMAT2(::dtensor::testing::PlacementsEqual, actual, expected)
#define ASSERT_PLACEMENTS(actual, expected) ASSERT_PRED_FORMAT2(::dtensor::testing::PlacementsEqual, actual, expected)

/// EXPECT_MATCHES_GOLDEN(x, "path.json"), x: a CommDebugMode, FakeWorldTrace
/// or CommReport. See MatchesGolden.
#define EXPECT_MATCHES_GOLDEN(source, golden_path)                                                          \
  EXPECT_PRED_FORMAT2(::dtensor::testing::MatchesGolden, ::dtensor::testing::comm_report_of(source), \
                      golden_path)
