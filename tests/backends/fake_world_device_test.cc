// Device-independent parts of the CUDA fake world, on the CPU: which GPU each
// rank gets, the errors of bad device options, and the deferred memory cap of
// CUDA allocations (RankMemoryAccount::charge_after).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "backends/fake/cuda_rank.h"
#include "backends/fake/fake_world.h"
#include "backends/fake/rank_device.h"
#include "backends/rank_memory.h"
#include "testing/error_of.h"

namespace dtensor {
namespace {

using testing::error_of;

using ::testing::AllOf;
using ::testing::HasSubstr;

TEST(FakeRankDeviceTest, OneDeviceputsEveryRankOnTheOptionsDevice) {
  for (int64_t rank = 0; rank < 8; ++rank) {
    EXPECT_EQ(fake_rank_device(c10::kCUDA, FakeDevicePlacement::kOneDevice, rank, 4),
              c10::Device(c10::kCUDA, 0));
    EXPECT_EQ(fake_rank_device(c10::Device(c10::kCUDA, 2), FakeDevicePlacement::kOneDevice, rank, 4),
              c10::Device(c10::kCUDA, 2));
    EXPECT_EQ(fake_rank_device(c10::kCPU, FakeDevicePlacement::kOneDevice, rank, 0),
              c10::Device(c10::kCPU));
  }
}

TEST(FakeRankDeviceTest, RoundRobinCyclesFromTheOptionsIndex) {
  std::vector<int> from_zero;
  std::vector<int> from_one;
  for (int64_t rank = 0; rank < 8; ++rank) {
    from_zero.push_back(fake_rank_device(c10::kCUDA, FakeDevicePlacement::kRoundRobin, rank, 3).index());
    from_one.push_back(
        fake_rank_device(c10::Device(c10::kCUDA, 1), FakeDevicePlacement::kRoundRobin, rank, 3).index());
  }
  EXPECT_EQ(from_zero, (std::vector<int>{0, 1, 2, 0, 1, 2, 0, 1}));
  EXPECT_EQ(from_one, (std::vector<int>{1, 2, 0, 1, 2, 0, 1, 2}));
  // One visible GPU: round robin is everyone on it.
  EXPECT_EQ(fake_rank_device(c10::kCUDA, FakeDevicePlacement::kRoundRobin, 5, 1),
            c10::Device(c10::kCUDA, 0));
}

TEST(FakeRankDeviceTest, BadDeviceOptionsSayWhatToChange) {
  EXPECT_THAT(error_of([] { fake_rank_device(c10::kMeta, FakeDevicePlacement::kOneDevice, 0, 1); }),
              AllOf(HasSubstr("meta"), HasSubstr("solo_world")));
  EXPECT_THAT(error_of([] { fake_rank_device(c10::kCPU, FakeDevicePlacement::kRoundRobin, 0, 2); }),
              AllOf(HasSubstr("round robin"), HasSubstr("c10::kCUDA")));
  EXPECT_THAT(error_of([] { fake_rank_device(c10::kCUDA, FakeDevicePlacement::kOneDevice, 0, 0); }),
              AllOf(HasSubstr("no CUDA device is visible"), HasSubstr("--config=cuda"),
                    HasSubstr("CUDA_VISIBLE_DEVICES")));
  EXPECT_THAT(
      error_of([] { fake_rank_device(c10::Device(c10::kCUDA, 3), FakeDevicePlacement::kOneDevice, 0, 2); }),
      AllOf(HasSubstr("cuda:3"), HasSubstr("only 2 CUDA device(s)")));
}

TEST(FakeRankDeviceTest, RunFakeWorldRefusesCudaWithoutAGpuBeforeStartingRanks) {
  if (detail::visible_cuda_devices() > 0) GTEST_SKIP() << "a GPU is visible";
  FakeWorldOptions options;
  options.device = c10::kCUDA;
  bool ran = false;
  EXPECT_THAT(error_of([&] { run_fake_world(2, [&](World&) { ran = true; }, options); }),
              HasSubstr("no CUDA device is visible"));
  EXPECT_FALSE(ran);
  options.device = c10::kCPU;
  options.placement = FakeDevicePlacement::kRoundRobin;
  EXPECT_THAT(error_of([&] { run_fake_world(2, [&](World&) { ran = true; }, options); }),
              HasSubstr("round robin"));
  EXPECT_FALSE(ran);
}

// CUDA allocations are charged after the fact (from the caching allocator's
// trace); past the cap the error is kept and thrown on the rank's thread.
TEST(CudaMemoryCapLogicTest, ChargeAfterKeepsTheErrorForTheRanksThread) {
  RankMemoryAccount account(/*rank=*/3, /*cap_bytes=*/1000);
  account.charge_after(600, "cuda");
  EXPECT_NO_THROW(account.throw_if_over_cap());
  account.charge_after(500, "cuda");  // 1100 > 1000: counted, error kept
  EXPECT_EQ(account.stats().current_bytes, 1100);
  EXPECT_EQ(account.stats().peak_bytes, 1100);
  EXPECT_EQ(account.stats().allocations, 2);
  EXPECT_THAT(error_of([&] { account.throw_if_over_cap(); }),
              AllOf(HasSubstr("rank 3 is out of its simulated memory"),
                    HasSubstr("allocating 500 bytes on cuda with 600 bytes live"),
                    HasSubstr("memory cap of 1000 bytes"), HasSubstr("next collective")));
  EXPECT_NO_THROW(account.throw_if_over_cap());  // thrown once
  account.release(500);
  EXPECT_EQ(account.stats().current_bytes, 600);
}

TEST(CudaMemoryCapLogicTest, NoCapNeverKeepsAnError) {
  RankMemoryAccount account(0, 0);
  account.charge_after(int64_t{1} << 40, "cuda");
  EXPECT_NO_THROW(account.throw_if_over_cap());
  EXPECT_EQ(account.stats().current_bytes, int64_t{1} << 40);
}

}  // namespace
}  // namespace dtensor
