// Collectives on NCCL: dtype and op mapping, stream ordering with CUDA
// events, all_to_all and scatter from grouped send/recv, and completion
// handles for async collectives.
#include "backends/nccl/nccl_communicator.h"

#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>

#include <thread>

#include "backends/nccl/nccl_check.h"

#ifdef DTENSOR_TORCH_HAS_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace dtensor {

// Note [NCCL stream ordering]
// Collectives run on a stream of their own (one per communicator), so that
// communication can overlap the caller's compute, yet they must see the
// caller's writes and the caller must see theirs:
//   1. an event recorded on the current stream; the NCCL stream waits on it;
//   2. the NCCL calls are enqueued on the NCCL stream;
//   3. an event recorded on the NCCL stream; the current stream waits on it
//      now (synchronous collectives) or in Work::wait() (async_op).
// Nothing blocks the host, as with torch.distributed's NCCL backend: the
// result is ready for the next kernel on the current stream. NCCL kernels
// have no timeout; barrier() blocks the host (bounded by the timeout) and
// Work::wait() reports NCCL's asynchronous errors.
// "Current stream" is LibTorch's current CUDA stream when built against a
// CUDA LibTorch (DTENSOR_TORCH_HAS_CUDA); a CPU LibTorch (Debian's) has no
// c10::cuda, and then the legacy default stream is used, with which every
// blocking stream of the process synchronizes. With a CUDA LibTorch, tensors
// of async collectives are also recorded on the NCCL stream so that the
// caching allocator does not reuse their memory before the collective ends.

cudaStream_t nccl_current_stream(int device) {
#ifdef DTENSOR_TORCH_HAS_CUDA
  return c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device)).stream();
#else
  (void)device;
  return cudaStreamLegacy;
#endif
}

namespace {

// Makes `device` current for a scope, restoring the previous one.
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    if (cudaGetDevice(&previous_) != cudaSuccess) previous_ = -1;
    if (previous_ != device) DTENSOR_NCCL_CHECK(cudaSetDevice(device), "nccl device scope");
  }
  ~DeviceScope() {
    if (previous_ >= 0) (void)cudaSetDevice(previous_);
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = -1;
};

// A reduction's operands as NCCL sees them. Bool reduces as uint8 (sum is
// "any", product is "all", as in c10d); complex as pairs of reals (sum, avg).
struct NcclReduce {
  ncclDataType_t type;
  ncclRedOp_t op;
  size_t count;  // elements of `type` per tensor
};

ncclDataType_t nccl_type(c10::ScalarType type, const std::string& where) {
  switch (type) {
    case at::kFloat:
      return ncclFloat32;
    case at::kDouble:
      return ncclFloat64;
    case at::kHalf:
      return ncclFloat16;
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 10, 0)
    case at::kBFloat16:
      return ncclBfloat16;
#endif
    case at::kInt:
      return ncclInt32;
    case at::kLong:
      return ncclInt64;
    case at::kChar:
      return ncclInt8;
    case at::kByte:
    case at::kBool:
      return ncclUint8;
    default:
      C10_THROW_ERROR(Error, c10::str(where, ": NCCL cannot reduce dtype ", type,
                                      "; convert to float32, bfloat16, int32 or int64 first"));
  }
}

ncclRedOp_t nccl_op(ReduceOp op, c10::ScalarType type) {
  const bool is_bool = type == at::kBool;
  switch (op) {
    case ReduceOp::kSum:
      return is_bool ? ncclMax : ncclSum;
    case ReduceOp::kAvg:
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 10, 0)
      return ncclAvg;
#else
      C10_THROW_ERROR(Error, "ReduceOp avg needs NCCL >= 2.10");
#endif
    case ReduceOp::kMax:
      return ncclMax;
    case ReduceOp::kMin:
      return ncclMin;
    case ReduceOp::kProduct:
      return is_bool ? ncclMin : ncclProd;
  }
  C10_THROW_ERROR(Error, "unknown ReduceOp");
}

NcclReduce nccl_reduce(const at::Tensor& t, ReduceOp op, const std::string& where) {
  if (t.is_complex()) {
    TORCH_CHECK(op == ReduceOp::kSum || op == ReduceOp::kAvg, where, ": ReduceOp ",
                reduce_op_name(op), " is not defined for complex tensors; use sum or avg");
    const c10::ScalarType real = t.scalar_type() == at::kComplexDouble ? at::kDouble : at::kFloat;
    return {nccl_type(real, where), nccl_op(op, real), static_cast<size_t>(t.numel()) * 2};
  }
  return {nccl_type(t.scalar_type(), where), nccl_op(op, t.scalar_type()),
          static_cast<size_t>(t.numel())};
}

size_t nbytes(const at::Tensor& t) {
  return static_cast<size_t>(t.numel()) * static_cast<size_t>(t.element_size());
}

char* bytes_of(const at::Tensor& t) { return static_cast<char*>(t.data_ptr()); }

// Completion of an async collective: the event recorded after it on the NCCL
// stream. Holds the tensors until waited on.
class NcclWork final : public Work {
 public:
  NcclWork(std::string where, cudaEvent_t done, int device, ncclComm_t comm,
           std::vector<at::Tensor> tensors)
      : where_(std::move(where)),
        done_(done),
        device_(device),
        comm_(comm),
        tensors_(std::move(tensors)) {}
  ~NcclWork() override { (void)cudaEventDestroy(done_); }

  void wait() override {
    DeviceScope scope(device_);
    check_async_error();
    DTENSOR_NCCL_CHECK(cudaStreamWaitEvent(nccl_current_stream(device_), done_, 0), where_);
    tensors_.clear();
  }

  bool is_completed() override {
    DeviceScope scope(device_);
    check_async_error();
    const cudaError_t state = cudaEventQuery(done_);
    if (state == cudaErrorNotReady) return false;
    DTENSOR_NCCL_CHECK(state, where_);
    return true;
  }

 private:
  void check_async_error() {
    ncclResult_t async_error = ncclSuccess;
    DTENSOR_NCCL_CHECK(ncclCommGetAsyncError(comm_, &async_error), where_);
    DTENSOR_NCCL_CHECK(async_error, where_);
  }

  std::string where_;
  cudaEvent_t done_;
  int device_;
  ncclComm_t comm_;
  std::vector<at::Tensor> tensors_;
};

}  // namespace

NcclCommunicator::NcclCommunicator(std::vector<int64_t> group_ranks, int64_t global_rank,
                                   std::shared_ptr<ObserverList> observers, ncclComm_t comm,
                                   int device, std::chrono::milliseconds default_timeout)
    : Communicator(std::move(group_ranks), global_rank, std::move(observers)),
      comm_(comm),
      device_(device),
      default_timeout_(default_timeout) {
  DeviceScope scope(device_);
  DTENSOR_NCCL_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking),
                     describe("creating the NCCL stream"));
  DTENSOR_NCCL_CHECK(cudaMalloc(&barrier_buffer_, sizeof(float)),
                     describe("allocating the barrier buffer"));
}

NcclCommunicator::~NcclCommunicator() {
  DeviceScope scope(device_);
  if (failed_) {
    (void)ncclCommAbort(comm_);
  } else {
    (void)cudaStreamSynchronize(stream_);
    (void)ncclCommDestroy(comm_);
  }
  (void)cudaFree(barrier_buffer_);
  (void)cudaStreamDestroy(stream_);
}

void NcclCommunicator::check_tensor(const char* op, const at::Tensor& tensor) const {
  TORCH_CHECK(tensor.is_cuda() && tensor.device().index() == device_, describe(op),
              ": tensor is on ", tensor.device(),
              " but this rank's NCCL communicator uses cuda:", device_,
              "; move it with tensor.to(world.device())");
}

WorkPtr NcclCommunicator::enqueue(const char* op, std::vector<at::Tensor> tensors, bool async_op,
                                  const std::function<void(cudaStream_t)>& issue) {
  const std::string where = describe(op);
  DeviceScope scope(device_);
  const cudaStream_t current = nccl_current_stream(device_);
  cudaEvent_t ready = nullptr;
  cudaEvent_t done = nullptr;
  DTENSOR_NCCL_CHECK(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming), where);
  DTENSOR_NCCL_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming), where);
  try {
    DTENSOR_NCCL_CHECK(cudaEventRecord(ready, current), where);
    DTENSOR_NCCL_CHECK(cudaStreamWaitEvent(stream_, ready, 0), where);
    issue(stream_);
    DTENSOR_NCCL_CHECK(cudaEventRecord(done, stream_), where);
  } catch (...) {
    failed_ = true;
    (void)cudaEventDestroy(ready);
    (void)cudaEventDestroy(done);
    throw;
  }
  (void)cudaEventDestroy(ready);  // released once the recorded work completes
  if (!async_op) {
    const cudaError_t status = cudaStreamWaitEvent(current, done, 0);
    (void)cudaEventDestroy(done);
    DTENSOR_NCCL_CHECK(status, where);
    return completed_work();
  }
#ifdef DTENSOR_TORCH_HAS_CUDA
  const auto nccl_stream =
      c10::cuda::getStreamFromExternal(stream_, static_cast<c10::DeviceIndex>(device_));
  for (const at::Tensor& t : tensors) {
    if (t.defined() && t.has_storage()) {
      c10::cuda::CUDACachingAllocator::recordStream(t.storage().data_ptr(), nccl_stream);
    }
  }
#endif
  return std::make_shared<NcclWork>(where, done, device_, comm_, std::move(tensors));
}

WorkPtr NcclCommunicator::run_all_reduce(at::Tensor& tensor, const AllReduceOptions& options) {
  check_tensor("all_reduce", tensor);
  const NcclReduce r = nccl_reduce(tensor, options.reduce_op, describe("all_reduce"));
  void* data = tensor.data_ptr();
  return enqueue("all_reduce", {tensor}, options.async_op, [&](cudaStream_t stream) {
    DTENSOR_NCCL_CHECK(ncclAllReduce(data, data, r.count, r.type, r.op, comm_, stream),
                       describe("all_reduce"));
  });
}

WorkPtr NcclCommunicator::run_all_gather_into_tensor(at::Tensor& output, const at::Tensor& input,
                                                     const AllGatherOptions& options) {
  check_tensor("all_gather_into_tensor", input);
  check_tensor("all_gather_into_tensor", output);
  // Data movement only: bytes, so every dtype works.
  return enqueue("all_gather_into_tensor", {output, input}, options.async_op,
                 [&](cudaStream_t stream) {
                   DTENSOR_NCCL_CHECK(ncclAllGather(input.data_ptr(), output.data_ptr(),
                                                    nbytes(input), ncclInt8, comm_, stream),
                                      describe("all_gather_into_tensor"));
                 });
}

WorkPtr NcclCommunicator::run_reduce_scatter_tensor(at::Tensor& output, const at::Tensor& input,
                                                    const ReduceScatterOptions& options) {
  check_tensor("reduce_scatter_tensor", input);
  check_tensor("reduce_scatter_tensor", output);
  const NcclReduce r = nccl_reduce(output, options.reduce_op, describe("reduce_scatter_tensor"));
  return enqueue("reduce_scatter_tensor", {output, input}, options.async_op,
                 [&](cudaStream_t stream) {
                   DTENSOR_NCCL_CHECK(ncclReduceScatter(input.data_ptr(), output.data_ptr(),
                                                        r.count, r.type, r.op, comm_, stream),
                                      describe("reduce_scatter_tensor"));
                 });
}

WorkPtr NcclCommunicator::run_all_to_all_single(at::Tensor& output, const at::Tensor& input,
                                                const std::vector<int64_t>& output_split_sizes,
                                                const std::vector<int64_t>& input_split_sizes,
                                                const AllToAllOptions& options) {
  check_tensor("all_to_all_single", input);
  check_tensor("all_to_all_single", output);
  // Bytes per dim-0 row (equal for input and output: same trailing dims).
  const size_t row =
      input.size(0) > 0
          ? nbytes(input) / static_cast<size_t>(input.size(0))
          : (output.size(0) > 0 ? nbytes(output) / static_cast<size_t>(output.size(0)) : 0);
  const std::string where = describe("all_to_all_single");
  return enqueue("all_to_all_single", {output, input}, options.async_op, [&](cudaStream_t stream) {
    DTENSOR_NCCL_CHECK(ncclGroupStart(), where);
    size_t in_offset = 0;
    size_t out_offset = 0;
    for (int64_t peer = 0; peer < size(); ++peer) {
      const size_t send = static_cast<size_t>(input_split_sizes[peer]) * row;
      const size_t recv = static_cast<size_t>(output_split_sizes[peer]) * row;
      const int p = static_cast<int>(peer);
      if (send > 0) {
        DTENSOR_NCCL_CHECK(ncclSend(bytes_of(input) + in_offset, send, ncclInt8, p, comm_, stream),
                           where);
      }
      if (recv > 0) {
        DTENSOR_NCCL_CHECK(
            ncclRecv(bytes_of(output) + out_offset, recv, ncclInt8, p, comm_, stream), where);
      }
      in_offset += send;
      out_offset += recv;
    }
    DTENSOR_NCCL_CHECK(ncclGroupEnd(), where);
  });
}

WorkPtr NcclCommunicator::run_broadcast(at::Tensor& tensor, const BroadcastOptions& options) {
  check_tensor("broadcast", tensor);
  void* data = tensor.data_ptr();
  const int root = static_cast<int>(options.root);
  return enqueue("broadcast", {tensor}, options.async_op, [&](cudaStream_t stream) {
    DTENSOR_NCCL_CHECK(ncclBroadcast(data, data, nbytes(tensor), ncclInt8, root, comm_, stream),
                       describe("broadcast"));
  });
}

WorkPtr NcclCommunicator::run_scatter(at::Tensor& output, const std::vector<at::Tensor>& inputs,
                                      const ScatterOptions& options) {
  check_tensor("scatter", output);
  for (const at::Tensor& in : inputs) check_tensor("scatter", in);
  const std::string where = describe("scatter");
  const int root = static_cast<int>(options.root);
  const size_t bytes = nbytes(output);
  std::vector<at::Tensor> keep = inputs;
  keep.push_back(output);
  return enqueue("scatter", std::move(keep), options.async_op, [&](cudaStream_t stream) {
    if (bytes == 0) return;
    DTENSOR_NCCL_CHECK(ncclGroupStart(), where);
    if (rank() == root) {
      for (int64_t peer = 0; peer < size(); ++peer) {
        if (peer == root) continue;
        DTENSOR_NCCL_CHECK(ncclSend(inputs[peer].data_ptr(), bytes, ncclInt8,
                                    static_cast<int>(peer), comm_, stream),
                           where);
      }
    } else {
      DTENSOR_NCCL_CHECK(ncclRecv(output.data_ptr(), bytes, ncclInt8, root, comm_, stream), where);
    }
    DTENSOR_NCCL_CHECK(ncclGroupEnd(), where);
    if (rank() == root) {
      DTENSOR_NCCL_CHECK(cudaMemcpyAsync(output.data_ptr(), inputs[root].data_ptr(), bytes,
                                         cudaMemcpyDeviceToDevice, stream),
                         where);
    }
  });
}

void NcclCommunicator::run_barrier(const BarrierOptions& options) {
  const std::string where = describe("barrier");
  DeviceScope scope(device_);
  DTENSOR_NCCL_CHECK(
      ncclAllReduce(barrier_buffer_, barrier_buffer_, 1, ncclFloat32, ncclSum, comm_, stream_),
      where);
  // Block the host until every member's all_reduce is done, polling so that
  // a lost peer ends in an error instead of a hang.
  const auto timeout = options.timeout.count() > 0 ? options.timeout : default_timeout_;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const cudaError_t state = cudaStreamQuery(stream_);
    if (state == cudaSuccess) return;
    if (state != cudaErrorNotReady) DTENSOR_NCCL_CHECK(state, where);
    ncclResult_t async_error = ncclSuccess;
    DTENSOR_NCCL_CHECK(ncclCommGetAsyncError(comm_, &async_error), where);
    if (async_error != ncclSuccess) failed_ = true;
    DTENSOR_NCCL_CHECK(async_error, where);
    if (std::chrono::steady_clock::now() > deadline) {
      failed_ = true;
      TORCH_CHECK(false, where, ": timed out after ", timeout.count(),
                  " ms: a member has not reached the barrier (stuck, exited, or issuing a "
                  "different collective); raise the timeout if it is just slow");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

}  // namespace dtensor
