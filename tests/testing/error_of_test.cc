// error_of and test_seed of the testing kit: the message of the exception a
// call throws (a c10::Error's without its backtrace), a test failure when
// none is thrown, other types passed through; and one seed variable.
#include "testing/error_of.h"

#include <c10/util/Exception.h>
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <stdexcept>
#include <string>

#include "testing/seed.h"

namespace dtensor::testing {
namespace {

struct LayoutLikeError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

TEST(ErrorOfTest, ReturnsTheMessageOfAnyStdException) {
  EXPECT_EQ(error_of([] { throw std::runtime_error("bad mesh"); }), "bad mesh");
}

TEST(ErrorOfTest, ATorchErrorComesWithoutItsBacktrace) {
  const auto check = [] { TORCH_CHECK(false, "shard dim 3 of a 2-d tensor"); };
  std::string expected;
  try {
    check();
  } catch (const c10::Error& e) {
    expected = e.what_without_backtrace();
  }
  EXPECT_EQ(error_of(check), expected);
  EXPECT_EQ(error_of<c10::Error>(check), expected);
  EXPECT_EQ(error_of(check).find("Exception raised from"), std::string::npos);
}

TEST(ErrorOfTest, ATypedCallCatchesOnlyThatType) {
  EXPECT_EQ(error_of<LayoutLikeError>([] { throw LayoutLikeError("S(2) on 1 dim"); }),
            "S(2) on 1 dim");
  EXPECT_THROW(error_of<LayoutLikeError>([] { throw std::runtime_error("other"); }),
               std::runtime_error);
}

TEST(ErrorOfTest, NoExceptionIsATestFailure) {
  EXPECT_NONFATAL_FAILURE(error_of([] {}), "expected an exception, none was thrown");
}

TEST(TestSeedTest, TheVariableReplaysASeedAndOtherwiseTheFallbackHolds) {
  unsetenv(kTestSeedVariable);
  EXPECT_EQ(test_seed(42), 42u);
  EXPECT_LT(test_seed(), 1000000007u);
  setenv(kTestSeedVariable, "123456", 1);
  EXPECT_EQ(test_seed(42), 123456u);
  EXPECT_EQ(test_seed(), 123456u);
  unsetenv(kTestSeedVariable);
}

}  // namespace
}  // namespace dtensor::testing
