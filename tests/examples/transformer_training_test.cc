// Device plumbing of the training example (examples/models/transformer_training.h):
// the trainer builds its model and batch on the world's device, a config
// device of another type is a clear error, and the single-device run keeps
// its model. (The same on CUDA: tests/backends/cuda/cuda_transformer_check.)
#include <gtest/gtest.h>
#include <torch/utils.h>

#include <iostream>
#include <string>
#include <vector>

#include "backends/fake/fake_world.h"
#include "examples/models/transformer_training.h"

namespace dtensor {
namespace {

examples::TrainingConfig small_config() {
  examples::TrainingConfig config;
  config.mesh_shape = {2, 2};
  config.dtype = at::kDouble;
  return config;
}

TEST(TransformerTrainerTest, ModelLivesOnTheWorldsDevice) {
  run_fake_world(4, [](World& world) {
    examples::TransformerTrainer trainer(small_config());
    EXPECT_EQ(trainer.mesh().device(), world.device());
    for (const auto& item : trainer.model().named_parameters()) {
      EXPECT_EQ(item.value().device(), world.device()) << item.key();
      EXPECT_EQ(item.value().scalar_type(), at::kDouble) << item.key();
    }
    EXPECT_GT(trainer.step(), 0.0);
  });
}

TEST(TransformerTrainerTest, ConfigDeviceOfAnotherTypeIsAClearError) {
  examples::TrainingConfig config = small_config();
  config.device = c10::Device(c10::kCUDA, 0);
  try {
    run_fake_world(4, [&](World&) { examples::TransformerTrainer trainer(config); });
    FAIL() << "no error";
  } catch (const c10::Error& e) {
    const std::string what = e.what_without_backtrace();
    EXPECT_NE(what.find("does not match the world's device"), std::string::npos) << what;
  }
}

TEST(TransformerTrainerTest, TrainerOutsideAWorldIsAClearError) {
  try {
    examples::TransformerTrainer trainer(small_config());
    FAIL() << "no error";
  } catch (const c10::Error& e) {
    const std::string what = e.what_without_backtrace();
    EXPECT_NE(what.find("TransformerTrainer"), std::string::npos) << what;
  }
}

// Activation checkpointing under tensor + sequence parallelism: the same
// losses; the recomputed forward's collectives are issued again in backward.
TEST(TransformerTrainerTest, ActivationCheckpointingUnderTensorParallelism) {
  examples::TrainingConfig config = small_config();
  const std::vector<double> reference = examples::train_single_device(config, 2);
  examples::StepCounts plain_counts, checkpointed_counts;
  for (int64_t every : {0, 1}) {
    config.model = config.model.checkpoint_every(every);
    run_fake_world(4, [&](World& world) {
      examples::TransformerTrainer trainer(config);
      for (int step = 0; step < 2; ++step) EXPECT_NEAR(trainer.step(), reference[step], 1e-10) << step;
      if (world.rank() == 0) (every == 0 ? plain_counts : checkpointed_counts) = trainer.last_counts();
    });
  }
  // The blocks' share of the forward collectives runs again in backward
  // (not the embeddings' or the output's, which are not checkpointed).
  EXPECT_EQ(checkpointed_counts.forward, plain_counts.forward);
  for (const auto& [kind, n] : plain_counts.forward) {
    const auto plain_backward = plain_counts.backward.count(kind) ? plain_counts.backward.at(kind) : 0;
    EXPECT_GT(checkpointed_counts.backward.at(kind), plain_backward) << kind;
    EXPECT_LE(checkpointed_counts.backward.at(kind), plain_backward + n) << kind;
  }
  std::cout << "tp 2x2 + sp, backward without AC " << examples::to_string(plain_counts.backward)
            << ", with full AC " << examples::to_string(checkpointed_counts.backward) << "\n";
}

// Selective op checkpointing (torchtitan's policy) on one device: the losses
// of checkpointing nothing.
TEST(TransformerTrainerTest, SelectiveOpCheckpointingOnOneDevice) {
  examples::TrainingConfig config = small_config();
  const std::vector<double> reference = examples::train_single_device(config, 3);
  config.model = config.model.checkpoint_ops(true);
  const std::vector<double> selective = examples::train_single_device(config, 3);
  ASSERT_EQ(selective.size(), reference.size());
  for (size_t i = 0; i < reference.size(); ++i) EXPECT_NEAR(selective[i], reference[i], 1e-10) << i;
}

TEST(TransformerTrainerTest, SingleDeviceRunKeepsItsModel) {
  const examples::TrainingConfig config = small_config();
  const examples::SingleDeviceRun run = examples::run_single_device(config, /*steps=*/2);
  EXPECT_EQ(run.losses, examples::train_single_device(config, /*steps=*/2));
  ASSERT_EQ(run.losses.size(), 2u);
  EXPECT_LT(run.losses[1], run.losses[0]);
  for (const auto& item : run.model->named_parameters()) {
    EXPECT_TRUE(item.value().is_cpu()) << item.key();  // config.device unset: the CPU
  }
  // A fresh model: the trained one moved away from seeded_init's values.
  examples::Transformer fresh(config.model);
  fresh->to(config.dtype);
  EXPECT_FALSE(at::equal(fresh->output->weight, run.model->output->weight));
}

}  // namespace
}  // namespace dtensor
