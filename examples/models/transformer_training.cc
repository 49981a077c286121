// TransformerTrainer and the single-device reference run.
#include "examples/models/transformer_training.h"

#include <ATen/Functions.h>
#include <c10/util/Exception.h>
#include <torch/nn/functional/loss.h>


#include "core/collectives.h"
#include "core/fsdp/fully_shard.h"
#include "core/nn/module_call.h"
#include "core/parallel/data_parallel.h"
#include "examples/models/seeded_init.h"

namespace dtensor::examples {

std::pair<at::Tensor, at::Tensor> training_batch(const TrainingConfig& config) {
  at::Generator gen = make_generator(config.data_seed);
  const int64_t vocab = config.model.vocab_size_;
  at::Tensor tokens = at::randint(vocab, {config.batch, config.seq_len}, gen);
  at::Tensor targets = at::randint(vocab, {config.batch, config.seq_len}, gen);
  return {tokens, targets};
}

at::Tensor transformer_loss(const at::Tensor& logits, const at::Tensor& targets) {
  return torch::nn::functional::cross_entropy(logits.reshape({-1, logits.size(-1)}), targets.reshape({-1}));
}

SingleDeviceTrainer::SingleDeviceTrainer(const TrainingConfig& config) {
  const c10::Device device = config.device.value_or(c10::Device(c10::kCPU));
  model_ = Transformer(ModelArgs(config.model).device(device));
  model_->to(config.dtype);
  optimizer_ = std::make_unique<torch::optim::Adam>(model_->parameters(), torch::optim::AdamOptions(config.lr));
  auto [tokens, targets] = training_batch(config);
  tokens_ = tokens.to(device);
  targets_ = targets.to(device);
}

double SingleDeviceTrainer::step() {
  optimizer_->zero_grad();
  at::Tensor loss = transformer_loss(model_->forward(tokens_), targets_);
  loss.backward();
  optimizer_->step();
  return loss.item<double>();
}

SingleDeviceRun run_single_device(const TrainingConfig& config, int steps) {
  SingleDeviceTrainer trainer(config);
  SingleDeviceRun run;
  for (int i = 0; i < steps; ++i) run.losses.push_back(trainer.step());
  run.model = trainer.model();
  return run;
}

std::vector<double> train_single_device(const TrainingConfig& config, int steps) {
  return run_single_device(config, steps).losses;
}

TransformerTrainer::TransformerTrainer(const TrainingConfig& config) : config_(config) {
  const size_t ndim = config.mesh_shape.size();
  World& world = require_current_world("TransformerTrainer");
  const c10::DeviceType device_type = config.device ? config.device->type() : world.device().type();
  int64_t dp_size = 1;
  int64_t dp_rank = 0;
  if (config.fully_shard && ndim == 1) {
    mesh_ = DeviceMesh::init(device_type, config.mesh_shape, {"dp"});
    dp_mesh_ = mesh_;
  } else {
    TORCH_CHECK(ndim == 1 || ndim == 2, "TransformerTrainer: mesh_shape must be {tp} or {dp, tp}");
    mesh_ = ndim == 2 ? DeviceMesh::init(device_type, config.mesh_shape, {"dp", "tp"})
                      : DeviceMesh::init(device_type, config.mesh_shape, {"tp"});
    tp_mesh_ = ndim == 2 ? mesh_["tp"] : mesh_;
    if (ndim == 2) dp_mesh_ = mesh_["dp"];
  }
  if (dp_mesh_.defined()) {
    dp_size = dp_mesh_.size();
    dp_rank = dp_mesh_.get_local_rank(0);
  }
  TORCH_CHECK(config.batch % dp_size == 0, "TransformerTrainer: batch ", config.batch,
              " does not split evenly over dp = ", dp_size);
  model_ = Transformer(ModelArgs(config.model).device(mesh_.device()));
  model_->to(config.dtype);
  // FSDP + TP: tensor parallelism first, then fully_shard over dp (its
  // parameters become (_StridedShard(0, tp) or Shard(0), tp placements)).
  if (tp_mesh_.defined()) parallelize_transformer(*model_, tp_mesh_, config.sequence_parallel);
  TORCH_CHECK(config.fully_shard || !config.cpu_offload, "TransformerTrainer: cpu_offload is an option of fully_shard");
  if (config.fully_shard) {
    FullyShardOptions options;
    if (config.cpu_offload) options.offload_policy = CPUOffloadPolicy{};
    for (const auto& block : *model_->layers) dtensor::fully_shard(*block, dp_mesh_, options);
    dtensor::fully_shard(*model_, dp_mesh_, options);
  }
  optimizer_ = std::make_unique<torch::optim::Adam>(model_->parameters(), torch::optim::AdamOptions(config.lr));
  auto [tokens, targets] = training_batch(config);
  tokens_ = tokens.chunk(dp_size, 0)[static_cast<size_t>(dp_rank)].to(mesh_.device());
  targets_ = targets.chunk(dp_size, 0)[static_cast<size_t>(dp_rank)].to(mesh_.device());
  counter_ = std::make_unique<testing::CollectiveCounter>(mesh_.world());
}

TransformerTrainer::~TransformerTrainer() = default;

at::Tensor TransformerTrainer::forward_backward() {
  optimizer_->zero_grad();
  counter_->take();
  // FSDP hooks the root's forward: call it through its boundary.
  at::Tensor logits = config_.fully_shard ? nn::call(model_, tokens_) : model_->forward(tokens_);
  counts_.forward = counter_->take();
  at::Tensor loss = transformer_loss(logits, targets_);
  loss.backward();
  counts_.backward = counter_->take();
  return loss;
}

double TransformerTrainer::finish_step(const at::Tensor& loss) {
  counter_->take();
  if (dp_mesh_.defined() && !config_.fully_shard) average_gradients(*model_, dp_mesh_);
  counts_.data_parallel = counter_->take();
  optimizer_->step();
  counts_.optimizer = counter_->take();
  at::Tensor global = loss.detach().to(at::kDouble).clone();
  if (dp_mesh_.defined()) {
    collectives::all_reduce_(global, dp_mesh_, 0, ReduceOp::kSum);
    global.div_(static_cast<double>(dp_mesh_.size()));
  }
  counter_->take();  // the loss report is not part of training
  return global.item<double>();
}

}  // namespace dtensor::examples
