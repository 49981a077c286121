// The dtensor testing kit for GoogleTest: run a test body on N ranks (fake
// world, or Gloo processes), and assert on DTensors, placements, comm counts
// and golden comm reports; count collectives (CollectiveCounter),
// enumerate placements (all_placement_lists), check error messages
// (error_of) and seed randomized tests (test_seed, $DTENSOR_TEST_SEED).
// Link //testing:gtest (and
// @gtest//:gtest_main); the counter and the enumerator alone, without
// GoogleTest: //testing:collective_counter, //testing:placements.
//   DTENSOR_TEST(MyShardingTest, MmMatchesOneDevice, /*world_size=*/4) {
//     auto mesh = dtensor::testing::make_mesh();                  // 1-D, "tp"
//     DTensor x = distribute_tensor(a, mesh, {Shard(1)}), w = distribute_tensor(b, mesh, {Shard(0)});
//     at::Tensor y;
//     EXPECT_COMM_COUNTS([&] { y = torch::mm(x, w); }, {});       // Partial(sum), no comm
//     EXPECT_PLACEMENTS(y, "P(sum)");
//     EXPECT_DTENSOR_EQ(y, torch::mm(a, b), 1e-6);
//   }
// See examples/user_test/ for a module with its own TP plan, and Note [Rank
// failures] in testing/ranks.h for how failures on ranks are reported.
#pragma once

#include "testing/assertions.h"          // IWYU pragma: export
#include "testing/collective_counter.h"  // IWYU pragma: export
#include "testing/comm_expect.h"         // IWYU pragma: export
#include "testing/error_of.h"            // IWYU pragma: export
#include "testing/placements.h"          // IWYU pragma: export
#include "testing/ranks.h"               // IWYU pragma: export
#include "testing/seed.h"                // IWYU pragma: export
