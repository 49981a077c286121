// The message of the exception a call throws, for tests that check what an
// error says (a c10::Error without its backtrace):
//   EXPECT_THAT(error_of([&] { checkpoint::load(state, dir); }), HasSubstr("has no tensor"));
//   EXPECT_THAT(error_of<LayoutError>([] { parse_placement("S("); }), HasSubstr("S(dim)"));
#pragma once

#include <gtest/gtest.h>

#include <exception>
#include <string>
#include <type_traits>
#include <utility>

namespace dtensor::testing {

namespace detail {

// Whether E has c10::Error's what_without_backtrace().
template <typename E, typename = void>
struct HasWhatWithoutBacktrace : std::false_type {};
template <typename E>
struct HasWhatWithoutBacktrace<
    E, std::void_t<decltype(std::declval<const E&>().what_without_backtrace())>>
    : std::true_type {};

// c10::Error's what() appends "\nException raised from ..." and the stack.
inline std::string without_backtrace(const std::string& what) {
  return what.substr(0, what.find("\nException raised from "));
}

}  // namespace detail

/// The message of the `Error` (by default any std::exception) that `fn()`
/// throws; adds a test failure and returns "" when it throws none. An
/// exception of another type propagates (and fails the test).
template <typename Error = std::exception, typename Fn>
std::string error_of(Fn&& fn) {
  try {
    std::forward<Fn>(fn)();
  } catch (const Error& e) {
    if constexpr (detail::HasWhatWithoutBacktrace<Error>::value) {
      return e.what_without_backtrace();
    } else {
      return detail::without_backtrace(e.what());
    }
  }
  ADD_FAILURE() << "expected an exception, none was thrown";
  return "";
}

}  // namespace dtensor::testing
