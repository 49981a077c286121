// One traced training step of one rank: what the planner's estimate is built
// from. A step program builds a model under a plan on the calling rank's
// World, warms its optimizer up, then runs one micro-step (forward +
// backward) and the update (gradient averaging over dp + optimizer step)
// under a StepRecorder, which records them with CommDebugMode (collectives,
// DTensor and local ops, modules, and on worlds that count memory the rank's
// peak and where it was reached: Note [Memory location]) and reads the
// parameter, gradient and optimizer-state bytes off the tensors.
//   StepMeasure m = trace_solo_step(my_program, model, plan);   // one rank, meta tensors
#pragma once

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backends/world.h"
#include "debug/comm_debug_mode.h"
#include "planner/plan_config.h"
#include "trace/trace_model.h"

namespace dtensor::planner {

/// What one rank's step measured.
struct StepMeasure {
  int64_t rank = 0;
  /// One micro-step's forward + backward: collectives, DTensor and local ops.
  trace::CommTrace forward_backward;
  /// Gradient averaging over dp and the optimizer step.
  trace::CommTrace update;
  /// This rank's bytes (local shards, tied parameters once) after the warm-up.
  int64_t parameter_bytes = 0;
  int64_t gradient_bytes = 0;
  int64_t optimizer_bytes = 0;
  /// The world's allocator peak over the traced micro-step and update, and
  /// where it happened ("module phase"); unset when the world does not count
  /// memory.
  std::optional<int64_t> peak_bytes;
  std::string peak_location;
  /// Bytes the micro-step's forward keeps for its backward: live when the
  /// forward ended (StepRecorder::forward_done) minus live when it began. A
  /// pipeline stage holds this much per micro-batch in flight (Note
  /// [Pipeline stages] in planner/estimate.cc). Unset when the world does
  /// not count memory or the program did not say where its forward ended.
  std::optional<int64_t> kept_bytes;
  /// This rank's allocations and frees from building the model to the end
  /// of the update, in order (Note [Allocation log] in
  /// backends/rank_memory.cc): replayed through
  /// planner/caching_allocator_model.h, what PyTorch's CUDA caching allocator
  /// would hold (step_totals). Unset when the world does not count memory
  /// and on CUDA ranks (their own caching allocator is the real thing).
  std::optional<std::vector<AllocationEvent>> allocations;
};

/// Records one step on the calling rank; construct it before the program
/// builds its model (its allocations are part of what the allocator holds).
/// The program calls, in order:
/// record_static (after the warm-up), trace_forward_backward (guard around
/// one micro-step), trace_update (guard around averaging + optimizer step).
class StepRecorder {
 public:
  explicit StepRecorder(World& world);
  ~StepRecorder();
  StepRecorder(const StepRecorder&) = delete;
  StepRecorder& operator=(const StepRecorder&) = delete;

  /// Parameter, gradient and optimizer-state bytes of this rank (local
  /// shards of DTensors; every tensor storage counted once).
  void record_static(torch::nn::Module& model, torch::optim::Optimizer& optimizer);
  /// Starts recording the micro-step; `root` names modules (CommDebugMode::enter).
  [[nodiscard]] debug::CommDebugMode::Guard trace_forward_backward(torch::nn::Module& root, std::string root_name);
  /// Marks the end of the micro-step's forward (before its backward starts):
  /// StepMeasure::kept_bytes.
  void forward_done();
  /// Starts recording the update.
  [[nodiscard]] debug::CommDebugMode::Guard trace_update();
  /// The measure (call after both guards ended).
  StepMeasure finish();

 private:
  World& world_;
  StepMeasure measure_;
  std::optional<int64_t> forward_start_bytes_;
  debug::CommDebugMode forward_backward_, update_;
};

/// A step program: SPMD code run by every rank (fake world) or the simulated
/// rank (solo). It must lay the world out as plan.mesh (dim names "dp",
/// "tp"), use `device` for its mesh and tensors, and call the recorder as
/// StepRecorder says.
using StepProgram = std::function<void(World& world, c10::DeviceType device, const ModelConfig& model,
                                       const PlanConfig& plan, StepRecorder& recorder)>;

/// Runs `program` as rank 0 of a solo world of plan.mesh.world_size() ranks,
/// on meta tensors by default (no memory, no data; kCPU for programs that
/// need real kernels, e.g. the example Transformer's embedding). Throws
/// std::invalid_argument with plan_problem() when the plan cannot run the model.
StepMeasure trace_solo_step(const StepProgram& program, const ModelConfig& model, const PlanConfig& plan,
                            c10::DeviceType device = c10::kMeta);

/// Runs `program` on every rank of a fake world on `device` (real tensors:
/// CPU ranks, or CUDA ranks whose memory is the caching allocator's); one
/// measure per rank, in rank order.
std::vector<StepMeasure> trace_fake_step(const StepProgram& program, const ModelConfig& model,
                                         const PlanConfig& plan, c10::Device device = c10::kCPU);

}  // namespace dtensor::planner
