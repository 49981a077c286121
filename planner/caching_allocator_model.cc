// The caching allocator model. See caching_allocator_model.h.
#include "planner/caching_allocator_model.h"

#include <algorithm>
#include <iterator>
#include <limits>
#include <stdexcept>
#include <string>

namespace dtensor::planner {

// Note [Caching allocator model]
// What the GPU holds is not the live bytes: PyTorch's caching allocator
// keeps freed blocks in its cache and carves later requests out of them, so
// the memory it holds (reserved) is set by the order and sizes of the
// allocations, not only by their peak. The model follows
// c10/cuda/CUDACachingAllocator.cpp with its default settings (no
// max_split_size, no roundup_power2_divisions, no garbage collection
// threshold):
// - a request is rounded up to a multiple of 512 B; up to 1 MiB it comes
//   from the small pool, above from the large pool;
// - it takes the smallest cached free block of its pool that is large
//   enough, the lowest address first among equals (best fit);
// - a block larger than the request is split when what remains is at least
//   512 B (small pool) or more than 1 MiB (large pool); else the request
//   keeps the whole block;
// - with no block large enough, a new segment is cudaMalloc'd: 2 MiB for
//   the small pool, 20 MiB for requests under 10 MiB, else the request
//   rounded up to 2 MiB. With expandable segments each pool is one segment
//   that grows at its end instead, in pages of 2 MiB (small) or 20 MiB
//   (large), taking in a free block at its end;
// - a free block merges with its free neighbours of the same segment;
//   segments are never returned (only empty_cache or a failed cudaMalloc
//   frees them: see AllocatorPeaks::pinned).
// - blocks belong to the stream they were allocated on: a freed block is
//   cached for that stream only (the small and large pools of each stream
//   are apart; with expandable segments each has its own segment). The
//   allocation log says which stream a CUDA run would have allocated on
//   (backends/rank_memory.h's AllocationStream: FSDP's all-gather and
//   reduce-scatter buffers are on streams of their own, as in FSDP2).
// Not modelled: addresses (new segments are placed in the order they are
// made, which decides ties of best fit), and events (a block freed on one
// stream while another still uses it waits for that use to end).

namespace {

constexpr int64_t kMiB = 1 << 20;
constexpr int64_t kMinBlockSize = 512;
constexpr int64_t kSmallSize = kMiB;
constexpr int64_t kSmallBuffer = 2 * kMiB;
constexpr int64_t kLargeBuffer = 20 * kMiB;
constexpr int64_t kMinLargeAlloc = 10 * kMiB;
constexpr int64_t kRoundLarge = 2 * kMiB;
// Expandable segments: pool p's segment starts at (p + 1) << kPoolShift
// (default-mode segments are placed below 1 << kPoolShift).
constexpr int kPoolShift = 46;

int64_t round_up(int64_t n, int64_t to) { return (n + to - 1) / to * to; }
bool is_small(int pool) { return pool % 2 == 1; }
int64_t page_size(int pool) { return is_small(pool) ? kSmallBuffer : kLargeBuffer; }
int64_t pool_base(int pool) { return int64_t{pool + 1} << kPoolShift; }

}  // namespace

CachingAllocatorModel::CachingAllocatorModel(bool expandable_segments) : expandable_(expandable_segments) {}

int64_t CachingAllocatorModel::pinned_bytes() const {
  if (!expandable_) return pinned_segment_bytes_;
  int64_t bytes = 0;
  for (int pool = 0; pool < 2 * kStreams; ++pool) bytes += expandable_segments_[pool].pinned_pages * page_size(pool);
  return bytes;
}

void CachingAllocatorModel::insert_free(Blocks::iterator it) {
  free_[it->second.pool].insert({it->second.size, it->first});
}
void CachingAllocatorModel::erase_free(Blocks::iterator it) {
  free_[it->second.pool].erase({it->second.size, it->first});
}

CachingAllocatorModel::Blocks::iterator CachingAllocatorModel::new_segment(int64_t size, int pool) {
  const int64_t address = next_address_;
  next_address_ += size;
  segments_[address] = {0, size};
  reserved_ += size;
  auto it = blocks_.emplace(address, Block{size, address, true, pool}).first;
  insert_free(it);
  return it;
}

CachingAllocatorModel::Blocks::iterator CachingAllocatorModel::grow_expandable(int64_t size, int pool) {
  const int64_t base = pool_base(pool), page = page_size(pool);
  Expandable& segment = expandable_segments_[pool];
  int64_t& end = segment.mapped_end;
  // The free block at the pool's mapped end, if any, is taken in.
  auto tail = blocks_.end();
  auto after = blocks_.lower_bound(base + end);
  if (after != blocks_.begin()) {
    auto last = std::prev(after);
    if (last->first >= base && last->second.free && last->first + last->second.size == base + end) tail = last;
  }
  const int64_t have = tail == blocks_.end() ? 0 : tail->second.size;
  const int64_t grow = round_up(size - have, page);
  segment.page_live.resize(static_cast<size_t>((end + grow) / page), 0);
  reserved_ += grow;
  if (tail == blocks_.end()) {
    tail = blocks_.emplace(base + end, Block{grow, base, true, pool}).first;
  } else {
    erase_free(tail);
    tail->second.size += grow;
  }
  end += grow;
  insert_free(tail);
  return tail;
}

CachingAllocatorModel::Blocks::iterator CachingAllocatorModel::find_or_grow(int64_t size, int pool) {
  auto& cached = free_[pool];
  auto fit = cached.lower_bound({size, std::numeric_limits<int64_t>::min()});
  if (fit != cached.end()) return blocks_.find(fit->second);
  if (expandable_) return grow_expandable(size, pool);
  const int64_t segment = is_small(pool)            ? kSmallBuffer
                          : size < kMinLargeAlloc   ? kLargeBuffer
                                                    : round_up(size, kRoundLarge);
  return new_segment(segment, pool);
}

void CachingAllocatorModel::pin(int64_t address, int64_t size, int delta) {
  if (!expandable_) {
    auto seg = std::prev(segments_.upper_bound(address));
    int64_t& live = seg->second.first;
    if (live == 0 && delta > 0) pinned_segment_bytes_ += seg->second.second;
    live += delta;
    if (live == 0) pinned_segment_bytes_ -= seg->second.second;
    return;
  }
  const int pool = static_cast<int>(address >> kPoolShift) - 1;
  Expandable& segment = expandable_segments_[pool];
  const int64_t page = page_size(pool), offset = address - pool_base(pool);
  for (int64_t p = offset / page; p <= (offset + size - 1) / page; ++p) {
    int32_t& live = segment.page_live[static_cast<size_t>(p)];
    if (live == 0 && delta > 0) ++segment.pinned_pages;
    live += delta;
    if (live == 0) --segment.pinned_pages;
  }
}

void CachingAllocatorModel::raise_peaks() {
  peaks_.allocated = std::max(peaks_.allocated, allocated_);
  peaks_.reserved = std::max(peaks_.reserved, reserved_);
  peaks_.pinned = std::max(peaks_.pinned, pinned_bytes());
}

void CachingAllocatorModel::allocate(int64_t id, int64_t bytes, int stream) {
  if (bytes <= 0) return;
  if (live_.count(id)) throw std::invalid_argument("caching allocator model: allocation " + std::to_string(id) + " is live already");
  if (stream < 0 || stream >= kStreams) {
    throw std::invalid_argument("caching allocator model: stream " + std::to_string(stream) + " is not in 0.." +
                                std::to_string(kStreams - 1));
  }
  const int64_t size = round_up(bytes, kMinBlockSize);
  const bool small = size <= kSmallSize;
  auto it = find_or_grow(size, pool_of(stream, small));
  erase_free(it);
  Block& b = it->second;
  const int64_t remaining = b.size - size;
  if (small ? remaining >= kMinBlockSize : remaining > kSmallSize) {
    auto rest = blocks_.emplace(it->first + size, Block{remaining, b.segment, true, b.pool}).first;
    insert_free(rest);
    b.size = size;
  }
  b.free = false;
  allocated_ += b.size;
  live_[id] = it->first;
  pin(it->first, b.size, +1);
  raise_peaks();
}

void CachingAllocatorModel::free(int64_t id) {
  auto found = live_.find(id);
  if (found == live_.end()) return;
  auto it = blocks_.find(found->second);
  live_.erase(found);
  Block& b = it->second;
  b.free = true;
  allocated_ -= b.size;
  pin(it->first, b.size, -1);
  // Merge with free neighbours of the same segment.
  auto next = std::next(it);
  if (next != blocks_.end() && next->second.free && next->second.segment == b.segment &&
      next->first == it->first + b.size) {
    erase_free(next);
    b.size += next->second.size;
    blocks_.erase(next);
  }
  if (it != blocks_.begin()) {
    auto prev = std::prev(it);
    if (prev->second.free && prev->second.segment == b.segment && prev->first + prev->second.size == it->first) {
      erase_free(prev);
      prev->second.size += b.size;
      blocks_.erase(it);
      it = prev;
    }
  }
  insert_free(it);
}

}  // namespace dtensor::planner
