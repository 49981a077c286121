// The Communicator of one Gloo group: each collective maps onto c10d's
// ProcessGroupGloo, or is composed from its collectives where Gloo 1.13 has
// none (see Note [Composed Gloo collectives] in gloo_communicator.cc).
// Created by gloo_world(); user code goes through Communicator:
//   world->new_group({0, 1})->reduce_scatter_tensor(out, in);
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <vector>

#include "backends/communicator.h"

namespace dtensor {

/// A Communicator over an already connected ProcessGroupGloo whose rank i is
/// group_ranks[i]. Tensors must be on the CPU.
class GlooCommunicator final : public Communicator {
 public:
  GlooCommunicator(std::vector<int64_t> group_ranks, int64_t global_rank,
                   std::shared_ptr<ObserverList> observers,
                   c10::intrusive_ptr<c10d::ProcessGroupGloo> process_group,
                   std::chrono::milliseconds default_timeout);

  const char* backend_name() const override { return "gloo"; }

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
  // Wraps a started c10d work: waits now unless async_op, runs `finish`
  // (the local part of a composed collective) once the exchange completed.
  WorkPtr complete(const char* op, c10::intrusive_ptr<c10d::Work> work,
                   std::function<void()> finish, std::chrono::milliseconds timeout, bool async_op);
  void check_cpu(const char* op, const at::Tensor& tensor) const;

  c10::intrusive_ptr<c10d::ProcessGroupGloo> process_group_;
  std::chrono::milliseconds default_timeout_;
};

namespace detail {

/// Call inside a `catch`: rethrows the current exception as a c10::Error
/// "<where> failed: <gloo's message>; <what to do>". See DTENSOR_GLOO_CALL.
[[noreturn]] void rethrow_gloo_error(const std::string& where);

}  // namespace detail
}  // namespace dtensor

/// Evaluates `expr` (a c10d/Gloo call) and converts any exception it throws at
/// the boundary: DTENSOR_GLOO_CALL(describe("all_reduce"), pg->allreduce(v)).
/// `where` names the collective, the group and the rank.
#define DTENSOR_GLOO_CALL(where, ...)               \
  [&]() -> decltype(auto) {                         \
    try {                                           \
      return __VA_ARGS__;                           \
    } catch (...) {                                 \
      ::dtensor::detail::rethrow_gloo_error(where); \
    }                                               \
  }()
