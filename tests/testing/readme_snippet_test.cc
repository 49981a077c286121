// The README's "Testing your own sharding" snippet, verbatim: it must compile and pass.
#include "core/dtensor.h"
#include "testing/dtensor_test.h"
using namespace dtensor;  // not dtensor::testing: gtest owns ::testing

DTENSOR_TEST(MyShardingTest, MmMatchesOneDevice, /*world_size=*/4) {
  auto mesh = dtensor::testing::make_mesh();                 // 1-D mesh "tp" of 4 fake ranks
  at::Tensor a = at::arange(32.).reshape({8, 4}), b = at::arange(8.).reshape({4, 2});
  DTensor x = distribute_tensor(a, mesh, {Shard(1)}), w = distribute_tensor(b, mesh, {Shard(0)});
  at::Tensor y;
  EXPECT_COMM_COUNTS([&] { y = at::mm(x, w); }, {});           // contraction dim sharded: no comm
  EXPECT_PLACEMENTS(y, "P(sum)");
  EXPECT_DTENSOR_EQ(y, at::mm(a, b), 1e-6);                    // gathers on every rank
}
