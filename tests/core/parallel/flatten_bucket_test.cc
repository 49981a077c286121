// flatten_bucket / unflatten_bucket: the one way gradients and parameters
// become a collective's flat buffer (data parallel, the planner's ZeRO-1).
#include <ATen/ATen.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/parallel/data_parallel.h"
#include "testing/error_of.h"

namespace dtensor {
namespace {

using ::testing::HasSubstr;

TEST(FlattenBucketTest, ConcatenatesInOrderAndPadsWithZeros) {
  const at::Tensor a = at::arange(6, at::kFloat).reshape({2, 3});
  const at::Tensor b = at::arange(6, 10, at::kFloat);
  const at::Tensor bucket = flatten_bucket({a, b}, /*min_numel=*/12);
  ASSERT_EQ(bucket.sizes(), (std::vector<int64_t>{12}));
  EXPECT_TRUE(at::equal(bucket.narrow(0, 0, 10), at::arange(10, at::kFloat)));
  EXPECT_TRUE(at::equal(bucket.narrow(0, 10, 2), at::zeros({2})));
  EXPECT_EQ(flatten_bucket({a, b}).numel(), 10);  // no padding asked for
}

TEST(FlattenBucketTest, UnflattenIsItsInverseInPlace) {
  const at::Tensor a = at::zeros({2, 3});
  const at::Tensor b = at::zeros({4});
  const at::Tensor bucket = at::arange(12, at::kFloat);
  unflatten_bucket(bucket, {a, b});
  EXPECT_TRUE(at::equal(a, at::arange(6, at::kFloat).reshape({2, 3})));
  EXPECT_TRUE(at::equal(b, at::arange(6, 10, at::kFloat)));
}

TEST(FlattenBucketTest, RefusesMixedDtypesAndShortBuckets) {
  EXPECT_THAT(testing::error_of<c10::Error>([] {
                flatten_bucket({at::zeros({2}), at::zeros({2}, at::kDouble)});
              }),
              HasSubstr("bucket each dtype and device on its own"));
  EXPECT_THAT(testing::error_of<c10::Error>([] {
                unflatten_bucket(at::zeros({3}), {at::zeros({2}), at::zeros({2})});
              }),
              HasSubstr("the bucket has 3 elements"));
}

}  // namespace
}  // namespace dtensor
