// test_seed: see seed.h.
#include "testing/seed.h"

#include <chrono>
#include <cstdlib>

namespace dtensor::testing {

uint64_t test_seed(uint64_t fallback) {
  const char* env = std::getenv(kTestSeedVariable);
  return env != nullptr ? std::strtoull(env, nullptr, 10) : fallback;
}

uint64_t test_seed() {
  const auto ticks = std::chrono::steady_clock::now().time_since_epoch().count();
  return test_seed(static_cast<uint64_t>(ticks) % 1000000007ULL);
}

}  // namespace dtensor::testing
