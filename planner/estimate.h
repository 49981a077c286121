// The planner's estimate of one plan: per-rank memory, comm bytes per
// collective kind and mesh dim, FLOPs and an alpha-beta + roofline step time,
// from one traced step (step_trace.h). Models deeper than a few layers are
// traced at 2 and 3 layers and extrapolated (Note [Per-layer scaling]).
//   PlanEstimate e = estimate_plan(llama_step_program(), parse_model("llama-70b"), plan, default_topology());
//   e.fits();  e.step_us_overlap;
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "planner/caching_allocator_model.h"
#include "planner/plan_config.h"
#include "planner/step_trace.h"
#include "planner/topology.h"

namespace dtensor::planner {

/// The collectives of one kind over one mesh dim, per rank and step.
struct CommRow {
  std::string kind;      // "all_reduce"
  std::string mesh_dim;  // "tp", "dp" ("?" when the trace has no mesh dim)
  std::string phase;     // "micro-step" (forward + backward, times micro_steps) or "update"
  int64_t count = 0;
  int64_t bytes = 0;       // bytes this rank contributed, as CommDebugMode recorded them
  int64_t ring_bytes = 0;  // bytes this rank sends in a ring (layout/comm_cost.h)
  double time_us = 0;      // alpha-beta on the mesh dim's link
};

/// One rank's totals of one step, additive over layers (the unit of
/// Note [Per-layer scaling]).
struct StepTotals {
  int64_t parameter_bytes = 0, gradient_bytes = 0, optimizer_bytes = 0;
  std::optional<int64_t> peak_bytes;
  std::string peak_location;
  std::vector<CommRow> comm;  // sorted by phase, kind, mesh dim
  double forward_flops = 0, backward_flops = 0, update_flops = 0;  // matmul family, one micro-step / update
  double forward_pointwise_bytes = 0, backward_pointwise_bytes = 0, update_pointwise_bytes = 0;
  /// Those FLOPs and bytes in microseconds on the topology's accelerator:
  /// per op at its calibrated rate, else at the peaks.
  double forward_compute_us = 0, backward_compute_us = 0, update_compute_us = 0;
  /// One micro-step's FSDP collectives no compute can hide (Note [Step time
  /// estimate]): the forward's first all-gather and the backward's last
  /// gradient reduction over each mesh dim.
  double fsdp_ends_us = 0;
  /// Bytes one micro-step's forward keeps for its backward (StepMeasure::kept_bytes).
  std::optional<int64_t> kept_bytes;
  /// The caching allocator's peaks over the step, in the topology's mode
  /// (StepMeasure::allocations replayed).
  std::optional<AllocatorPeaks> allocator;
};

/// Memory as the GPU sees it (Note [Device memory] in estimate.cc).
struct DeviceMemory {
  bool expandable_segments = false;  // the topology's allocator
  int64_t allocated = 0;  // the allocator's blocks at their peak: live tensors, rounded up
  int64_t reserved = 0;   // what the allocator holds: torch.cuda.max_memory_reserved()
  int64_t pinned = 0;     // the least it can shrink to by freeing its cache
  /// The cache would outgrow the device: the allocator frees it and retries
  /// (cudaMalloc retries, slow); `reserved` is then what room there is.
  bool cache_flushed = false;
  int64_t communicators = 0;  // NCCL communicators this rank uses (mesh dims it communicates over)
  int64_t nccl = 0;           // their buffers
  int64_t cuda_context = 0;
  /// What nvidia-smi would show.
  int64_t total() const { return reserved + nccl + cuda_context; }
  /// The least the run needs (the allocator at its pinned minimum).
  int64_t needed() const { return pinned + nccl + cuda_context; }
};

/// A pipeline-parallel plan's stages (Note [Pipeline stages] in estimate.cc).
struct PipelineEstimate {
  int64_t stages = 1;          // pp
  int64_t virtual_stages = 1;  // model chunks per rank (1: 1F1B)
  /// Micro-batches whose activations the first and the last rank hold at
  /// their peaks, in units of one micro-batch through all of a rank's layers.
  double in_flight_first = 1, in_flight_last = 1;
  int64_t first_bytes = 0, last_bytes = 0;  // peak bytes of the first and the last rank
  double first_micro_us = 0, last_micro_us = 0;  // one micro-batch's forward + backward on each
  int64_t send_bytes = 0;  // activations (or their gradient) sent across a stage boundary per micro-batch
  double send_us = 0;      // one such send on the pp link
  double bubble_us = 0;    // the schedule's fill and drain
};

/// What PyTorch's CUDA caching allocator would hold for an allocation log
/// (StepMeasure::allocations) replayed in order through CachingAllocatorModel.
AllocatorPeaks replay_allocations(const std::vector<AllocationEvent>& log, bool expandable_segments);

/// Totals of a measured step: comm rows from its CommDebugMode traces
/// (micro-step rows multiplied by micro_steps), FLOPs of its local matmuls.
StepTotals step_totals(const StepMeasure& measure, const ModelConfig& model, const PlanConfig& plan,
                       const Topology& topology);

/// a + (layers - 2) * (b - a): totals of a `layers`-layer model from its
/// 2-layer (a) and 3-layer (b) traces. Rows must match (same kinds and dims).
StepTotals extrapolate_layers(const StepTotals& a, const StepTotals& b, int64_t layers);
/// (1 - w) a + w b, field by field (comm rows matched by phase, kind and mesh
/// dim; integers rounded): a model whose layers are of two kinds, a fraction
/// w of them like b's (every n-th layer checkpointed, Note [Per-layer
/// scaling]); extrapolate_layers is w = layers - 2.
StepTotals blend_totals(const StepTotals& a, const StepTotals& b, double w);

/// Model FLOPs of one token, forward and backward, as PaLM and torchtitan
/// count them: 6 N (N: parameters without the input embedding) + 12 L H Q T
/// (attention scores and values, not halved for the causal mask; L layers,
/// H heads, Q head dim, T sequence length). Recomputation is not counted.
double model_flops_per_token(const ModelConfig& model);

/// The estimate of one plan.
struct PlanEstimate {
  ModelConfig model;
  PlanConfig plan;
  Topology topology;
  int64_t traced_layers = 0;  // == model.layers unless extrapolated
  int64_t micro_steps = 1;    // batch / dp / micro_batch
  StepTotals totals;
  /// Peak minus parameters, gradients and optimizer state: activations and
  /// transient buffers at the peak. Unset without a measured peak.
  std::optional<int64_t> activation_bytes;
  /// Peak bytes per rank: the measured peak, else the static bytes.
  int64_t total_bytes = 0;
  int64_t cap_bytes = 0;
  /// Set where the trace counted memory.
  std::optional<DeviceMemory> device;
  double compute_us = 0;         // matmul FLOPs and memory-bound bytes at the accelerator's rates, whole step
  double blocking_comm_us = 0;   // micro-step collectives (tp/sp): on the critical path
  double prefetched_comm_us = 0; // micro-step collectives over dp (FSDP's gathers and reduce-scatters): overlappable
  double update_comm_us = 0;     // gradient averaging + optimizer collectives
  double exposed_fsdp_comm_us = 0;    // of prefetched_comm_us, what compute does not hide
  double exposed_update_comm_us = 0;  // of update_comm_us, what the last backward does not hide
  /// Compute slowed by the collectives it hides (Topology::overlap_slowdown).
  double overlap_slowdown_us = 0;
  double step_us_serial = 0;     // compute + every collective
  double step_us_overlap = 0;    // update comm hidden behind the last backward (Note [Step time estimate])
  double trace_seconds = 0;      // wall time of the tracing
  /// Set for plans with a pp mesh dim; totals, memory and compute are then
  /// the first or the last rank's, whichever holds more memory.
  std::optional<PipelineEstimate> pipeline;

  /// What the plan needs of the device's memory: DeviceMemory::needed(), or
  /// the peak bytes where the trace counted no memory.
  int64_t needed_bytes() const { return device ? device->needed() : total_bytes; }
  bool fits() const { return needed_bytes() <= cap_bytes; }
  /// Tokens each rank trains per second: batch * seq / world size / step (overlap).
  double tokens_per_second_per_gpu() const;
  /// Model FLOPs utilization: tokens_per_second_per_gpu() * model_flops_per_token(model)
  /// over Topology::peak_tflops (the datasheet's, as torchtitan and Megatron report it).
  double mfu() const;
  /// "fits (12.3 GiB free of 80 GiB)" or "does not fit by 4.5 GiB (cap 80 GiB)",
  /// as the device would be filled (DeviceMemory::total()).
  std::string verdict() const;
};

/// Options of estimate_plan.
struct EstimateOptions {
  /// Models with more layers than this (and than 3) are traced at 2 and 3
  /// layers and extrapolated (Note [Per-layer scaling]); 0 always traces
  /// every layer.
  int64_t max_traced_layers = 3;
  /// The solo world's device: meta, or CPU for programs that need real
  /// kernels (small models only).
  c10::DeviceType solo_device = c10::kMeta;
};

/// Traces `program` in solo mode (meta) and estimates. Throws
/// std::invalid_argument when the plan cannot run the model.
PlanEstimate estimate_plan(const StepProgram& program, const ModelConfig& model, const PlanConfig& plan,
                           const Topology& topology, const EstimateOptions& options = {});

/// The same from measures already taken (e.g. a fake world's rank 0).
PlanEstimate estimate_from_totals(const StepTotals& totals, int64_t traced_layers, const ModelConfig& model,
                                  const PlanConfig& plan, const Topology& topology);


}  // namespace dtensor::planner
