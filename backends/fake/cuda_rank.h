// What a fake rank on a GPU needs beyond a CPU rank: its own CUDA stream,
// the ordering of the members' streams at every collective phase, and the
// charging of its CUDA allocations to its memory account. Compiled in every
// build; without a CUDA LibTorch (DTENSOR_TORCH_HAS_CUDA) no GPU is visible
// and the scope refuses to start. See Note [CUDA fake collectives].
//   CudaRankScope scope(c10::Device(c10::kCUDA, 0), world.memory_account());
//   auto fence = make_cuda_phase_fence(group_size);   // FakeRendezvous's PhaseFence
#pragma once

#include <c10/core/Device.h>

#include <cstdint>
#include <memory>

#include "backends/fake/rendezvous.h"
#include "backends/rank_memory.h"

namespace dtensor {
namespace detail {

/// CUDA devices this process sees; 0 when dtensor was built without CUDA.
int64_t visible_cuda_devices();

/// For its lifetime, on the calling (rank) thread: `device` is the current
/// device, a stream owned by this rank alone is the current stream, and CUDA
/// allocations made on that stream are charged to `account` (may be null).
/// The destructor waits for the stream's work, so a world that returned
/// (or failed) leaves no work of its ranks running.
class CudaRankScope {
 public:
  CudaRankScope(c10::Device device, std::shared_ptr<RankMemoryAccount> account);
  ~CudaRankScope();
  CudaRankScope(const CudaRankScope&) = delete;
  CudaRankScope& operator=(const CudaRankScope&) = delete;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The PhaseFence of a group of `group_size` CUDA ranks.
std::shared_ptr<PhaseFence> make_cuda_phase_fence(int64_t group_size);

}  // namespace detail
}  // namespace dtensor
