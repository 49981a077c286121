// Collects the gtest results a statement reports on the calling thread, so
// that tests of the kit can look at failures without failing themselves.
//   auto results = capture_results([] { run_on_ranks(2, body); });
//   EXPECT_THAT(results.at(0).message(), HasSubstr("[rank 1] "));
#pragma once

#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

namespace dtensor::testing {

/// The failures, skips and messages (not successes) `fn` reports on this thread.
inline std::vector<::testing::TestPartResult> capture_results(const std::function<void()>& fn) {
  ::testing::TestPartResultArray array;
  {
    ::testing::ScopedFakeTestPartResultReporter reporter(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &array);
    fn();
  }
  std::vector<::testing::TestPartResult> out;
  for (int i = 0; i < array.size(); ++i) {
    if (array.GetTestPartResult(i).type() != ::testing::TestPartResult::kSuccess) {
      out.push_back(array.GetTestPartResult(i));
    }
  }
  return out;
}

/// Every message, one after the other (for failure output).
inline std::string all_messages(const std::vector<::testing::TestPartResult>& results) {
  std::string out;
  for (const auto& r : results) out += std::string(r.message()) + "\n---\n";
  return out;
}

}  // namespace dtensor::testing
