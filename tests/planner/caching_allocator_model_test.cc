// The caching allocator model (planner/caching_allocator_model.h) against the
// rules of PyTorch's CUDACachingAllocator it follows (Note [Caching allocator
// model]): rounding, the two pools, segment sizes, best fit, splitting,
// merging, expandable segments; and invariants over random sequences.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "planner/caching_allocator_model.h"

namespace dtensor::planner {
namespace {

constexpr int64_t kMiB = 1 << 20;

TEST(CachingAllocatorModelTest, SmallRequestsShareOneTwoMiBSegment) {
  CachingAllocatorModel m;
  m.allocate(0, 1000);  // rounded to 1024
  EXPECT_EQ(m.allocated_bytes(), 1024);
  EXPECT_EQ(m.reserved_bytes(), 2 * kMiB);
  m.allocate(1, kMiB);  // 1 MiB is still small, and fits in the same segment
  EXPECT_EQ(m.reserved_bytes(), 2 * kMiB);
  m.allocate(2, kMiB);  // 1 MiB - 1 KiB is left: a second segment
  EXPECT_EQ(m.reserved_bytes(), 4 * kMiB);
  m.allocate(3, kMiB + 1);  // above 1 MiB: the large pool's 20 MiB segment
  EXPECT_EQ(m.reserved_bytes(), 24 * kMiB);
}

TEST(CachingAllocatorModelTest, LargeSegmentSizes) {
  CachingAllocatorModel m;
  m.allocate(0, 3 * kMiB);  // under 10 MiB: a 20 MiB segment
  EXPECT_EQ(m.reserved_bytes(), 20 * kMiB);
  m.allocate(1, 3 * kMiB);  // carved from its remainder
  EXPECT_EQ(m.reserved_bytes(), 20 * kMiB);
  m.allocate(2, 14 * kMiB);  // the 14 MiB left exactly
  EXPECT_EQ(m.reserved_bytes(), 20 * kMiB);
  m.allocate(3, 16 * kMiB + 1);  // rounded to 512 B, its segment to 2 MiB: 18 MiB
  EXPECT_EQ(m.reserved_bytes(), 38 * kMiB);
  EXPECT_EQ(m.allocated_bytes(), 36 * kMiB + 512);
}

TEST(CachingAllocatorModelTest, ARemainderOfOneMiBOrLessIsNotSplitOff) {
  CachingAllocatorModel m;
  m.allocate(0, 8 * kMiB);
  m.free(0);  // a free 20 MiB segment
  m.allocate(1, 19 * kMiB);  // 1 MiB would remain: the request keeps the whole block
  EXPECT_EQ(m.allocated_bytes(), 20 * kMiB);
  m.free(1);
  m.allocate(2, 18 * kMiB);  // 2 MiB remain: split
  EXPECT_EQ(m.allocated_bytes(), 18 * kMiB);
  EXPECT_EQ(m.reserved_bytes(), 20 * kMiB);
}

TEST(CachingAllocatorModelTest, FragmentationNeedsANewSegmentAndFreeingMerges) {
  CachingAllocatorModel m;
  m.allocate(0, 8 * kMiB);  // [0, 8) of a 20 MiB segment
  m.allocate(1, 8 * kMiB);  // [8, 16)
  m.free(0);                // free: 8 MiB at 0 and 4 MiB at 16
  m.allocate(2, 10 * kMiB); // fits in neither: a segment of 10 MiB
  EXPECT_EQ(m.reserved_bytes(), 30 * kMiB);
  EXPECT_EQ(m.pinned_bytes(), 30 * kMiB);  // both segments hold a live block
  EXPECT_EQ(m.allocated_bytes(), 18 * kMiB);
  m.free(1);  // the first segment is one free block again
  EXPECT_EQ(m.pinned_bytes(), 10 * kMiB);
  m.allocate(3, 20 * kMiB);  // so it takes 20 MiB without a new segment
  EXPECT_EQ(m.reserved_bytes(), 30 * kMiB);
  EXPECT_EQ(m.peaks().reserved, 30 * kMiB);
  EXPECT_EQ(m.peaks().allocated, 30 * kMiB);
}

TEST(CachingAllocatorModelTest, BestFitTakesTheSmallestBlockThatFits) {
  CachingAllocatorModel m;
  m.allocate(0, 12 * kMiB);  // segment A, 12 MiB
  m.allocate(1, 16 * kMiB);  // segment B, 16 MiB
  m.free(1);
  m.free(0);
  m.allocate(2, 11 * kMiB);  // A (12) fits best; its 1 MiB remainder stays with it
  EXPECT_EQ(m.allocated_bytes(), 12 * kMiB);
  m.allocate(3, 16 * kMiB);  // B is still free
  EXPECT_EQ(m.reserved_bytes(), 28 * kMiB);
}

TEST(CachingAllocatorModelTest, ExpandableSegmentsGrowAtTheEndInPages) {
  CachingAllocatorModel m(/*expandable_segments=*/true);
  m.allocate(0, 8 * kMiB);  // one 20 MiB page
  EXPECT_EQ(m.reserved_bytes(), 20 * kMiB);
  m.allocate(1, 8 * kMiB);
  m.free(0);  // free: 8 MiB at 0, 4 MiB at the end
  m.allocate(2, 10 * kMiB);  // the end's 4 MiB plus one more page
  EXPECT_EQ(m.reserved_bytes(), 40 * kMiB);
  m.allocate(3, 30 * kMiB);  // 14 MiB at the end + 20 more: one page again
  EXPECT_EQ(m.reserved_bytes(), 60 * kMiB);
  m.free(1);
  m.free(2);
  m.free(3);
  EXPECT_EQ(m.pinned_bytes(), 0);
  m.allocate(4, 60 * kMiB);  // everything merged back into one block
  EXPECT_EQ(m.reserved_bytes(), 60 * kMiB);
  m.allocate(5, 100);  // the small pool has its own pages of 2 MiB
  EXPECT_EQ(m.reserved_bytes(), 62 * kMiB);
}

TEST(CachingAllocatorModelTest, AFreedBlockIsReusedByItsOwnStreamOnly) {
  for (bool expandable : {false, true}) {
    SCOPED_TRACE(expandable ? "expandable" : "segments");
    CachingAllocatorModel m(expandable);
    m.allocate(0, 12 * kMiB, /*stream=*/1);
    m.free(0);
    m.allocate(1, 12 * kMiB, /*stream=*/0);  // stream 1's cached block is not stream 0's
    EXPECT_EQ(m.reserved_bytes(), expandable ? 40 * kMiB : 24 * kMiB);
    m.allocate(2, 12 * kMiB, /*stream=*/1);  // but stream 1 takes it again
    EXPECT_EQ(m.reserved_bytes(), expandable ? 40 * kMiB : 24 * kMiB);
  }
  CachingAllocatorModel m;
  EXPECT_THROW(m.allocate(0, 10, /*stream=*/16), std::invalid_argument);
}

TEST(CachingAllocatorModelTest, IgnoresZeroBytesAndUnknownFreesRefusesALiveId) {
  CachingAllocatorModel m;
  m.allocate(0, 0);
  m.free(0);
  m.free(42);
  EXPECT_EQ(m.reserved_bytes(), 0);
  m.allocate(1, 10);
  EXPECT_THROW(m.allocate(1, 10), std::invalid_argument);
}

// Random allocation sequences: allocated <= pinned <= reserved at every step,
// the peaks are the maxima seen, reserved never shrinks, and freeing
// everything leaves nothing pinned or allocated.
TEST(CachingAllocatorModelTest, InvariantsOverRandomSequences) {
  for (bool expandable : {false, true}) {
    for (uint32_t seed = 0; seed < 20; ++seed) {
      SCOPED_TRACE(testing::Message() << "expandable " << expandable << ", seed " << seed);
      std::mt19937 rng(seed);
      CachingAllocatorModel m(expandable);
      std::vector<int64_t> live;
      int64_t next = 0, last_reserved = 0;
      AllocatorPeaks seen;
      for (int step = 0; step < 2000; ++step) {
        if (live.empty() || rng() % 3 != 0) {
          // Sizes from bytes to ~100 MiB, log-uniform.
          const int64_t bytes = int64_t{1} << (rng() % 27);
          m.allocate(next, bytes + static_cast<int64_t>(rng() % 4096), static_cast<int>(rng() % 3));
          live.push_back(next++);
        } else {
          const size_t i = rng() % live.size();
          m.free(live[i]);
          live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
        }
        ASSERT_LE(m.allocated_bytes(), m.pinned_bytes());
        ASSERT_LE(m.pinned_bytes(), m.reserved_bytes());
        ASSERT_GE(m.reserved_bytes(), last_reserved);
        last_reserved = m.reserved_bytes();
        seen.allocated = std::max(seen.allocated, m.allocated_bytes());
        seen.pinned = std::max(seen.pinned, m.pinned_bytes());
      }
      EXPECT_EQ(m.peaks().allocated, seen.allocated);
      EXPECT_EQ(m.peaks().pinned, seen.pinned);
      EXPECT_EQ(m.peaks().reserved, m.reserved_bytes());
      for (int64_t id : live) m.free(id);
      EXPECT_EQ(m.allocated_bytes(), 0);
      EXPECT_EQ(m.pinned_bytes(), 0);
    }
  }
}

}  // namespace
}  // namespace dtensor::planner
