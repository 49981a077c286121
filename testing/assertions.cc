// DTensor assertions: global value against a reference, placements, goldens.
#include "testing/assertions.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <limits>
#include <sstream>
#include <vector>

#include "core/dtensor.h"
#include "core/dtensor_impl.h"
#include "trace/trace_json.h"

namespace dtensor::testing {
namespace {

// "rank 1 of 4" inside a world, else "".
std::string where_am_i() {
  World* world = current_world();
  if (world == nullptr) return "";
  return " on rank " + std::to_string(world->rank()) + " of " + std::to_string(world->size());
}

std::string describe(const at::Tensor& t, const at::Tensor& global) {
  std::ostringstream out;
  if (is_dtensor(t)) {
    DTensor dt(t);
    out << "DTensor " << to_string(dt.placements()) << " on " << dt.device_mesh().to_string() << ", shape "
        << global.sizes() << " (local " << dt.local_tensor().sizes() << "), " << c10::toString(t.scalar_type());
  } else {
    out << "tensor, shape " << t.sizes() << ", " << c10::toString(t.scalar_type());
  }
  return out.str();
}

std::vector<int64_t> unravel(int64_t flat, at::IntArrayRef sizes) {
  std::vector<int64_t> index(sizes.size());
  for (size_t i = sizes.size(); i-- > 0;) {
    index[i] = flat % sizes[i];
    flat /= sizes[i];
  }
  return index;
}

// 1e-06, 0.5: as a stream prints by default (gtest's Message shows 17 digits).
std::string format_double(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

bool update_goldens() {
  const char* update = std::getenv("DTENSOR_UPDATE_GOLDEN");
  return update != nullptr && std::string(update) == "1";
}

std::string running_test_name() {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return info == nullptr ? "" : std::string(info->test_suite_name()) + "." + info->name();
}

}  // namespace

::testing::AssertionResult DTensorEqual(const char* actual_expr, const char* reference_expr, const char* tol_expr,
                                        const at::Tensor& actual, const at::Tensor& reference, double tol) {
  TORCH_CHECK(actual.defined() && reference.defined(), "EXPECT_DTENSOR_EQ(", actual_expr, ", ", reference_expr,
              "): undefined tensor");
  at::Tensor global;
  {
    at::NoGradGuard no_grad;
    global = is_dtensor(actual) ? DTensor(actual).full_tensor().detach() : actual.detach();
  }
  const at::Tensor a = global.cpu().to(at::kDouble);
  const at::Tensor b = reference.detach().cpu().to(at::kDouble);
  auto failure = [&]() {
    auto result = ::testing::AssertionFailure();
    result << "EXPECT_DTENSOR_EQ(" << actual_expr << ", " << reference_expr << ", " << tol_expr << ") failed"
           << where_am_i() << ":\n  " << actual_expr << ": " << describe(actual, global) << "\n  " << reference_expr
           << ": " << describe(reference, reference) << "\n  ";
    return result;
  };
  if (a.sizes() != b.sizes()) return failure() << "the shapes differ";
  if (a.numel() == 0) return ::testing::AssertionSuccess();
  const at::Tensor same = a.eq(b).logical_or(a.isnan().logical_and(b.isnan()));
  at::Tensor diff = (a - b).abs().masked_fill(same, 0.0);
  diff = diff.masked_fill(diff.isnan(), std::numeric_limits<double>::infinity());
  const int64_t flat = diff.argmax().item<int64_t>();
  const double max_diff = diff.reshape(-1)[flat].item<double>();
  if (max_diff <= tol) return ::testing::AssertionSuccess();
  const int64_t off = diff.gt(tol).sum().item<int64_t>();
  std::ostringstream values;
  values << std::setprecision(10) << max_diff << " at " << c10::IntArrayRef(unravel(flat, a.sizes())) << " ("
         << a.reshape(-1)[flat].item<double>() << " vs " << b.reshape(-1)[flat].item<double>() << ")";
  return failure() << "max |" << actual_expr << " - " << reference_expr << "| = " << values.str() << "; " << off
                   << " of " << a.numel() << " elements differ by more than " << format_double(tol);
}

::testing::AssertionResult PlacementsEqual(const char* actual_expr, const char* expected_expr,
                                           const at::Tensor& actual, std::string_view expected) {
  Placements parsed;
  try {
    parsed = parse_placements(expected);
  } catch (const std::exception& e) {  // LayoutError
    return ::testing::AssertionFailure() << "EXPECT_PLACEMENTS(" << actual_expr << ", " << expected_expr
                                         << "): cannot parse the expected placements: " << e.what();
  }
  return PlacementsEqual(actual_expr, expected_expr, actual, parsed);
}

::testing::AssertionResult PlacementsEqual(const char* actual_expr, const char* expected_expr,
                                           const at::Tensor& actual, const Placements& expected) {
  if (!actual.defined() || !is_dtensor(actual)) {
    return ::testing::AssertionFailure() << "EXPECT_PLACEMENTS(" << actual_expr << ", " << expected_expr << ")"
                                         << where_am_i() << ": " << actual_expr << " is not a DTensor";
  }
  DTensor dt(actual);
  if (dt.placements() == expected) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "EXPECT_PLACEMENTS(" << actual_expr << ", " << expected_expr << ") failed"
                                       << where_am_i() << ":\n  actual:   " << to_string(dt.placements())
                                       << "\n  expected: " << to_string(expected) << "\n  on "
                                       << dt.device_mesh().to_string() << ", shape " << dt.sizes();
}

debug::CommReport comm_report_of(const debug::CommDebugMode& mode) {
  debug::CommReport report;
  report.trace = mode.trace();
  report.options.program = running_test_name();
  World* world = current_world();
  report.options.backend = world != nullptr ? world->backend() : BackendKind::kFake;
  report.options.world_size = world != nullptr ? world->size() : report.trace.world_size;
  report.options.rank = world != nullptr ? world->rank() : report.trace.rank;
  return report;
}

debug::CommReport comm_report_of(const debug::FakeWorldTrace& trace) {
  debug::CommReport report;
  report.trace = trace.trace();
  report.options.program = running_test_name();
  report.options.backend = BackendKind::kFake;
  report.options.world_size = report.trace.world_size;
  return report;
}

::testing::AssertionResult MatchesGolden(const char* report_expr, const char* path_expr,
                                         const debug::CommReport& report, const std::string& golden_path) {
  const std::string actual = debug::report_json(report);
  if (update_goldens()) {
    World* world = current_world();
    if (world != nullptr && world->rank() != 0) {
      return ::testing::AssertionSuccess() << "rank 0 updates " << golden_path;
    }
    const char* dir = std::getenv("DTENSOR_GOLDEN_DIR");
    const std::string path = dir != nullptr && *dir != '\0' ? std::string(dir) + "/" + golden_path : golden_path;
    trace::write_text_file(path, actual);
    return ::testing::AssertionSuccess() << "updated " << path;
  }
  if (!std::ifstream(golden_path).good()) {
    return ::testing::AssertionFailure()
           << "golden file " << golden_path << " (" << path_expr << ") is missing; create it with "
           << "DTENSOR_UPDATE_GOLDEN=1 (see testing/assertions.h) or comm_report --json. This run:\n"
           << actual;
  }
  const debug::GoldenComparison cmp = debug::compare_report_json(trace::read_text_file(golden_path), actual);
  if (cmp.matches) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "comm report " << report_expr << " differs from golden " << golden_path
                                       << ":\n"
                                       << cmp.diff << "(set DTENSOR_UPDATE_GOLDEN=1 to accept)";
}

}  // namespace dtensor::testing
