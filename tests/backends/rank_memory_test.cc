// Per-rank memory accounting (Note [Rank memory accounting]): exact bytes of
// known allocations, frees on other threads charged to the allocating rank,
// peak and its location, the cap's error and the world failing fast on it,
// solo mode's meta tensors, and a DTensor training step.
#include <ATen/Functions.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/utils.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "backends/fake/fake_world.h"
#include "backends/rank_memory.h"
#include "backends/solo/solo_world.h"
#include "core/dtensor.h"

namespace dtensor {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr int64_t kKiB = 1024;
constexpr int64_t kMiB = 1024 * kKiB;

RankMemoryStats stats_of(const World& world) {
  std::optional<RankMemoryStats> stats = world.memory_stats();
  EXPECT_TRUE(stats.has_value());
  return stats.value_or(RankMemoryStats{});
}

TEST(RankMemoryTest, KnownAllocationsAreCountedToTheByteAndFreedToTheBaseline) {
  run_fake_world(2, [](World& world) {
    const RankMemoryStats before = stats_of(world);
    at::Tensor a = at::empty({256}, at::kFloat);                  // 1 KiB
    at::Tensor b = at::zeros({1000 + world.rank()}, at::kDouble);  // 8000 + 8 * rank
    const RankMemoryStats during = stats_of(world);
    EXPECT_EQ(during.current_bytes - before.current_bytes, 1024 + 8000 + 8 * world.rank());
    EXPECT_EQ(during.allocations - before.allocations, 2);
    EXPECT_GE(during.peak_bytes, during.current_bytes);
    a.reset();
    b.reset();
    EXPECT_EQ(stats_of(world).current_bytes, before.current_bytes);
    EXPECT_EQ(stats_of(world).cap_bytes, 0);
  });
}

TEST(RankMemoryTest, NothingIsCountedOutsideAWorld) {
  EXPECT_EQ(current_rank_memory(), nullptr);
  auto account = std::make_shared<RankMemoryAccount>(0, 0);
  {
    ScopedRankMemory scope(&account);
    at::Tensor t = at::empty({16}, at::kFloat);
    EXPECT_EQ(account->stats().current_bytes, 64);
  }
  at::Tensor outside = at::empty({1 << 16}, at::kFloat);  // another thread's scope is not ours
  EXPECT_EQ(account->stats().current_bytes, 0);
  EXPECT_EQ(account->stats().allocations, 1);
}

TEST(RankMemoryTest, FreesOnOtherThreadsAreChargedToTheAllocatingRank) {
  std::mutex mutex;
  at::Tensor handed_over;  // rank 0's tensor, dropped by rank 1
  std::atomic<int64_t> rank0_after_peer_free{-1};
  run_fake_world(2, [&](World& world) {
    const int64_t base = stats_of(world).current_bytes;
    auto group = world.world_group();
    if (world.rank() == 0) {
      std::lock_guard<std::mutex> lock(mutex);
      handed_over = at::empty({4 * kKiB}, at::kByte);
    }
    if (world.rank() == 0) {
      EXPECT_EQ(stats_of(world).current_bytes - base, 4 * kKiB);
    }
    group->barrier();
    if (world.rank() == 1) {
      const int64_t mine = stats_of(world).current_bytes;
      std::lock_guard<std::mutex> lock(mutex);
      handed_over.reset();  // a peer frees rank 0's memory
      EXPECT_EQ(stats_of(world).current_bytes, mine);
    }
    group->barrier();
    if (world.rank() == 0) {
      rank0_after_peer_free = stats_of(world).current_bytes - base;
      // A plain thread frees another allocation of this rank.
      at::Tensor t = at::empty({kMiB}, at::kByte);
      EXPECT_EQ(stats_of(world).current_bytes - base, kMiB);
      std::thread([t = std::move(t)]() mutable { t.reset(); }).join();
      EXPECT_EQ(stats_of(world).current_bytes, base);
    }
  });
  EXPECT_EQ(rank0_after_peer_free.load(), 0);
}

TEST(RankMemoryTest, PeakAndItsLocation) {
  run_fake_world(1, [](World& world) {
    const int64_t base = stats_of(world).current_bytes;
    world.set_memory_location("layers.0 forward");
    {
      at::Tensor big = at::empty({64 * kKiB}, at::kByte);
    }
    world.set_memory_location("layers.1 forward");
    at::Tensor small = at::empty({kKiB}, at::kByte);
    RankMemoryStats s = stats_of(world);
    EXPECT_EQ(s.peak_bytes - base, 64 * kKiB);
    EXPECT_EQ(s.peak_location, "layers.0 forward");
    EXPECT_EQ(s.current_bytes - base, kKiB);

    world.reset_peak_memory();
    s = stats_of(world);
    EXPECT_EQ(s.peak_bytes, s.current_bytes);
    EXPECT_EQ(s.peak_location, "layers.1 forward");
    world.set_memory_location("backward");
    at::Tensor grad = at::empty({2 * kKiB}, at::kByte);
    s = stats_of(world);
    EXPECT_EQ(s.peak_bytes - base, 3 * kKiB);
    EXPECT_EQ(s.peak_location, "backward");
  });
}

TEST(RankMemoryTest, AllocationPastTheCapNamesRankBytesLiveAndCap) {
  auto account = std::make_shared<RankMemoryAccount>(/*rank=*/5, /*cap_bytes=*/kMiB);
  ScopedRankMemory scope(&account);
  at::Tensor kept = at::empty({kMiB / 2}, at::kByte);
  try {
    at::Tensor too_big = at::empty({kMiB / 4 * 3}, at::kByte);
    ADD_FAILURE() << "no error past the cap";
  } catch (const c10::Error& e) {
    EXPECT_THAT(e.what_without_backtrace(),
                AllOf(HasSubstr("rank 5"), HasSubstr("allocating 786432 bytes on CPU"),
                      HasSubstr("with 524288 bytes live"), HasSubstr("memory cap of 1048576"),
                      HasSubstr("Raise the cap"), HasSubstr("shard more")));
  }
  // Nothing was charged by the failed allocation; what fits still fits.
  EXPECT_EQ(account->stats().current_bytes, kMiB / 2);
  EXPECT_EQ(account->stats().allocations, 1);
  at::Tensor fits = at::empty({kMiB / 2}, at::kByte);
  EXPECT_EQ(account->stats().current_bytes, kMiB);
  EXPECT_EQ(account->stats().cap_bytes, kMiB);
}

TEST(RankMemoryTest, CapErrorOnOneRankFailsTheWorldFast) {
  FakeWorldOptions options;
  options.timeout = std::chrono::milliseconds(20000);
  options.memory_cap_bytes = 4 * kMiB;
  const auto start = std::chrono::steady_clock::now();
  try {
    run_fake_world(
        4,
        [](World& world) {
          // Rank 2 needs more than its simulated device holds; the others wait in
          // a collective it never reaches.
          at::Tensor t = at::ones({world.rank() == 2 ? 8 * kMiB : kKiB}, at::kByte);
          world.world_group()->all_reduce(t);
        },
        options);
    ADD_FAILURE() << "the world did not fail";
  } catch (const c10::Error& e) {
    EXPECT_THAT(e.what_without_backtrace(),
                AllOf(StartsWith("[rank 2] "), HasSubstr("rank 2 is out of its simulated memory"),
                      HasSubstr("allocating 8388608 bytes"), HasSubstr("cap of 4194304")));
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 10.0) << "peers waited for the timeout instead of failing fast";
}

TEST(RankMemoryTest, NegativeCapIsRejected) {
  FakeWorldOptions options;
  options.memory_cap_bytes = -1;
  EXPECT_THROW(run_fake_world(1, [](World&) {}, options), c10::Error);
  SoloOptions solo;
  solo.memory_cap_bytes = -5;
  EXPECT_THROW(solo_world(8, 0, solo), c10::Error);
}

TEST(RankMemoryTest, SoloModeCountsMetaTensorsAndCapsThem) {
  SoloOptions options;
  options.device = c10::kMeta;
  options.memory_cap_bytes = int64_t{80} << 30;  // an 80 GiB device
  run_solo_world(
      4096, 17,
      [](World& world) {
        const int64_t base = stats_of(world).current_bytes;
        // 16 GiB of parameters, no memory touched.
        at::Tensor w = at::empty({int64_t{1} << 32}, at::TensorOptions().dtype(at::kFloat).device(c10::kMeta));
        EXPECT_EQ(stats_of(world).current_bytes - base, int64_t{16} << 30);
        try {
          at::Tensor too_big = at::empty({int64_t{1} << 37}, at::TensorOptions().dtype(at::kByte).device(c10::kMeta));
          ADD_FAILURE() << "no error past the cap";
        } catch (const c10::Error& e) {
          EXPECT_THAT(e.what_without_backtrace(),
                      AllOf(HasSubstr("rank 17"), HasSubstr("on meta"), HasSubstr("137438953472")));
        }
        w.reset();
        EXPECT_EQ(stats_of(world).current_bytes, base);
        EXPECT_EQ(stats_of(world).peak_bytes - base, int64_t{16} << 30);
      },
      options);
}

TEST(RankMemoryTest, DTensorTrainingStepPeaksAboveAndReturnsToTheBaseline) {
  run_fake_world(4, [](World& world) {
    auto mesh = DeviceMesh::init(c10::kCPU, {4});
    torch::manual_seed(0);
    at::Tensor x_global = torch::randn({64, 32});
    at::Tensor w_global = torch::randn({32, 48});
    world.reset_peak_memory();
    const int64_t base = stats_of(world).current_bytes;
    {
      world.set_memory_location("forward");
      DTensor x = distribute_tensor(x_global, mesh, {Shard(0)});
      DTensor w = distribute_tensor(w_global, mesh, {Replicate()}).requires_grad_(true);
      DTensor loss = torch::mm(x, w).relu().sum();
      world.set_memory_location("backward");
      loss.backward();
      EXPECT_TRUE(w.grad().defined());
    }
    const RankMemoryStats s = stats_of(world);
    // At least this rank's shard of x (16 x 32 floats) and all of w and its grad.
    EXPECT_GE(s.peak_bytes - base, (16 * 32 + 2 * 32 * 48) * 4);
    EXPECT_EQ(s.current_bytes, base);
    EXPECT_FALSE(s.peak_location.empty());
  });
}

}  // namespace
}  // namespace dtensor
