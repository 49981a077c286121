// The message of the c10::Error a call throws, for tests that check what an
// error says:   EXPECT_NE(error_of([&] { load(state, dir); }).find("has no tensor"), std::string::npos);
#pragma once

#include <c10/util/Exception.h>

#include <functional>
#include <string>

namespace dtensor::testing {

/// what_without_backtrace() of the c10::Error `fn` throws; "" when it throws none.
inline std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const c10::Error& e) {
    return e.what_without_backtrace();
  }
  return "";
}

}  // namespace dtensor::testing
