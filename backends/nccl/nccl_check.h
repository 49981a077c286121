// Converts NCCL and CUDA runtime error codes into c10::Error at the backends
// boundary; nothing NCCL- or CUDA-typed is thrown past backends/nccl.
//   DTENSOR_NCCL_CHECK(ncclAllReduce(buf, buf, n, ncclFloat32, ncclSum, comm, stream),
//                      describe("all_reduce"));
//   DTENSOR_NCCL_CHECK(cudaStreamWaitEvent(stream, event, 0), "nccl_world");
#pragma once

#include <c10/util/Exception.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <string>

namespace dtensor::detail {

inline bool nccl_ok(ncclResult_t result) { return result == ncclSuccess; }
inline bool nccl_ok(cudaError_t error) { return error == cudaSuccess; }

// What to do about a failure, by NCCL's category.
inline const char* nccl_hint(ncclResult_t result) {
  switch (result) {
    case ncclSystemError:
    case ncclRemoteError:
      return "a peer rank may have exited, or the network failed; check the other ranks' output "
             "and run with NCCL_DEBUG=INFO";
    case ncclInvalidArgument:
    case ncclInvalidUsage:
      return "every member must issue the same collective with the same counts and dtype, on "
             "its own GPU; run with NCCL_DEBUG=WARN for NCCL's reason";
    case ncclUnhandledCudaError:
      return "a CUDA call inside NCCL failed; run with NCCL_DEBUG=INFO";
    default:
      return "run with NCCL_DEBUG=INFO for details";
  }
}

[[noreturn]] inline void throw_nccl_error(ncclResult_t result, const char* call,
                                          const std::string& where) {
  std::string last;
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 13, 0)
  const char* text = ncclGetLastError(nullptr);
  if (text != nullptr && *text != '\0') last = std::string(" (") + text + ")";
#endif
  C10_THROW_ERROR(Error, c10::str(where, ": ", call, " failed: ", ncclGetErrorString(result), last,
                                  "; ", nccl_hint(result)));
}

[[noreturn]] inline void throw_nccl_error(cudaError_t error, const char* call,
                                          const std::string& where) {
  C10_THROW_ERROR(Error, c10::str(where, ": ", call, " failed: ", cudaGetErrorName(error), ": ",
                                  cudaGetErrorString(error),
                                  "; check the GPU with nvidia-smi and run with "
                                  "CUDA_LAUNCH_BLOCKING=1 to find the failing kernel"));
}

}  // namespace dtensor::detail

/// Evaluates `call` (returning ncclResult_t or cudaError_t) and, unless it
/// succeeded, throws c10::Error "<where>: <call> failed: <NCCL/CUDA error
/// string>; <what to do>". `where` (a string naming collective, group and
/// rank) is only evaluated on failure.
#define DTENSOR_NCCL_CHECK(call, where)                                       \
  do {                                                                        \
    const auto dtensor_nccl_status = (call);                                  \
    if (!::dtensor::detail::nccl_ok(dtensor_nccl_status)) {                   \
      ::dtensor::detail::throw_nccl_error(dtensor_nccl_status, #call, where); \
    }                                                                         \
  } while (0)
