// Communicator: one process group (the ranks along one mesh dimension).
// Public collectives are non-virtual: they validate arguments, report one
// CollectiveEvent to the rank's observers, then call the backend's run_*.
//   auto comm = world.new_group({0, 1, 2, 3});
//   comm->all_reduce(t);                                   // sum, in place
//   comm->all_gather_into_tensor(out, in);                 // concat on dim 0
//   auto work = comm->all_reduce(t, {ReduceOp::kMax, /*timeout=*/{}, /*async_op=*/true});
//   work->wait();
#pragma once

#include <ATen/core/Tensor.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backends/collective_event.h"
#include "layout/reduce_op.h"

namespace dtensor {

/// A timeout of zero means "the world's default timeout".
using Timeout = std::chrono::milliseconds;

struct AllReduceOptions {
  ReduceOp reduce_op = ReduceOp::kSum;
  Timeout timeout{0};
  bool async_op = false;
};

struct AllGatherOptions {
  Timeout timeout{0};
  bool async_op = false;
};

struct ReduceScatterOptions {
  ReduceOp reduce_op = ReduceOp::kSum;
  Timeout timeout{0};
  bool async_op = false;
};

/// Split sizes are along dim 0, one per group rank; empty means even splits.
struct AllToAllOptions {
  std::vector<int64_t> output_split_sizes;
  std::vector<int64_t> input_split_sizes;
  Timeout timeout{0};
  bool async_op = false;
};

/// `root` is a rank of the group (0 .. size()-1), not a global rank.
struct BroadcastOptions {
  int64_t root = 0;
  Timeout timeout{0};
  bool async_op = false;
};

struct ScatterOptions {
  int64_t root = 0;
  Timeout timeout{0};
  bool async_op = false;
};

struct BarrierOptions {
  Timeout timeout{0};
};

/// Completion handle of a collective. Synchronous collectives return one that
/// is already complete. wait() rethrows the collective's failure.
class Work {
 public:
  virtual ~Work() = default;
  virtual void wait() = 0;
  virtual bool is_completed() = 0;
};
using WorkPtr = std::shared_ptr<Work>;

/// A Work that is complete when created (or that carries an error).
WorkPtr completed_work(std::exception_ptr error = nullptr);

/// One process group. Created by World::new_group; every member rank must
/// issue the same collectives in the same order (SPMD).
/// The last argument of every collective, `mesh`, says which mesh dim issued
/// it (core/collectives passes DeviceMesh::collective_tag); it only reaches
/// the CollectiveEvent. Direct callers leave it null.
class Communicator {
 public:
  Communicator(std::vector<int64_t> group_ranks, int64_t global_rank,
               std::shared_ptr<ObserverList> observers);
  virtual ~Communicator() = default;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  /// This rank's index in the group, and the group's size.
  int64_t rank() const { return group_rank_; }
  int64_t size() const { return static_cast<int64_t>(group_ranks_.size()); }
  int64_t global_rank() const { return global_rank_; }
  /// Global ranks of the members, in group order.
  const std::vector<int64_t>& group_ranks() const { return group_ranks_; }
  /// Name of the backend, for messages: "fake", "solo", "gloo", "nccl".
  virtual const char* backend_name() const = 0;

  /// In place: every rank ends with reduce(op) of all ranks' `tensor`.
  /// kAvg needs a floating-point dtype.
  WorkPtr all_reduce(at::Tensor& tensor, const AllReduceOptions& options = {},
                 std::shared_ptr<const MeshDimTag> mesh = nullptr);
  /// output = cat([input of group rank 0, 1, ...], dim 0);
  /// output.size(0) == size() * input.size(0), other dims equal.
  WorkPtr all_gather_into_tensor(at::Tensor& output, const at::Tensor& input,
                                 const AllGatherOptions& options = {},
                 std::shared_ptr<const MeshDimTag> mesh = nullptr);
  /// output = chunk(reduce(op) of all inputs, size(), dim 0)[rank()];
  /// input.size(0) == size() * output.size(0).
  WorkPtr reduce_scatter_tensor(at::Tensor& output, const at::Tensor& input,
                                const ReduceScatterOptions& options = {},
                 std::shared_ptr<const MeshDimTag> mesh = nullptr);
  /// Rank r sends rows input_split[j] of `input` to rank j and receives
  /// output_split[j] rows from rank j, along dim 0, placed in rank order.
  WorkPtr all_to_all_single(at::Tensor& output, const at::Tensor& input,
                            const AllToAllOptions& options = {},
                 std::shared_ptr<const MeshDimTag> mesh = nullptr);
  /// In place: every rank ends with the root's `tensor`.
  WorkPtr broadcast(at::Tensor& tensor, const BroadcastOptions& options = {},
                 std::shared_ptr<const MeshDimTag> mesh = nullptr);
  /// The root passes size() tensors shaped like `output`; rank r receives
  /// inputs[r]. Non-root ranks pass an empty `inputs`.
  WorkPtr scatter(at::Tensor& output, const std::vector<at::Tensor>& inputs,
                  const ScatterOptions& options = {},
                 std::shared_ptr<const MeshDimTag> mesh = nullptr);
  /// Returns when every member has entered the barrier.
  void barrier(const BarrierOptions& options = {});

  /// Collectives issued so far through this communicator on this rank.
  uint64_t sequence_number() const { return next_seq_; }

 protected:
  // Backends implement these; arguments are already validated, the event is
  // already reported. All tensors are contiguous and on the same device.
  virtual WorkPtr run_all_reduce(at::Tensor& tensor, const AllReduceOptions& options) = 0;
  virtual WorkPtr run_all_gather_into_tensor(at::Tensor& output, const at::Tensor& input,
                                             const AllGatherOptions& options) = 0;
  virtual WorkPtr run_reduce_scatter_tensor(at::Tensor& output, const at::Tensor& input,
                                            const ReduceScatterOptions& options) = 0;
  virtual WorkPtr run_all_to_all_single(at::Tensor& output, const at::Tensor& input,
                                        const std::vector<int64_t>& output_split_sizes,
                                        const std::vector<int64_t>& input_split_sizes,
                                        const AllToAllOptions& options) = 0;
  virtual WorkPtr run_broadcast(at::Tensor& tensor, const BroadcastOptions& options) = 0;
  virtual WorkPtr run_scatter(at::Tensor& output, const std::vector<at::Tensor>& inputs,
                              const ScatterOptions& options) = 0;
  virtual void run_barrier(const BarrierOptions& options) = 0;


 public:
  /// "all_reduce on fake group [0, 1] (group rank 1 of 2, global rank 1)":
  /// the prefix of every error message about this communicator. Builds a
  /// string: call it only on error paths (See Note [Lazy collective description]).
  std::string describe(const char* op) const;

 private:
  /// True when the rank has at least one observer.
  bool observed() const;
  CollectiveEvent make_event(CollectiveKind kind, uint64_t seq,
                             c10::ArrayRef<const at::Tensor*> inputs,
                             c10::ArrayRef<const at::Tensor*> outputs, c10::ScalarType dtype,
                             bool async_op, std::shared_ptr<const MeshDimTag> mesh_tag) const;
  void report(const CollectiveEvent& event);

  std::vector<int64_t> group_ranks_;
  int64_t group_rank_ = 0;
  int64_t global_rank_ = 0;
  std::shared_ptr<ObserverList> observers_;
  uint64_t next_seq_ = 0;
};

/// Even split sizes of `rows` over `parts` ranks; throws when not divisible.
std::vector<int64_t> even_split_sizes(int64_t rows, int64_t parts, const char* what);

}  // namespace dtensor
