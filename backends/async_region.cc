// Async regions on CUDA streams; nothing without a CUDA LibTorch. See Note
// [Async redistribution] in async_region.h.
#include "backends/async_region.h"

#ifdef DTENSOR_TORCH_HAS_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#endif

#include <utility>
#include <vector>

namespace dtensor {
namespace {

thread_local std::optional<c10::Stream> t_side_stream;

}  // namespace

void set_thread_side_stream(std::optional<c10::Stream> stream) { t_side_stream = stream; }
std::optional<c10::Stream> thread_side_stream() { return t_side_stream; }

#ifdef DTENSOR_TORCH_HAS_CUDA
namespace {

// Every tensor that lives on the CUDA device of `stream` is marked as used
// there, so the caching allocator does not hand its memory out again before
// `stream`'s work on it is done.
void record_on(const std::vector<at::Tensor>& tensors, const c10::cuda::CUDAStream& stream) {
  for (const at::Tensor& t : tensors) {
    if (!t.defined() || !t.is_cuda() || !t.has_storage() || t.storage().data_ptr().get() == nullptr) continue;
    c10::cuda::CUDACachingAllocator::recordStream(t.storage().data_ptr(), stream);
  }
}

cudaEvent_t recorded_event(const c10::cuda::CUDAStream& stream) {
  cudaEvent_t event = nullptr;
  C10_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  C10_CUDA_CHECK(cudaEventRecord(event, stream.stream()));
  return event;
}

class CudaStreamMark final : public StreamMark {
 public:
  explicit CudaStreamMark(const c10::cuda::CUDAStream& stream) : event(recorded_event(stream)) {}
  ~CudaStreamMark() override { (void)cudaEventDestroy(event); }
  cudaEvent_t event;
};

// The side stream's end: wait() orders the stream current at that moment
// after it, once; the event is destroyed with the work.
class SideStreamWork final : public Work {
 public:
  SideStreamWork(cudaEvent_t done, c10::DeviceIndex device) : done_(done), device_(device) {}
  ~SideStreamWork() override { (void)cudaEventDestroy(done_); }
  void wait() override {
    C10_CUDA_CHECK(cudaStreamWaitEvent(c10::cuda::getCurrentCUDAStream(device_).stream(), done_, 0));
  }
  bool is_completed() override { return cudaEventQuery(done_) == cudaSuccess; }

 private:
  cudaEvent_t done_;
  c10::DeviceIndex device_;
};

// The thread's side stream on `device`: the one set_thread_side_stream gave
// it, else one of LibTorch's pool, picked once per thread and device, so that
// a thread's regions run in the order it opened them (FSDP relies on it: an
// all-gather ordered after a mark only also follows the regions before it).
c10::cuda::CUDAStream side_stream_of_thread(c10::Device device) {
  if (t_side_stream && t_side_stream->device() == device) {
    return c10::cuda::CUDAStream(c10::cuda::CUDAStream::UNCHECKED, *t_side_stream);
  }
  thread_local std::vector<std::optional<c10::cuda::CUDAStream>> from_pool;
  const auto index = static_cast<size_t>(device.index());
  if (from_pool.size() <= index) from_pool.resize(index + 1);
  if (!from_pool[index]) from_pool[index] = c10::cuda::getStreamFromPool(/*isHighPriority=*/false, device.index());
  return *from_pool[index];
}

class CudaAsyncRegion final : public AsyncRegion {
 public:
  CudaAsyncRegion(c10::Device device, const std::vector<at::Tensor>& inputs, const StreamMark* after)
      : device_guard_(device),
        caller_(c10::cuda::getCurrentCUDAStream(device.index())),
        side_(side_stream_of_thread(device)) {
    if (after != nullptr) {
      C10_CUDA_CHECK(cudaStreamWaitEvent(side_.stream(), static_cast<const CudaStreamMark*>(after)->event, 0));
    } else {
      cudaEvent_t ready = recorded_event(caller_);
      const cudaError_t status = cudaStreamWaitEvent(side_.stream(), ready, 0);
      (void)cudaEventDestroy(ready);  // destroying a recorded event is safe; the wait holds
      C10_CUDA_CHECK(status);
    }
    record_on(inputs, side_);
    stream_guard_.emplace(side_);
  }
  ~CudaAsyncRegion() override {
    // Not finished (an exception in the region): the caller's stream waits
    // for what was enqueued, as a synchronous redistribution would have.
    if (stream_guard_) {
      stream_guard_.reset();
      cudaEvent_t done = nullptr;
      if (cudaEventCreateWithFlags(&done, cudaEventDisableTiming) == cudaSuccess) {
        (void)cudaEventRecord(done, side_.stream());
        (void)cudaStreamWaitEvent(caller_.stream(), done, 0);
        (void)cudaEventDestroy(done);
      }
    }
  }

  WorkPtr finish(const std::vector<at::Tensor>& outputs) override {
    cudaEvent_t done = recorded_event(side_);
    stream_guard_.reset();
    record_on(outputs, caller_);
    return std::make_shared<SideStreamWork>(done, caller_.device_index());
  }

 private:
  c10::cuda::CUDAGuard device_guard_;
  c10::cuda::CUDAStream caller_;
  c10::cuda::CUDAStream side_;
  std::optional<c10::cuda::CUDAStreamGuard> stream_guard_;
};

}  // namespace

std::shared_ptr<const StreamMark> mark_current_stream(c10::Device device) {
  if (!device.is_cuda()) return nullptr;
  const c10::DeviceIndex index = device.has_index() ? device.index() : c10::cuda::current_device();
  return std::make_shared<CudaStreamMark>(c10::cuda::getCurrentCUDAStream(index));
}

std::unique_ptr<AsyncRegion> begin_async_region(c10::Device device, const std::vector<at::Tensor>& inputs,
                                                const std::shared_ptr<const StreamMark>& after) {
  if (!device.is_cuda()) return nullptr;
  if (!device.has_index()) device = c10::Device(c10::kCUDA, c10::cuda::current_device());
  return std::make_unique<CudaAsyncRegion>(device, inputs, after.get());
}

#else  // no CUDA LibTorch: every device runs synchronously

std::shared_ptr<const StreamMark> mark_current_stream(c10::Device) { return nullptr; }

std::unique_ptr<AsyncRegion> begin_async_region(c10::Device, const std::vector<at::Tensor>&,
                                                const std::shared_ptr<const StreamMark>&) {
  return nullptr;
}

#endif

}  // namespace dtensor
