// The example Transformer's planner step. See transformer_step.h.
#include "examples/plan/transformer_step.h"

#include <ATen/Functions.h>

#include <stdexcept>

#include "core/fsdp/fully_shard.h"
#include "core/nn/module_call.h"
#include "planner/training_update.h"
#include "examples/models/transformer.h"
#include "examples/models/transformer_training.h"

namespace dtensor::examples {

planner::StepProgram transformer_step_program() {
  return [](World& /*world*/, c10::DeviceType device, const planner::ModelConfig& m, const planner::PlanConfig& plan,
            planner::StepRecorder& recorder) {
    if (plan.stage != planner::PipelineStage::kWhole) {
      throw std::invalid_argument("the example Transformer's step has no pipeline stages: plan it without pp");
    }
    const int64_t rep = plan.mesh.size_of("rep"), dp = plan.mesh.size_of("dp"), tp = plan.mesh.size_of("tp");
    DeviceMesh mesh = rep > 1 ? DeviceMesh::init(device, {rep, dp, tp}, {"rep", "dp", "tp"})
                              : DeviceMesh::init(device, {dp, tp}, {"dp", "tp"});
    // HSDP: fully_shard over (rep, dp), the shards replicated over rep.
    const DeviceMesh fsdp_mesh = rep > 1 ? mesh[{"rep", "dp"}] : mesh["dp"];
    const c10::ScalarType dtype = m.dtype == "float64" ? at::kDouble : at::kFloat;
    TrainingConfig config;
    config.model = ModelArgs()
                       .n_layers(m.layers)
                       .vocab_size(m.vocab)
                       .max_seq_len(m.seq)
                       .dim(m.dim)
                       .n_heads(m.heads)
                       .dropout_p(0.0)
                       .checkpoint_every(plan.checkpoint_every)
                       .checkpoint_ops(plan.checkpoint_ops)
                       .seed(3)
                       .device(mesh.device());
    config.batch = plan.micro_batch;
    config.seq_len = m.seq;
    Transformer model(config.model);
    model->to(dtype);
    parallelize_transformer(*model, mesh["tp"], plan.sequence_parallel && tp > 1);
    if (plan.fsdp) {  // FSDP (+ TP): every block, then the root, as TransformerTrainer
      for (const auto& block : *model->layers) fully_shard(*block, fsdp_mesh);
      fully_shard(*model, fsdp_mesh);
    }
    planner::TrainingUpdate update(*model, mesh["dp"], plan);
    update.warm_up();
    recorder.record_static(*model, update.optimizer());
    const auto [cpu_tokens, cpu_targets] = training_batch(config);
    const at::Tensor tokens = cpu_tokens.to(mesh.device()), targets = cpu_targets.to(mesh.device());
    {
      auto guard = recorder.trace_forward_backward(*model, "Transformer");
      // fully_shard's root sees the model's boundary.
      transformer_loss(plan.fsdp ? nn::call(model, tokens) : model->forward(tokens), targets).backward();
    }
    {
      auto guard = recorder.trace_update();
      update.step();
    }
  };
}

}  // namespace dtensor::examples
