// The example Transformer trained with fully_shard (examples/models/
// transformer_training.h, TrainingConfig::fully_shard): losses and
// parameters after 3 Adam steps equal one device's (float64, 1e-10); the
// collectives of a step (one group per block plus the root's); and per-rank
// memory: FSDP's peak is below DDP's by at least (1 - 1/dp) x (parameters +
// gradients + Adam state) minus the unsharded bytes of the two largest groups,
// and activation checkpointing (full and every 2nd block) inside the blocks.
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "backends/fake/fake_world.h"
#include "core/dtensor.h"
#include "core/dtensor_impl.h"
#include "core/fsdp/fully_shard.h"
#include "examples/models/transformer_training.h"
#include "testing/collective_counter.h"

namespace dtensor {
namespace {

examples::TrainingConfig fsdp_config(int64_t dp) {
  examples::TrainingConfig config;
  config.fully_shard = true;
  config.mesh_shape = {dp};
  config.dtype = at::kDouble;
  return config;
}

TEST(TransformerFsdpTest, ThreeAdamStepsEqualOneDevice) {
  const examples::TrainingConfig config = fsdp_config(4);
  const examples::SingleDeviceRun reference = examples::run_single_device(config, 3);
  run_fake_world(4, [&](World&) {
    examples::TransformerTrainer trainer(config);
    for (int step = 0; step < 3; ++step) {
      EXPECT_NEAR(trainer.step(), reference.losses[step], 1e-10) << "step " << step;
      const examples::StepCounts& counts = trainer.last_counts();
      const int64_t layers = config.model.n_layers_;
      // One all_gather per block and one for the root's own parameters
      // (embeddings, norm, output) in forward; backward gathers the blocks
      // again (the root keeps its own) and reduce-scatters every group.
      EXPECT_EQ(counts.forward, (examples::Counts{{"all_gather_into_tensor", layers + 1}}));
      EXPECT_EQ(counts.backward, (examples::Counts{{"all_gather_into_tensor", layers},
                                                   {"reduce_scatter_tensor", layers + 1}}));
      EXPECT_TRUE(counts.data_parallel.empty());
      EXPECT_TRUE(counts.optimizer.empty());
    }
    auto ref = reference.model->named_parameters();
    for (const auto& item : trainer.model().named_parameters()) {
      ASSERT_TRUE(is_dtensor(item.value())) << item.key();
      const at::Tensor full = DTensor(item.value()).full_tensor();
      EXPECT_TRUE(at::allclose(full, ref[item.key()], 1e-10, 1e-10))
          << item.key() << " differs by " << (full - ref[item.key()]).abs().max().item<double>();
    }
  });
}

// FSDP + TP (+ SP) on a (dp=2, tp=2) mesh: tensor parallelism on tp, then
// fully_shard over dp. Column-wise weights become (_StridedShard(0, 2),
// Shard(0)); Adam steps them with no collective; 3 steps equal one device.
TEST(TransformerFsdpTest, FsdpOverTensorParallelEqualsOneDevice) {
  for (const bool sequence_parallel : {false, true}) {
    SCOPED_TRACE(sequence_parallel ? "FSDP + TP + SP" : "FSDP + TP");
    examples::TrainingConfig config = fsdp_config(2);
    config.mesh_shape = {2, 2};
    config.sequence_parallel = sequence_parallel;
    const examples::SingleDeviceRun reference = examples::run_single_device(config, 3);
    run_fake_world(4, [&](World&) {
      examples::TransformerTrainer trainer(config);
      for (int step = 0; step < 3; ++step) {
        EXPECT_NEAR(trainer.step(), reference.losses[step], 1e-10) << "step " << step;
        const examples::StepCounts& counts = trainer.last_counts();
        // FSDP's one all_gather and one reduce_scatter per group, and TP's
        // (SP's backward reduce-scatters too).
        EXPECT_GE(counts.forward.at("all_gather_into_tensor"), config.model.n_layers_ + 1);
        EXPECT_GE(counts.backward.at("reduce_scatter_tensor"), config.model.n_layers_ + 1);
        EXPECT_TRUE(counts.data_parallel.empty());
        EXPECT_TRUE(counts.optimizer.empty()) << testing::to_string(counts.optimizer);
      }
      auto ref = reference.model->named_parameters();
      int strided = 0;
      for (const auto& item : trainer.model().named_parameters()) {
        ASSERT_TRUE(is_dtensor(item.value())) << item.key();
        const DTensor param(item.value());
        // Without SP the norms stay plain under TP, so FSDP shards them on dp alone.
        if (sequence_parallel || param.device_mesh() != trainer.mesh()["dp"]) {
          EXPECT_EQ(param.device_mesh(), trainer.mesh()) << item.key();
        }
        if (param.placements() == Placements{StridedShard(0, 2), Shard(0)}) ++strided;
        const at::Tensor full = param.full_tensor();
        EXPECT_TRUE(at::allclose(full, ref[item.key()], 1e-10, 1e-10))
            << item.key() << " " << to_string(param.placements()) << " differs by "
            << (full - ref[item.key()]).abs().max().item<double>();
      }
      EXPECT_GE(strided, 3 * config.model.n_layers_);  // wq, wk, wv and w1, w3 of every block
    });
  }
}

// Full, selective layer (every 2nd block) and selective op (torchtitan's
// policy: every other matmul kept) activation checkpointing inside the
// fully_shard blocks: the same values and the same collectives (the
// recomputation reuses the parameters FSDP gathered for backward).
TEST(TransformerFsdpTest, ActivationCheckpointingKeepsValuesAndCollectives) {
  for (int64_t every : {1, 2, 0}) {
    const bool selective_ops = every == 0;
    examples::TrainingConfig config = fsdp_config(4);
    config.model = config.model.n_layers(4).checkpoint_every(every).checkpoint_ops(selective_ops);
    examples::TrainingConfig plain = config;
    plain.model = plain.model.checkpoint_every(0).checkpoint_ops(false);
    const examples::SingleDeviceRun reference = examples::run_single_device(plain, 2);
    run_fake_world(4, [&](World&) {
      examples::TransformerTrainer trainer(config);
      int64_t checkpointed = 0;
      for (const auto& block : *trainer.model().layers) {
        checkpointed += block->as<examples::TransformerBlockImpl>()->checkpointed() ? 1 : 0;
      }
      EXPECT_EQ(checkpointed, selective_ops ? 4 : 4 / every);
      for (int step = 0; step < 2; ++step) {
        EXPECT_NEAR(trainer.step(), reference.losses[step], 1e-10) << "every " << every << ", step " << step;
        EXPECT_EQ(trainer.last_counts().forward, (examples::Counts{{"all_gather_into_tensor", 5}}));
        EXPECT_EQ(trainer.last_counts().backward,
                  (examples::Counts{{"all_gather_into_tensor", 4}, {"reduce_scatter_tensor", 5}}));
      }
      auto ref = reference.model->named_parameters();
      for (const auto& item : trainer.model().named_parameters()) {
        EXPECT_TRUE(at::allclose(DTensor(item.value()).full_tensor(), ref[item.key()], 1e-10, 1e-10)) << item.key();
      }
    });
  }
}

// Per-rank peak of 2 training steps, the second measured.
int64_t peak_bytes(const examples::TrainingConfig& config, int64_t world_size) {
  std::vector<int64_t> peaks(static_cast<size_t>(world_size));
  run_fake_world(world_size, [&](World& world) {
    examples::TransformerTrainer trainer(config);
    trainer.step();  // Adam state exists from here on
    world.reset_peak_memory();
    trainer.step();
    peaks[static_cast<size_t>(world.rank())] = world.memory_stats()->peak_bytes;
  });
  return *std::max_element(peaks.begin(), peaks.end());
}

TEST(TransformerFsdpTest, PeakMemoryFallsAsFsdpPromises) {
  const int64_t dp = 4;
  examples::TrainingConfig fsdp = fsdp_config(dp);
  fsdp.model = fsdp.model.n_layers(4).dim(64).vocab_size(64).max_seq_len(16);
  // DDP: the same model replicated (tp = 1), gradients averaged over dp.
  examples::TrainingConfig ddp = fsdp;
  ddp.fully_shard = false;
  ddp.mesh_shape = {dp, 1};
  ddp.sequence_parallel = false;
  // Parameter bytes per group: each block, and the root's own.
  int64_t params = 0;
  std::vector<int64_t> groups;
  run_fake_world(1, [&](World&) {
    examples::Transformer model(fsdp.model);
    model->to(at::kDouble);
    for (const auto& block : *model->layers) {
      int64_t bytes = 0;
      for (const auto& p : block->parameters()) bytes += p.numel() * p.element_size();
      groups.push_back(bytes);
    }
    for (const auto& p : model->parameters()) params += p.numel() * p.element_size();
    int64_t blocks = 0;
    for (int64_t g : groups) blocks += g;
    groups.push_back(params - blocks);
  });
  std::sort(groups.rbegin(), groups.rend());
  const int64_t state = 4 * params;  // parameters, gradients, Adam's two moments
  const int64_t promised =
      static_cast<int64_t>((1.0 - 1.0 / static_cast<double>(dp)) * static_cast<double>(state)) - groups[0] - groups[1];
  const int64_t ddp_peak = peak_bytes(ddp, dp);
  const int64_t fsdp_peak = peak_bytes(fsdp, dp);
  RecordProperty("ddp_peak_bytes", std::to_string(ddp_peak));
  RecordProperty("fsdp_peak_bytes", std::to_string(fsdp_peak));
  EXPECT_GE(ddp_peak - fsdp_peak, promised)
      << "DDP peak " << ddp_peak << " B, FSDP peak " << fsdp_peak << " B, state " << state
      << " B, two largest groups " << groups[0] << " + " << groups[1] << " B";
  // Full activation checkpointing on top keeps only the blocks' inputs.
  examples::TrainingConfig fsdp_ac = fsdp;
  fsdp_ac.model = fsdp_ac.model.checkpoint_every(1);
  const int64_t fsdp_ac_peak = peak_bytes(fsdp_ac, dp);
  EXPECT_LT(fsdp_ac_peak, fsdp_peak);
  std::cout << "per-rank peak on " << dp << " ranks: DDP " << ddp_peak << " B, FSDP " << fsdp_peak
            << " B (saved " << ddp_peak - fsdp_peak << " B; promised >= " << promised << " B of state "
            << state << " B), FSDP + full activation checkpointing " << fsdp_ac_peak << " B\n";
}

}  // namespace
}  // namespace dtensor
