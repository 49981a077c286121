// Async regions: a stretch of device work (an async redistribution: its
// collectives and the kernels between them) moved off the caller's stream,
// so that what the caller enqueues next runs beside it. See Note [Async
// redistribution].
//   auto region = begin_async_region(local.device(), {local});
//   at::Tensor out = ...;                       // collectives, kernels
//   WorkPtr pending = region ? region->finish({out}) : nullptr;
//   ...                                         // overlaps the region's work
//   if (pending) pending->wait();               // before `out` is first read
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/core/Stream.h>

#include <memory>
#include <optional>
#include <vector>

#include "backends/communicator.h"

namespace dtensor {

// Note [Async redistribution]
// PyTorch's redistribute(async_op=True) returns at once and waits for the
// collective at the result's first use (AsyncCollectiveTensor). Here, on a
// device with streams (CUDA: NCCL, or the fake world's CUDA ranks), the
// redistribution is enqueued on a side stream (one per thread and device, so
// a thread's regions run in order) that first waits for the caller's stream;
// collectives already order themselves after the current stream and make it
// wait for them (Note [NCCL stream ordering], Note [CUDA fake collectives]),
// so inside the region they follow the side stream. The
// caller's stream is current again when the region finishes, and the result
// carries a Work whose wait() makes the then-current stream wait for the side
// stream (an event wait: the host never blocks). The DTensor holding the
// result calls it before its local tensor is first read (DTensorImpl::local),
// so kernels the caller enqueues in between overlap the communication.
// Tensors crossing streams are recorded on the stream that uses them (the
// caching allocator's record_stream), so none is reused too early.
// On the CPU (the CPU fake world, solo, Gloo) there is no stream to move to:
// begin_async_region returns nullptr and the redistribution runs
// synchronously, with the same results, collectives and autograd.

/// An open region on the calling thread (see begin_async_region).
class AsyncRegion {
 public:
  virtual ~AsyncRegion() = default;
  /// Ends the region (the caller's stream is current again) and returns the
  /// work that orders the caller's stream after it. `outputs` are what the
  /// caller will read; they are kept safe from early reuse.
  virtual WorkPtr finish(const std::vector<at::Tensor>& outputs) = 0;
};

/// A point in a device stream's work (a recorded CUDA event), which a later
/// region can be ordered after instead of the caller's whole stream.
class StreamMark {
 public:
  virtual ~StreamMark() = default;
};

/// Marks the current end of `device`'s current stream, or returns nullptr
/// when `device` has no streams (or dtensor was built without CUDA).
std::shared_ptr<const StreamMark> mark_current_stream(c10::Device device);

/// Opens a region for work on `device` whose `inputs` come from the caller's
/// stream, or returns nullptr when `device` has no streams or dtensor was
/// built without CUDA (the work then runs synchronously). The region's work
/// starts after everything enqueued on the caller's stream so far, or, given
/// `after`, only after that mark (FSDP's all-gathers: they read parameters
/// the optimizer last wrote, so they need not wait for the compute enqueued
/// since; see Note [FSDP streams]).
std::unique_ptr<AsyncRegion> begin_async_region(c10::Device device, const std::vector<at::Tensor>& inputs,
                                                const std::shared_ptr<const StreamMark>& after = nullptr);

/// The side stream regions of the calling thread use, or nullopt for one of
/// LibTorch's stream pool. The CUDA fake world sets a stream of the rank's
/// own (charged to its memory account) for the rank thread's lifetime.
void set_thread_side_stream(std::optional<c10::Stream> stream);
/// The stream set_thread_side_stream gave the calling thread, if any.
std::optional<c10::Stream> thread_side_stream();

}  // namespace dtensor
