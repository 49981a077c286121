// The Communicator of one NCCL group: NCCL called directly on a dedicated
// stream ordered against the caller's current CUDA stream (see Note [NCCL
// stream ordering] in nccl_communicator.cc). Created by nccl_world():
//   world->new_group({0, 1})->all_gather_into_tensor(out, in);
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <chrono>
#include <functional>
#include <memory>
#include <vector>

#include "backends/communicator.h"

namespace dtensor {

/// The stream collectives are ordered against on `device`: LibTorch's current
/// CUDA stream when built with a CUDA LibTorch (DTENSOR_TORCH_HAS_CUDA), else
/// the legacy default stream (cudaStreamLegacy), which every other stream of
/// the process synchronizes with.
cudaStream_t nccl_current_stream(int device);

/// A Communicator owning one initialized ncclComm whose rank i is
/// group_ranks[i]. Tensors must be CUDA tensors on `device`.
class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(std::vector<int64_t> group_ranks, int64_t global_rank,
                   std::shared_ptr<ObserverList> observers, ncclComm_t comm, int device,
                   std::chrono::milliseconds default_timeout);
  ~NcclCommunicator() override;

  const char* backend_name() const override { return "nccl"; }

 protected:
  WorkPtr run_all_reduce(at::Tensor& tensor, const AllReduceOptions& options) override;
  WorkPtr run_all_gather_into_tensor(at::Tensor& output, const at::Tensor& input,
                                     const AllGatherOptions& options) override;
  WorkPtr run_reduce_scatter_tensor(at::Tensor& output, const at::Tensor& input,
                                    const ReduceScatterOptions& options) override;
  WorkPtr run_all_to_all_single(at::Tensor& output, const at::Tensor& input,
                                const std::vector<int64_t>& output_split_sizes,
                                const std::vector<int64_t>& input_split_sizes,
                                const AllToAllOptions& options) override;
  WorkPtr run_broadcast(at::Tensor& tensor, const BroadcastOptions& options) override;
  WorkPtr run_scatter(at::Tensor& output, const std::vector<at::Tensor>& inputs,
                      const ScatterOptions& options) override;
  void run_barrier(const BarrierOptions& options) override;

 private:
  // Orders `issue` (which enqueues NCCL calls on the given stream) after the
  // current stream's work, and the current stream after it unless async.
  WorkPtr enqueue(const char* op, std::vector<at::Tensor> tensors, bool async_op,
                  const std::function<void(cudaStream_t)>& issue);
  void check_tensor(const char* op, const at::Tensor& tensor) const;

  ncclComm_t comm_;
  int device_;
  std::chrono::milliseconds default_timeout_;
  cudaStream_t stream_ = nullptr;
  void* barrier_buffer_ = nullptr;  // one float on the device, for barrier()
  bool failed_ = false;             // an error was seen: abort instead of destroy
};

}  // namespace dtensor
