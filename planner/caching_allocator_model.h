// A model of PyTorch's CUDA caching allocator (CUDACachingAllocator.cpp, its
// default settings): it replays one rank's allocations and frees,
// as a rank's allocation log records them (backends/rank_memory.h), and says
// how much device memory the allocator would hold. Plain C++ (no LibTorch).
// See Note [Caching allocator model].
//   CachingAllocatorModel model(/*expandable_segments=*/true);
//   model.allocate(/*id=*/0, 3 << 20);
//   model.free(0);
//   model.peaks().reserved;    // torch.cuda.max_memory_reserved()
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

namespace dtensor::planner {

/// The allocator's high-water marks over a replay.
struct AllocatorPeaks {
  /// Bytes in blocks handed out: requests rounded up to 512 B, plus the
  /// remainder of a cached block too small to split
  /// (torch.cuda.max_memory_allocated()).
  int64_t allocated = 0;
  /// Bytes of device memory the allocator holds: cudaMalloc'd segments, or
  /// mapped pages with expandable segments (torch.cuda.max_memory_reserved()).
  int64_t reserved = 0;
  /// Bytes of the segments (expandable: the pages) that hold at least one
  /// live block: the least the allocator can shrink to by freeing its cache
  /// (torch.cuda.empty_cache(), or its own retry when cudaMalloc fails).
  int64_t pinned = 0;
};

class CachingAllocatorModel {
 public:
  /// expandable_segments: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
  /// (one growing segment per pool, mapped in pages) instead of the default
  /// (a cudaMalloc per segment).
  explicit CachingAllocatorModel(bool expandable_segments = false);

  /// Allocation `id` of `bytes` (> 0; 0 is ignored, as the allocator hands
  /// out no block for it) on `stream` (0..15; a freed block is reused by its
  /// own stream only). Throws std::invalid_argument for an id in use or a
  /// stream out of range.
  void allocate(int64_t id, int64_t bytes, int stream = 0);
  /// Frees allocation `id`; an id never allocated is ignored (an allocation
  /// made before the replay started).
  void free(int64_t id);

  const AllocatorPeaks& peaks() const { return peaks_; }
  int64_t allocated_bytes() const { return allocated_; }
  int64_t reserved_bytes() const { return reserved_; }
  int64_t pinned_bytes() const;

 private:
  static constexpr int kStreams = 16;
  /// A pool: the blocks of one stream of one size class (small: <= 1 MiB).
  static int pool_of(int stream, bool small) { return 2 * stream + (small ? 1 : 0); }
  struct Block {
    int64_t size = 0;
    int64_t segment = 0;  // blocks of one segment are neighbours by address
    bool free = true;
    int pool = 0;
  };
  using Blocks = std::map<int64_t, Block>;  // by address
  /// An expandable segment: one per pool, at its own base address.
  struct Expandable {
    int64_t mapped_end = 0;         // bytes mapped from the base
    std::vector<int32_t> page_live; // live blocks per page
    int64_t pinned_pages = 0;       // pages with a live block
  };

  Blocks::iterator find_or_grow(int64_t size, int pool);
  Blocks::iterator new_segment(int64_t size, int pool);
  Blocks::iterator grow_expandable(int64_t size, int pool);
  void insert_free(Blocks::iterator it);
  void erase_free(Blocks::iterator it);
  void pin(int64_t address, int64_t size, int delta);
  void raise_peaks();

  const bool expandable_;
  Blocks blocks_;
  std::set<std::pair<int64_t, int64_t>> free_[2 * kStreams];  // by pool: (size, address)
  std::unordered_map<int64_t, int64_t> live_;                 // id -> address
  // Segments (default mode): base address -> live blocks in it, and size.
  std::map<int64_t, std::pair<int64_t, int64_t>> segments_;
  int64_t next_address_ = 0;
  Expandable expandable_segments_[2 * kStreams];
  int64_t pinned_segment_bytes_ = 0;
  int64_t allocated_ = 0, reserved_ = 0;
  AllocatorPeaks peaks_;
};

}  // namespace dtensor::planner
