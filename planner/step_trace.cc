// StepRecorder and the solo / fake-world runners. See step_trace.h.
#include "planner/step_trace.h"

#include <ATen/Functions.h>

#include <c10/util/Exception.h>
#include <torch/optim/adam.h>
#include <torch/optim/sgd.h>

#include <mutex>
#include <set>
#include <stdexcept>

#include "backends/fake/fake_world.h"
#include "backends/solo/solo_world.h"
#include "backends/world.h"
#include "core/dtensor.h"

namespace dtensor::planner {

// Note [Planner step]
// The traced step is a steady-state step: the warm-up (TrainingUpdate::warm_up)
// gives every parameter a gradient and the optimizer its state, and
// zero_grad(set_to_none=false) keeps gradients allocated, as they are during
// gradient accumulation and under DDP's static buckets. So the peak of the
// traced micro-step + update holds parameters, gradients and optimizer state
// for the whole step plus the activations of one micro-batch. Collectives,
// ops and memory of that one micro-step are what the estimate scales by the
// number of micro-steps (planner/estimate.h).
// No untraced micro-step is needed before it: sharding propagation's shape
// runs on meta tensors are invisible to CommDebugMode (Note [Shape runs are
// unobserved] in core/dispatch/sharding_propagator.cc) and charged to no
// rank's memory, so a cold and a warm propagation cache give the same local
// ops (FLOPs), collectives and peak memory.

namespace {

// Bytes of the storages behind `tensors` (DTensors: their local shards),
// each storage once (tied parameters, views).
int64_t storage_bytes(const std::vector<at::Tensor>& tensors) {
  std::set<const void*> seen;
  int64_t total = 0;
  for (const at::Tensor& t : tensors) {
    if (!t.defined()) continue;
    const at::Tensor& local = is_dtensor(t) ? DTensor(t).local_tensor() : t;
    const void* key = local.storage().unsafeGetStorageImpl();
    if (!seen.insert(key).second) continue;
    total += static_cast<int64_t>(local.storage().nbytes());
  }
  return total;
}

std::vector<at::Tensor> optimizer_state_tensors(torch::optim::Optimizer& optimizer) {
  std::vector<at::Tensor> out;
  for (const auto& entry : optimizer.state()) {
    const torch::optim::OptimizerParamState* s = entry.second.get();
    if (auto* adam = dynamic_cast<const torch::optim::AdamParamState*>(s)) {
      out.push_back(adam->exp_avg());
      out.push_back(adam->exp_avg_sq());
      out.push_back(adam->max_exp_avg_sq());
    } else if (auto* sgd = dynamic_cast<const torch::optim::SGDParamState*>(s)) {
      out.push_back(sgd->momentum_buffer());
    } else {
      TORCH_CHECK(false, "planner: optimizer state of an unknown optimizer (known: Adam, SGD)");
    }
  }
  return out;
}

debug::CommDebugModeOptions with_local_ops() {
  debug::CommDebugModeOptions o;
  o.record_local_ops = true;  // local matmuls give the FLOPs (planner/estimate.h)
  return o;
}

}  // namespace

StepRecorder::StepRecorder(World& world)
    : world_(world), forward_backward_(with_local_ops()), update_(with_local_ops()) {
  measure_.rank = world.rank();
  if (world.memory_account()) world.memory_account()->start_allocation_log();
}

StepRecorder::~StepRecorder() {
  if (world_.memory_account()) world_.memory_account()->take_allocation_log();  // stops logging
}

void StepRecorder::record_static(torch::nn::Module& model, torch::optim::Optimizer& optimizer) {
  std::vector<at::Tensor> params = model.parameters(), grads;
  for (const at::Tensor& p : params) grads.push_back(p.grad());
  measure_.parameter_bytes = storage_bytes(params);
  measure_.gradient_bytes = storage_bytes(grads);
  measure_.optimizer_bytes = storage_bytes(optimizer_state_tensors(optimizer));
}

debug::CommDebugMode::Guard StepRecorder::trace_forward_backward(torch::nn::Module& root, std::string root_name) {
  if (auto stats = world_.memory_stats()) forward_start_bytes_ = stats->current_bytes;
  return forward_backward_.enter(root, std::move(root_name));
}

void StepRecorder::forward_done() {
  auto stats = world_.memory_stats();
  if (stats && forward_start_bytes_) measure_.kept_bytes = stats->current_bytes - *forward_start_bytes_;
}

debug::CommDebugMode::Guard StepRecorder::trace_update() { return update_.enter(); }

StepMeasure StepRecorder::finish() {
  measure_.forward_backward = forward_backward_.trace();
  measure_.update = update_.trace();
  // CUDA ranks' allocations are not logged (their caching allocator is real).
  if (world_.memory_account() && !world_.device().is_cuda()) {
    measure_.allocations = world_.memory_account()->take_allocation_log();
  }
  // Each session's peak (CommDebugMode resets it at enter, See Note [Memory
  // location]); the step's is the larger.
  for (const trace::CommTrace* t : {&measure_.forward_backward, &measure_.update}) {
    auto it = t->memory.find(measure_.rank);
    if (it == t->memory.end()) continue;
    if (!measure_.peak_bytes || it->second.peak_bytes > *measure_.peak_bytes) {
      measure_.peak_bytes = it->second.peak_bytes;
      measure_.peak_location = t == &measure_.update ? "update (" + it->second.peak_location + ")"
                                                     : it->second.peak_location;
    }
  }
  return measure_;
}

namespace {

void check_plan(const ModelConfig& model, const PlanConfig& plan) {
  const std::string problem = plan_problem(model, plan);
  if (!problem.empty()) throw std::invalid_argument("plan " + plan.to_string() + " cannot run " + model.to_string() + ": " + problem);
}

}  // namespace

StepMeasure trace_solo_step(const StepProgram& program, const ModelConfig& model, const PlanConfig& plan,
                            c10::DeviceType device) {
  check_plan(model, plan);
  StepMeasure out;
  SoloOptions options;
  options.device = device;
  run_solo_world(
      plan.mesh.world_size(), /*rank=*/0,
      [&](World& world) {
        StepRecorder recorder(world);
        program(world, device, model, plan, recorder);
        out = recorder.finish();
      },
      options);
  return out;
}

std::vector<StepMeasure> trace_fake_step(const StepProgram& program, const ModelConfig& model,
                                         const PlanConfig& plan, c10::Device device) {
  check_plan(model, plan);
  std::vector<StepMeasure> out(static_cast<size_t>(plan.mesh.world_size()));
  std::mutex mutex;
  FakeWorldOptions options;
  options.device = device;
  run_fake_world(plan.mesh.world_size(), [&](World& world) {
    // What is live after cuBLAS's workspace is not counted in the step's peak
    // (Note [cuBLAS workspace of CUDA ranks] in backends/world.h).
    int64_t baseline = 0;
    if (device.is_cuda()) {
      allocate_cublas_workspace(device);
      if (auto stats = world.memory_stats()) baseline = stats->current_bytes;
    }
    StepRecorder recorder(world);
    program(world, device.type(), model, plan, recorder);
    StepMeasure m = recorder.finish();
    if (m.peak_bytes) *m.peak_bytes -= baseline;
    std::lock_guard<std::mutex> lock(mutex);
    out[static_cast<size_t>(world.rank())] = std::move(m);
  }, options);
  return out;
}

}  // namespace dtensor::planner
