// The fake world's Communicator: collectives between rank threads of one
// process, moving real data through a FakeRendezvous shared by the members.
//   auto comm = std::make_shared<FakeCommunicator>(ranks, rank, observers, rendezvous, timeout);
//   comm->all_reduce(t);  // returns when every member contributed
#pragma once

#include <ATen/core/Tensor.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "backends/communicator.h"
#include "backends/fake/rendezvous.h"

namespace dtensor {
namespace detail {

/// One rank's communicator over one fake group. Every collective completes
/// before it returns, also with async_op = true: the returned Work is already
/// complete, and its wait() rethrows the collective's error (with async_op =
/// false the error is thrown by the call itself). Results are bit-identical to
/// a serial reference; see Note [Fixed reduction order] and Note [Phases].
class FakeCommunicator final : public Communicator {
 public:
  /// Inputs of at most this many bytes are copied into a buffer before the
  /// rendezvous (one phase); larger ones are read in place (two phases).
  static constexpr int64_t kStageBytes = int64_t{64} << 10;

  FakeCommunicator(std::vector<int64_t> group_ranks, int64_t global_rank,
                   std::shared_ptr<ObserverList> observers,
                   std::shared_ptr<FakeRendezvous> rendezvous,
                   std::chrono::milliseconds default_timeout);

  const char* backend_name() const override { return "fake"; }

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
  Fingerprint fingerprint(CollectiveKind kind, const at::Tensor& t,
                          std::vector<int64_t> shape) const;
  std::chrono::milliseconds timeout_of(Timeout timeout) const;
  /// This rank's buffer for collectives of sequence parity seq % 2, at least
  /// `bytes` long. See Note [Phases] for why two suffice.
  const at::Tensor& buffer(uint64_t seq, int64_t bytes, c10::Device device);
  /// Posts `input` itself, or a staged copy of it when `stage`.
  void post_input(RendezvousRound& round, const at::Tensor& input, bool stage);

  void all_reduce_staged(RendezvousRound& round, at::Tensor& tensor, ReduceOp op);
  void all_reduce_chunked(RendezvousRound& round, at::Tensor& tensor, ReduceOp op);
  void all_reduce_two_phase(RendezvousRound& round, at::Tensor& tensor, ReduceOp op);
  void check_split_agreement(RendezvousRound& round) const;

  std::shared_ptr<FakeRendezvous> rendezvous_;
  std::chrono::milliseconds default_timeout_;
  at::Tensor buffers_[2];
};

}  // namespace detail
}  // namespace dtensor
