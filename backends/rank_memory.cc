// The accounting of one rank and the counting allocator that feeds it for
// CPU and meta tensors.
#include "backends/rank_memory.h"

#include <c10/core/Allocator.h>
#include <c10/util/Exception.h>
#include <torch/version.h>

#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <utility>

namespace dtensor {

// Note [Rank memory accounting]
// Every fake (or solo) rank owns a RankMemoryAccount; World makes it the
// thread's account while the world is current (ScopedCurrentWorld). A
// counting c10::Allocator, registered once per process for kCPU and kMeta in
// front of LibTorch's own (c10::SetAllocator with a higher priority; the meta
// allocator is what meta storages go through, so solo mode's shape-only
// tensors are counted exactly as real ones), looks at the thread's account:
// - none (any thread outside a world): it returns the inner allocator's
//   DataPtr untouched, no extra work but one thread-local read;
// - an account: the cap is checked BEFORE the inner allocation (a clean
//   c10::Error, nothing allocated), then the DataPtr's context becomes a small
//   record of (account, bytes, the inner DataPtr), so the free is charged to
//   the allocating rank on whatever thread it happens (a peer releasing a
//   received tensor, autograd freeing a saved activation, the test thread
//   after the world ended: the record holds the account alive).
// What is counted: storage bytes requested by this rank's thread: tensors,
// collective buffers, autograd's saved tensors and gradients. Not counted:
// memory allocated by ATen's intra-op worker threads (kernels allocate on the
// calling thread, so this is rare) and memory that bypasses c10's allocator.
// Such storages' data pointer differs from their context, so
// Allocator::raw_allocate (which asserts they agree; no op of LibTorch's CPU
// path uses it) is not supported on a rank thread.
// With an allocation log started (Note [Allocation log]), the record also
// carries the allocation's id in the log.
// CUDA ranks use another mechanism (backends/fake/cuda_memory.cc) that charges
// the same account.

RankMemoryAccount::RankMemoryAccount(int64_t rank, int64_t cap_bytes)
    : rank_(rank), cap_bytes_(cap_bytes), location_(std::make_shared<const std::string>()) {
  TORCH_CHECK(cap_bytes >= 0, "rank ", rank, ": memory cap must be 0 (no cap) or positive, got ",
              cap_bytes, " bytes");
  peak_location_ = location_;
}

RankMemoryStats RankMemoryAccount::stats() const {
  RankMemoryStats stats;
  stats.current_bytes = current_.load(std::memory_order_relaxed);
  stats.allocations = allocations_.load(std::memory_order_relaxed);
  stats.cap_bytes = cap_bytes_;
  std::lock_guard<std::mutex> lock(mutex_);
  stats.peak_bytes = peak_.load(std::memory_order_relaxed);
  stats.peak_location = *peak_location_;
  return stats;
}

void RankMemoryAccount::reset_peak() {
  std::lock_guard<std::mutex> lock(mutex_);
  peak_.store(current_.load(std::memory_order_relaxed), std::memory_order_relaxed);
  peak_location_ = location_;
}

void RankMemoryAccount::set_location(std::string label) {
  auto shared = std::make_shared<const std::string>(std::move(label));
  std::lock_guard<std::mutex> lock(mutex_);
  location_ = std::move(shared);
}

std::string RankMemoryAccount::over_cap_message(int64_t bytes, const char* device,
                                                int64_t live) const {
  return c10::str("rank ", rank_, " is out of its simulated memory: allocating ", bytes,
                  " bytes on ", device, " with ", live,
                  " bytes live would exceed the rank's memory cap of ", cap_bytes_,
                  " bytes (peak so far ", peak_.load(std::memory_order_relaxed),
                  " bytes). Raise the cap (FakeWorldOptions::memory_cap_bytes / "
                  "SoloOptions::memory_cap_bytes) or shard more, so that each rank holds less "
                  "(more ranks on the sharded mesh dim, Shard instead of Replicate, sequence "
                  "parallel activations)");
}

void RankMemoryAccount::charge(int64_t bytes, const char* device) {
  if (cap_bytes_ > 0) {
    const int64_t live = current_.load(std::memory_order_relaxed);
    TORCH_CHECK(live + bytes <= cap_bytes_, over_cap_message(bytes, device, live));
  }
  allocations_.fetch_add(1, std::memory_order_relaxed);
  const int64_t now = current_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  if (now > peak_.load(std::memory_order_relaxed)) raise_peak(now);
}

void RankMemoryAccount::charge_after(int64_t bytes, const char* device) {
  allocations_.fetch_add(1, std::memory_order_relaxed);
  const int64_t now = current_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  if (cap_bytes_ > 0 && now > cap_bytes_ && !over_cap_.load(std::memory_order_relaxed)) {
    std::string message = over_cap_message(bytes, device, now - bytes) +
                          " [a CUDA allocation cannot be refused cleanly from inside the caching "
                          "allocator: this rank fails at its next collective or when its function "
                          "returns]";
    std::lock_guard<std::mutex> lock(mutex_);
    over_cap_error_ = std::move(message);
    over_cap_.store(true, std::memory_order_release);
  }
  if (now > peak_.load(std::memory_order_relaxed)) raise_peak(now);
}

void RankMemoryAccount::throw_if_over_cap() {
  if (!over_cap_.load(std::memory_order_acquire)) return;
  std::string message;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (over_cap_error_.empty()) return;
    message = std::move(over_cap_error_);
    over_cap_error_.clear();
  }
  TORCH_CHECK(false, message);
}

// Note [Allocation log]
// A rank's peak live bytes is what torch.cuda.max_memory_allocated() would
// say; what the GPU holds (max_memory_reserved(), nvidia-smi) depends on how
// PyTorch's caching allocator places those allocations in segments, which
// depends on their order and sizes. The log keeps exactly that: each counted
// allocation (id, bytes) and each free of a logged allocation, in the order
// they happened, with the stream a CUDA run would have allocated on
// (ScopedAllocationStream). Frees of allocations made before the log started
// are not logged. Off (the default), the cost is one relaxed atomic load per
// allocation and free.

namespace {
thread_local AllocationStream t_allocation_stream = kComputeStream;
}  // namespace

ScopedAllocationStream::ScopedAllocationStream(AllocationStream stream) : previous_(t_allocation_stream) {
  t_allocation_stream = stream;
}
ScopedAllocationStream::~ScopedAllocationStream() { t_allocation_stream = previous_; }

void RankMemoryAccount::start_allocation_log() {
  std::lock_guard<std::mutex> lock(mutex_);
  log_.clear();
  logging_.store(true, std::memory_order_relaxed);
}

std::vector<AllocationEvent> RankMemoryAccount::take_allocation_log() {
  std::lock_guard<std::mutex> lock(mutex_);
  logging_.store(false, std::memory_order_relaxed);
  return std::move(log_);
}

int64_t RankMemoryAccount::log_allocation(int64_t bytes) {
  if (!logging_.load(std::memory_order_relaxed)) return -1;
  std::lock_guard<std::mutex> lock(mutex_);
  if (!logging_.load(std::memory_order_relaxed)) return -1;
  const int64_t id = next_logged_id_++;
  log_.push_back(AllocationEvent{id, bytes, false, t_allocation_stream});
  return id;
}

void RankMemoryAccount::log_free(int64_t id, int64_t bytes) {
  if (id < 0 || !logging_.load(std::memory_order_relaxed)) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (logging_.load(std::memory_order_relaxed)) log_.push_back(AllocationEvent{id, bytes, true, kComputeStream});
}

void RankMemoryAccount::raise_peak(int64_t now) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (now <= peak_.load(std::memory_order_relaxed)) return;
  peak_.store(now, std::memory_order_relaxed);
  if (peak_location_ != location_) peak_location_ = location_;
}

namespace {

thread_local const std::shared_ptr<RankMemoryAccount>* t_account = nullptr;

// What a counted DataPtr's context points to.
struct Charged {
  std::shared_ptr<RankMemoryAccount> account;
  int64_t bytes;
  c10::DataPtr inner;
  int64_t log_id;  // -1: not in an allocation log
};

void release_charged(void* context) {
  auto* charged = static_cast<Charged*>(context);
  charged->account->log_free(charged->log_id, charged->bytes);
  charged->account->release(charged->bytes);
  delete charged;  // frees the inner allocation
}

// Simple allocations (context == data, as CPU's) stay simple: kernels that
// take raw buffers (Allocator::raw_allocate asserts context == data; the CPU
// GELU kernel uses it) then work. Their charge is found by data pointer.
// Sharded by address: the rank threads of a fake world allocate at once,
// and one lock for all of them was a measurable share of a step (a few per
// cent of the FSDP host-cost profile, BENCHMARKS.md section 14).
struct SimpleChargeShard {
  std::mutex mutex;
  std::unordered_map<void*, Charged*> charges;
};
constexpr size_t kSimpleChargeShards = 64;
SimpleChargeShard& simple_charges(void* data) {
  static auto* shards = new SimpleChargeShard[kSimpleChargeShards];  // leaked: see install_counting_allocators
  // Allocations are at least 16-byte aligned: the low bits carry nothing.
  return shards[(reinterpret_cast<uintptr_t>(data) >> 6) % kSimpleChargeShards];
}
c10::DeleterFnPtr g_cpu_raw_deleter = nullptr;  // the wrapped CPU allocator's

void release_simple(void* data) {
  Charged* charged = nullptr;
  {
    SimpleChargeShard& shard = simple_charges(data);
    std::lock_guard<std::mutex> lock(shard.mutex);
    auto it = shard.charges.find(data);
    if (it != shard.charges.end()) {
      charged = it->second;
      shard.charges.erase(it);
    }
  }
  if (charged != nullptr) {
    release_charged(charged);
  } else if (g_cpu_raw_deleter != nullptr) {
    g_cpu_raw_deleter(data);  // allocated before counting started
  }
}

#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 3)
#define DTENSOR_ALLOCATOR_2_3 1
#define DTENSOR_ALLOCATE_CONST
#else
#define DTENSOR_ALLOCATOR_2_3 0
#define DTENSOR_ALLOCATE_CONST const
#endif

class CountingAllocator final : public c10::Allocator {
 public:
  CountingAllocator(c10::Allocator* inner, const char* device) : inner_(inner), device_(device) {}

  c10::DataPtr allocate(size_t n) DTENSOR_ALLOCATE_CONST override {
    const std::shared_ptr<RankMemoryAccount>* owner = t_account;
    // Zero bytes: nothing to count, and the inner DataPtr (null data, null
    // context) must stay as it is for raw_allocate's context == data check.
    if (owner == nullptr || !*owner || n == 0) return inner_->allocate(n);
    const auto bytes = static_cast<int64_t>(n);
    (*owner)->charge(bytes, device_);
    c10::DataPtr inner;
    try {
      inner = inner_->allocate(n);
    } catch (...) {
      (*owner)->release(bytes);
      throw;
    }
    void* data = inner.get();
    const c10::Device device = inner.device();
    const bool simple = simple_ && data != nullptr && data == inner.get_context();
    auto* charged = new Charged{*owner, bytes, std::move(inner), (*owner)->log_allocation(bytes)};
    if (!simple) return c10::DataPtr(data, charged, &release_charged, device);
    {
      SimpleChargeShard& shard = simple_charges(data);
      std::lock_guard<std::mutex> lock(shard.mutex);
      shard.charges[data] = charged;
    }
    return c10::DataPtr(data, data, &release_simple, device);
  }

  c10::DeleterFnPtr raw_deleter() const override { return simple_ ? &release_simple : inner_->raw_deleter(); }

  /// Keep simple DataPtrs simple (CPU; see release_simple).
  void keep_simple() {
    simple_ = inner_->raw_deleter() != nullptr;
    if (simple_) g_cpu_raw_deleter = inner_->raw_deleter();
  }

#if DTENSOR_ALLOCATOR_2_3
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    inner_->copy_data(dest, src, count);
  }
  // Copy-on-write storages (lazy clones) need a "simple" DataPtr: its data is
  // the whole allocation, which holds for the counted ones too.
  bool is_simple_data_ptr(const c10::DataPtr& data_ptr) const override {
    if (data_ptr.get_deleter() == &release_charged) {
      return data_ptr.get() == static_cast<const Charged*>(data_ptr.get_context())->inner.get();
    }
    if (data_ptr.get_deleter() == &release_simple) return true;
    return inner_->is_simple_data_ptr(data_ptr);
  }
#endif

 private:
  c10::Allocator* inner_;
  const char* device_;
  bool simple_ = false;
};

// Registered with this priority, above LibTorch's own registrations (0).
constexpr uint8_t kCountingPriority = 10;

void install_counting_allocators() {
  static std::once_flag once;
  std::call_once(once, [] {
    // Leaked on purpose: storages outlive every static destructor's order.
    static auto* cpu = new CountingAllocator(c10::GetAllocator(c10::kCPU), "CPU");
    cpu->keep_simple();
    static auto* meta = new CountingAllocator(c10::GetAllocator(c10::kMeta), "meta");
    c10::SetAllocator(c10::kCPU, cpu, kCountingPriority);
    c10::SetAllocator(c10::kMeta, meta, kCountingPriority);
  });
}

}  // namespace

ScopedRankMemory::ScopedRankMemory(const std::shared_ptr<RankMemoryAccount>* account)
    : previous_(t_account) {
  if (account != nullptr && *account) install_counting_allocators();
  t_account = account;
}

ScopedRankMemory::~ScopedRankMemory() { t_account = previous_; }

RankMemoryAccount* current_rank_memory() {
  return t_account != nullptr ? t_account->get() : nullptr;
}

const std::shared_ptr<RankMemoryAccount>* current_rank_memory_owner() { return t_account; }

}  // namespace dtensor
