// GoogleTest helpers: comm count comparisons. See comm_expect.h.
#include "testing/comm_expect.h"

#include <set>

#include "core/dispatch/explicit_redistribution.h"

namespace dtensor::testing {
namespace {

// An expression as the message shows it: a long one (a block) is cut.
std::string shorten(const char* expr) {
  std::string text(expr);
  const std::string wrapper = "::dtensor::testing::comm_counts_of(";
  if (text.rfind(wrapper, 0) == 0 && text.back() == ')') text = text.substr(wrapper.size(), text.size() - wrapper.size() - 1);
  constexpr size_t kMax = 72;
  return text.size() <= kMax ? text : text.substr(0, kMax - 3) + "...";
}

// "{all_reduce: 2, all_gather_into_tensor: 1}".
std::string braces(const KindCounts& counts) {
  std::string out = "{";
  for (const auto& [kind, n] : counts) out += (out.size() > 1 ? ", " : "") + kind + ": " + std::to_string(n);
  return out + "}";
}

}  // namespace

::testing::AssertionResult CommCountsEqual(const char* actual_expr, const char* expected_expr,
                                           const KindCounts& actual, const KindCounts& expected) {
  if (actual == expected) return ::testing::AssertionSuccess();
  std::set<std::string> kinds;
  for (const auto& e : actual) kinds.insert(e.first);
  for (const auto& e : expected) kinds.insert(e.first);
  auto result = ::testing::AssertionFailure();
  result << "comm counts " << shorten(actual_expr) << " differ from " << shorten(expected_expr) << ":";
  for (const std::string& kind : kinds) {
    const int64_t a = actual.count(kind) ? actual.at(kind) : 0;
    const int64_t e = expected.count(kind) ? expected.at(kind) : 0;
    if (a != e) result << "\n  " << kind << ": " << a << " (expected " << e << ")";
  }
  result << "\n  actual:   " << braces(actual) << "\n  expected: " << braces(expected);
  return result;
}

KindCounts module_phase_counts(const ModuleCounts& counts, const std::string& fqn, const std::string& phase) {
  auto m = counts.find(fqn);
  if (m == counts.end()) return {};
  auto p = m->second.find(phase);
  return p == m->second.end() ? KindCounts{} : p->second;
}

::testing::AssertionResult NoImplicitRedistribution(const char* block_expr, const std::function<void()>& block) {
  ExplicitRedistributionOptions options;
  options.policy = RedistributionPolicy::kRecord;
  std::vector<std::string> sites;
  {
    ExplicitRedistributionGuard guard(options);
    block();
    sites = guard.warnings();
  }
  if (sites.empty()) return ::testing::AssertionSuccess();
  ::testing::AssertionResult failure = ::testing::AssertionFailure();
  failure << shorten(block_expr) << " made " << sites.size() << " implicit redistribution"
          << (sites.size() == 1 ? "" : "s") << " (call sites):";
  for (const std::string& site : sites) failure << "\n  " << site;
  return failure;
}

}  // namespace dtensor::testing
