// Training the example Transformer under tensor (+ sequence) parallelism and
// data parallelism on whatever world the calling rank is in (fake, Gloo,
// NCCL), and the single-device run it must match. Used by examples/quickstart
// and its tests.
//   examples::TransformerTrainer trainer(config);   // on each rank
//   double loss = trainer.step();                     // the global batch's loss
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <torch/optim/adam.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backends/world.h"
#include "core/device_mesh.h"
#include "examples/models/transformer.h"
#include "testing/collective_counter.h"

namespace dtensor::examples {

struct TrainingConfig {
  /// {tp} or {dp, tp}; with fully_shard, {dp} or {dp, tp}. The product is
  /// the world size.
  std::vector<int64_t> mesh_shape = {2, 2};
  /// Fully sharded data parallel (fully_shard on every block, then on the
  /// root, core/fsdp/fully_shard.h) over dp instead of gradient averaging: on
  /// {dp} alone, or on {dp, tp} after tensor parallelism on tp (FSDP + TP).
  bool fully_shard = false;
  /// With fully_shard: CPUOffloadPolicy (sharded parameters, gradients and
  /// the Adam step in pinned host memory); CUDA ranks only.
  bool cpu_offload = false;
  bool sequence_parallel = true;
  c10::ScalarType dtype = at::kFloat;
  int64_t batch = 8;    // global batch, split over dp
  int64_t seq_len = 8;  // a multiple of tp with sequence parallelism
  double lr = 0.01;
  uint64_t data_seed = 11;
  /// Dropout 0: see Note [Dropout in the examples].
  ModelArgs model = ModelArgs().dropout_p(0.0).seed(3);
  /// Where the model and the batch live. Unset: TransformerTrainer uses its
  /// world's device (the mesh's: cuda:i on CUDA fake ranks and NCCL),
  /// train_single_device the CPU. Set: the trainer checks it against the
  /// world's device type (DeviceMesh::init's error otherwise); model.device_
  /// is overridden either way. Example: `config.device = c10::Device("cuda:0")`
  /// for the one-GPU reference.
  std::optional<c10::Device> device;
};

// Note [Dropout in the examples]
// Parity with one device needs identical dropout masks. Dropout on plain
// (local) tensors draws from LibTorch's global generator, which the rank
// threads of a fake world share (so masks differ between runs and between
// replicas), and even on Gloo one process per rank draws masks of *local*
// shapes that no single-device run reproduces. So the training examples run
// with dropout_p = 0, as PyTorch's own TP tests do.

/// The batch every step trains on: tokens and targets [batch, seq_len] int64,
/// the same on every rank (a private generator seeded with data_seed).
std::pair<at::Tensor, at::Tensor> training_batch(const TrainingConfig& config);

/// Mean cross entropy of logits [b, s, vocab] against targets [b, s].
at::Tensor transformer_loss(const at::Tensor& logits, const at::Tensor& targets);

/// The unparallelized model on config.device (CPU when unset), its Adam
/// optimizer and the batch: the one-device side of every comparison.
///   SingleDeviceTrainer one(config); double loss = one.step();
class SingleDeviceTrainer {
 public:
  explicit SingleDeviceTrainer(const TrainingConfig& config);
  /// One Adam step; returns its loss.
  double step();
  Transformer& model() { return model_; }

 private:
  Transformer model_{nullptr};
  std::unique_ptr<torch::optim::Adam> optimizer_;
  at::Tensor tokens_, targets_;
};

/// `steps` Adam steps of the unparallelized model on config.device (CPU
/// when unset); the loss of each.
std::vector<double> train_single_device(const TrainingConfig& config, int steps);

/// The same run with the trained model kept (to compare parameters).
struct SingleDeviceRun {
  std::vector<double> losses;
  Transformer model{nullptr};
};
SingleDeviceRun run_single_device(const TrainingConfig& config, int steps);

/// Collective name -> count (the testing kit's CollectiveCounter counts).
using testing::Counts;

/// The collectives of one training step, by phase.
struct StepCounts {
  Counts forward, backward, data_parallel, optimizer;
};

/// "{all_gather_into_tensor: 1, all_reduce: 6}".
using testing::to_string;

/// One rank's share of the parallel run. Construct it on every rank (SPMD):
/// it lays the current world out as `mesh_shape` ("dp", "tp") on the world's
/// device (or config.device), builds the model there, parallelizes it on the
/// tp mesh (parallelize_transformer) and makes an Adam optimizer over its
/// (DTensor) parameters.
class TransformerTrainer {
 public:
  explicit TransformerTrainer(const TrainingConfig& config);
  ~TransformerTrainer();
  TransformerTrainer(const TransformerTrainer&) = delete;
  TransformerTrainer& operator=(const TransformerTrainer&) = delete;

  /// One Adam step on this dp rank's rows of training_batch; gradients are
  /// averaged over dp. Returns the loss of the whole global batch (the dp
  /// ranks' losses averaged: one extra all_reduce, not in last_counts()).
  /// The same as finish_step(forward_backward()).
  double step() { return finish_step(forward_backward()); }
  /// The first half of step(): zero_grad, forward, loss, backward. Returns
  /// this dp rank's loss. (Split so that a CommDebugMode can trace just the
  /// model, as PyTorch's examples do.)
  at::Tensor forward_backward();
  /// The second half: gradient averaging over dp, Adam step, global loss.
  double finish_step(const at::Tensor& loss);
  /// The collectives of the last step(), by phase.
  const StepCounts& last_counts() const { return counts_; }

  TransformerImpl& model() { return *model_; }
  /// The full mesh ({"dp", "tp"}, {"tp"}, or {"dp"} with FSDP alone) and
  /// its tp dim (empty with FSDP alone).
  const DeviceMesh& mesh() const { return mesh_; }
  const DeviceMesh& tp_mesh() const { return tp_mesh_; }

 private:
  TrainingConfig config_;
  DeviceMesh mesh_, tp_mesh_, dp_mesh_;
  Transformer model_{nullptr};
  std::unique_ptr<torch::optim::Adam> optimizer_;
  at::Tensor tokens_, targets_;  // this dp rank's rows
  std::unique_ptr<testing::CollectiveCounter> counter_;
  StepCounts counts_;
};

}  // namespace dtensor::examples
