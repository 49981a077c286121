// The seed of a randomized test, from one environment variable, so that any
// failure can be replayed: every randomized test prints its seed, and
// DTENSOR_TEST_SEED=<seed> runs it again with the same inputs.
//   std::mt19937_64 rng(dtensor::testing::test_seed());        // new seed each run
//   std::mt19937_64 rng(dtensor::testing::test_seed(20240611)); // fixed unless replaying
#pragma once

#include <cstdint>

namespace dtensor::testing {

/// The variable every randomized test of dtensor and of the testing kit reads.
inline constexpr const char* kTestSeedVariable = "DTENSOR_TEST_SEED";

/// $DTENSOR_TEST_SEED when set, else a seed taken from the clock (below
/// 10^9 + 7, short to print): a new input each run, replayable.
uint64_t test_seed();

/// $DTENSOR_TEST_SEED when set, else `fallback`: the same inputs every run
/// unless replaying another seed.
uint64_t test_seed(uint64_t fallback);

}  // namespace dtensor::testing
