// CUDA ranks of the fake world: streams, phase fences, memory attribution.
#include "backends/fake/cuda_rank.h"

#include "backends/async_region.h"

#include <c10/util/Exception.h>

#include <array>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#ifdef DTENSOR_TORCH_HAS_CUDA
#include <ATen/Context.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#endif

namespace dtensor {
namespace detail {

// Note [CUDA fake collectives]
// Every rank thread of a CUDA fake world runs on a stream of its own
// (CudaRankScope), with autograd's device threads off for it
// (prepare_rank_thread), so its forward, backward and collectives are
// ordered on that stream only. Collectives keep the CPU protocol of
// Note [Phases] unchanged on the host (rendezvous, fingerprints, timeouts,
// failures, CommDebugMode events: all host-side, as on the CPU), and move the
// data with ATen ops enqueued on the rank's stream (copies, and reductions in
// fixed group-rank order: bit-identical from run to run). What the host
// barriers guarantee on the CPU ("every member finished writing / reading")
// holds on the devices through a PhaseFence: before arriving at a phase,
// a member records an event on its stream; after all arrived, it makes its
// stream wait on every other member's event of that phase
// (cudaStreamWaitEvent: the host never waits for the device, nothing is
// synchronised device-wide). Every device read of a peer's tensor is thus
// ordered after the peer's writes before the phase, and every later write or
// reuse of memory (a staging buffer at seq + 2, a caller's tensor after the
// collective returned) after the readers' reads: the same arguments as on
// the CPU, with "enqueued before the event" for "done before arriving".
// Posts keep peers' tensors alive until release_inputs() after a fenced
// phase; a tensor freed after that is reused by the caching allocator only on
// its owner's stream, which is already ordered after the readers. Events are
// two per member (phase parity): a member records phase k + 2 only after the
// barrier of phase k + 1, which every member passes after waiting on phase k.
//
// Memory: the ranks share LibTorch's caching allocator. Each rank's stream is
// created for it (not taken from c10's pool, whose streams other code may
// share), and a trace tracker of the caching allocator
// (attachAllocatorTraceTracker) charges every ALLOC on a rank's stream to
// that rank, by block size, and every FREE_REQUESTED of that block back to
// it, whichever thread frees; host allocations of a CUDA rank's thread are
// not charged (they are not its GPU's memory). Chosen over a per-rank MemPool: a pool with a
// stream filter isolates the ranks' caches but reports no live bytes or peak
// per pool without a snapshot per query, while the tracker gives exact live
// bytes at every allocation. The tracker runs inside the allocator, under its
// lock, where throwing would lose the block: an allocation past the cap is
// recorded there and thrown on the rank's thread at its next collective
// phase (or when its function returns), with the same message as on the CPU.

#ifdef DTENSOR_TORCH_HAS_CUDA
namespace {

using c10::CachingDeviceAllocator::TraceEntry;

// The account of the CUDA rank running on this thread (CudaRankScope).
thread_local RankMemoryAccount* t_cuda_account = nullptr;

// Streams created for ranks, kept for later worlds (a stream is not
// destroyed while the caching allocator may still list blocks of it).
class StreamLeases {
 public:
  cudaStream_t lease(c10::DeviceIndex device) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<cudaStream_t>& free = free_[device];
    if (!free.empty()) {
      cudaStream_t stream = free.back();
      free.pop_back();
      return stream;
    }
    c10::cuda::CUDAGuard guard(device);
    cudaStream_t stream = nullptr;
    C10_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    return stream;
  }
  void give_back(c10::DeviceIndex device, cudaStream_t stream) {
    std::lock_guard<std::mutex> lock(mutex_);
    free_[device].push_back(stream);
  }

 private:
  std::mutex mutex_;
  std::unordered_map<c10::DeviceIndex, std::vector<cudaStream_t>> free_;
};

StreamLeases& stream_leases() {
  static auto* leases = new StreamLeases();  // leaked: streams live as long as the process
  return *leases;
}

// Which stream charges which account, and which live block belongs to whom.
class CudaMemoryRegistry {
 public:
  void add_stream(cudaStream_t stream, std::shared_ptr<RankMemoryAccount> account) {
    attach_once();
    std::lock_guard<std::mutex> lock(mutex_);
    by_stream_[stream] = std::move(account);
  }
  void remove_stream(cudaStream_t stream) {
    std::lock_guard<std::mutex> lock(mutex_);
    by_stream_.erase(stream);
  }

 private:
  struct Block {
    std::shared_ptr<RankMemoryAccount> account;
    int64_t bytes;
  };

  void attach_once() {
    std::call_once(attached_, [this] {
      // The caching allocator hands a tracker to the per-device allocators
      // that exist when it is attached; they are made by CUDA's lazy init,
      // which may not have run yet (no CUDA tensor so far). Before this, the
      // tracker was dropped and every rank's GPU memory read 0 on a GPU host.
      at::globalContext().lazyInitDevice(c10::DeviceType::CUDA);
      c10::cuda::CUDACachingAllocator::attachAllocatorTraceTracker(
          [this](const TraceEntry& entry) { on_trace(entry); });
    });
  }

  // Runs inside the caching allocator, under its lock: takes only mutex_
  // (and the account's), which are never held while allocating.
  void on_trace(const TraceEntry& entry) {
    if (entry.action_ == TraceEntry::ALLOC) {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = by_stream_.find(static_cast<cudaStream_t>(entry.stream_));
      if (it == by_stream_.end()) return;
      const auto bytes = static_cast<int64_t>(entry.size_);
      it->second->charge_after(bytes, "cuda");
      blocks_[entry.addr_] = Block{it->second, bytes};
    } else if (entry.action_ == TraceEntry::FREE_REQUESTED) {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = blocks_.find(entry.addr_);
      if (it == blocks_.end()) return;
      it->second.account->release(it->second.bytes);
      blocks_.erase(it);
    }
  }

  std::once_flag attached_;
  std::mutex mutex_;
  std::unordered_map<cudaStream_t, std::shared_ptr<RankMemoryAccount>> by_stream_;
  std::unordered_map<size_t, Block> blocks_;
};

CudaMemoryRegistry& memory_registry() {
  static auto* registry = new CudaMemoryRegistry();  // leaked: the tracker cannot be detached
  return *registry;
}

class CudaPhaseFence final : public PhaseFence {
 public:
  explicit CudaPhaseFence(int64_t size)
      : events_{std::vector<cudaEvent_t>(static_cast<size_t>(size), nullptr),
                std::vector<cudaEvent_t>(static_cast<size_t>(size), nullptr)} {}

  ~CudaPhaseFence() override {
    for (auto& parity : events_) {
      for (cudaEvent_t event : parity) {
        if (event != nullptr) (void)cudaEventDestroy(event);
      }
    }
  }

  void record(int64_t group_rank, uint64_t phase) override {
    // A CUDA allocation past the rank's cap fails here, on the rank's thread.
    if (t_cuda_account != nullptr) t_cuda_account->throw_if_over_cap();
    cudaEvent_t& event = events_[phase & 1][static_cast<size_t>(group_rank)];
    if (event == nullptr) {
      C10_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
    }
    C10_CUDA_CHECK(cudaEventRecord(event, c10::cuda::getCurrentCUDAStream().stream()));
  }

  void wait_all(int64_t group_rank, uint64_t phase) override {
    const cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
    const std::vector<cudaEvent_t>& events = events_[phase & 1];
    for (size_t r = 0; r < events.size(); ++r) {
      if (static_cast<int64_t>(r) == group_rank || events[r] == nullptr) continue;
      C10_CUDA_CHECK(cudaStreamWaitEvent(stream, events[r], 0));
    }
  }

 private:
  // events_[phase parity][group rank]: written by that rank only, read by the
  // others after the phase's barrier.
  std::array<std::vector<cudaEvent_t>, 2> events_;
};

}  // namespace

struct CudaRankScope::Impl {
  Impl(c10::Device device, std::shared_ptr<RankMemoryAccount> account)
      : index(device.index()),
        device_guard(device),
        stream(stream_leases().lease(index)),
        side_stream(stream_leases().lease(index)),
        stream_guard(c10::cuda::getStreamFromExternal(stream, index)),
        charged(account != nullptr),
        previous_account(t_cuda_account) {
    t_cuda_account = account.get();
    if (charged) {
      memory_registry().add_stream(stream, account);
      memory_registry().add_stream(side_stream, std::move(account));
    }
    // Async redistributions of this rank run on its own side stream, charged
    // to its account (Note [Async redistribution]).
    set_thread_side_stream(c10::cuda::getStreamFromExternal(side_stream, index).unwrap());
  }
  ~Impl() {
    set_thread_side_stream(std::nullopt);
    // The rank's work is done before its thread ends (also after a failure:
    // its streams wait on events that were recorded, never on a missing one).
    for (cudaStream_t s : {side_stream, stream}) {
      const cudaError_t status = cudaStreamSynchronize(s);
      if (status != cudaSuccess) (void)cudaGetLastError();
      if (charged) memory_registry().remove_stream(s);
      stream_leases().give_back(index, s);
    }
    t_cuda_account = previous_account;
  }
  c10::DeviceIndex index;
  c10::cuda::CUDAGuard device_guard;
  cudaStream_t stream;
  cudaStream_t side_stream;
  c10::cuda::CUDAStreamGuard stream_guard;
  bool charged;
  RankMemoryAccount* previous_account;
};

int64_t visible_cuda_devices() { return static_cast<int64_t>(c10::cuda::device_count()); }

CudaRankScope::CudaRankScope(c10::Device device, std::shared_ptr<RankMemoryAccount> account)
    : impl_(std::make_unique<Impl>(device, std::move(account))) {}

std::shared_ptr<PhaseFence> make_cuda_phase_fence(int64_t group_size) {
  return std::make_shared<CudaPhaseFence>(group_size);
}

#else  // no CUDA LibTorch

struct CudaRankScope::Impl {};

int64_t visible_cuda_devices() { return 0; }

CudaRankScope::CudaRankScope(c10::Device device, std::shared_ptr<RankMemoryAccount>) {
  TORCH_CHECK(false, "fake rank on ", device,
              ": dtensor was built without CUDA (Bazel --config=cuda, or CMake with the CUDA "
              "toolkit and a CUDA LibTorch)");
}

std::shared_ptr<PhaseFence> make_cuda_phase_fence(int64_t) {
  TORCH_CHECK(false, "fake world on CUDA: dtensor was built without CUDA (Bazel --config=cuda, "
              "or CMake with the CUDA toolkit and a CUDA LibTorch)");
  return nullptr;
}

#endif

CudaRankScope::~CudaRankScope() = default;

}  // namespace detail
}  // namespace dtensor
