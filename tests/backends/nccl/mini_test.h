// A tiny stand-in for the part of GoogleTest the NCCL smoke test uses, for GPU
// hosts without GoogleTest (tools/gpu_build.sh defines DTENSOR_NO_GTEST):
// TEST, EXPECT_/ASSERT_ TRUE/FALSE/EQ/NE, ADD_FAILURE, FAIL, GTEST_SKIP,
// SCOPED_TRACE, all streamable; the test's main() calls mini_test::run_all().
//   TEST(Suite, Name) { ASSERT_TRUE(x) << "why"; }
#pragma once

#include <cstdio>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace mini_test {

struct TestCase {
  std::string name;
  std::function<void()> body;
};

inline std::vector<TestCase>& registry() {
  static std::vector<TestCase> tests;
  return tests;
}

struct State {
  bool failed = false;
  bool skipped = false;
  std::vector<std::string> traces;
};

inline State& state() {
  static State s;
  return s;
}

struct Registrar {
  Registrar(const char* name, std::function<void()> body) {
    registry().push_back({name, std::move(body)});
  }
};

class Message {
 public:
  template <class T>
  Message& operator<<(const T& value) {
    out_ << value;
    return *this;
  }
  std::string str() const { return out_.str(); }

 private:
  std::ostringstream out_;
};

// `reporter = Message() << ...` reports when the condition failed.
struct Reporter {
  const char* file;
  int line;
  std::string what;
  bool skip;
  void operator=(const Message& message) const {
    if (skip) {
      state().skipped = true;
      std::printf("%s:%d: Skipped\n%s\n", file, line, message.str().c_str());
      return;
    }
    state().failed = true;
    std::printf("%s:%d: Failure\n%s\n%s\n", file, line, what.c_str(), message.str().c_str());
    for (const std::string& t : state().traces) std::printf("  trace: %s\n", t.c_str());
  }
};

struct ScopedTrace {
  explicit ScopedTrace(const std::string& text) { state().traces.push_back(text); }
  ~ScopedTrace() { state().traces.pop_back(); }
};

template <class A, class B>
std::string compare_text(const char* a, const char* b, const A& va, const B& vb, const char* op) {
  std::ostringstream out;
  out << "Expected: " << a << " " << op << " " << b << "\n  actual: " << va << " vs " << vb;
  return out.str();
}

inline int run_all() {
  int failed = 0;
  for (const TestCase& test : registry()) {
    state() = State{};
    std::printf("[ RUN      ] %s\n", test.name.c_str());
    test.body();
    const char* verdict = state().failed    ? "[  FAILED  ]"
                          : state().skipped ? "[  SKIPPED ]"
                                            : "[       OK ]";
    std::printf("%s %s\n", verdict, test.name.c_str());
    failed += state().failed ? 1 : 0;
  }
  std::printf("%d of %zu tests failed\n", failed, registry().size());
  return failed == 0 ? 0 : 1;
}

}  // namespace mini_test

#define MINI_TEST_CHECK(cond, text, fatal) \
  if (cond) {                              \
  } else                                   \
    fatal ::mini_test::Reporter{__FILE__, __LINE__, text, false} = ::mini_test::Message()

#define TEST(suite, name)                                                           \
  static void suite##_##name##_body();                                              \
  static ::mini_test::Registrar suite##_##name##_registrar(#suite "." #name,        \
                                                           &suite##_##name##_body); \
  static void suite##_##name##_body()

#define EXPECT_TRUE(cond) MINI_TEST_CHECK((cond), "Expected true: " #cond, )
#define EXPECT_FALSE(cond) MINI_TEST_CHECK(!(cond), "Expected false: " #cond, )
#define ASSERT_TRUE(cond) MINI_TEST_CHECK((cond), "Expected true: " #cond, return )
#define ASSERT_FALSE(cond) MINI_TEST_CHECK(!(cond), "Expected false: " #cond, return )
#define EXPECT_EQ(a, b) \
  MINI_TEST_CHECK((a) == (b), ::mini_test::compare_text(#a, #b, (a), (b), "=="), )
#define EXPECT_NE(a, b) \
  MINI_TEST_CHECK((a) != (b), ::mini_test::compare_text(#a, #b, (a), (b), "!="), )
#define ASSERT_EQ(a, b) \
  MINI_TEST_CHECK((a) == (b), ::mini_test::compare_text(#a, #b, (a), (b), "=="), return )
#define ADD_FAILURE() MINI_TEST_CHECK(false, "Failure", )
#define FAIL() MINI_TEST_CHECK(false, "Failure", return )
#define GTEST_SKIP() \
  return ::mini_test::Reporter{__FILE__, __LINE__, "", true} = ::mini_test::Message()
#define MINI_TEST_CONCAT_(a, b) a##b
#define MINI_TEST_CONCAT(a, b) MINI_TEST_CONCAT_(a, b)
#define SCOPED_TRACE(text)                                    \
  ::mini_test::ScopedTrace MINI_TEST_CONCAT(mini_test_trace_, \
                                            __LINE__)((::mini_test::Message() << (text)).str())
