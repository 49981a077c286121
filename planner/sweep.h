// Sweeps: every mesh shape (dp x tp) of a world size and every plan option
// (sequence parallelism, micro-batch, optimizer, ZeRO-1), each estimated from its own
// solo trace; the plans that fit ranked by estimated step time.
//   SweepResult r = sweep_plans(llama_step_program(), parse_model("llama-70b"), default_topology(), {4096});
//   std::cout << sweep_report_text(r, /*top=*/10);
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "planner/estimate.h"

namespace dtensor::planner {

struct SweepOptions {
  int64_t world_size = 8;
  /// tp sizes to try; empty: every power of two dividing world_size (1 included).
  std::vector<int64_t> tp_sizes;
  std::vector<int64_t> micro_batches = {1, 2, 4, 8, 16};
  std::vector<Optimizer> optimizers = {Optimizer::kAdam, Optimizer::kSgdMomentum, Optimizer::kSgd};
  /// Also try sequence parallelism where tp > 1.
  bool try_sequence_parallel = true;
  /// Also try ZeRO-1 (optimizer state sharded over dp) where dp > 1.
  bool try_zero1 = true;
  /// Also try FSDP (fully_shard over dp) where dp > 1.
  bool try_fsdp = true;
  /// Activation checkpointing modes to try ("none", "op", "full", "N": as
  /// the plan's ac=).
  std::vector<std::string> activation_checkpointing = {"none", "op", "full"};
  /// Pipeline-parallel sizes to try (1: none); each dividing world_size.
  std::vector<int64_t> pp_sizes = {1};
  /// Interleaving to try where pp > 1 (1: 1F1B; N: N chunks per rank).
  std::vector<int64_t> virtual_stages = {1};
  EstimateOptions estimate;
};

struct SweepResult {
  ModelConfig model;
  Topology topology;
  int64_t world_size = 0;
  /// Every plan evaluated: the ones that fit first, by step_us_overlap; then
  /// the others by the memory they need (PlanEstimate::needed_bytes).
  std::vector<PlanEstimate> ranked;
  /// Plans the model cannot run ("tp=16 does not divide kv_heads=8"), with why.
  std::vector<std::pair<std::string, std::string>> skipped;
  double seconds = 0;
  int64_t fitting() const;
};

/// Enumerates, traces and ranks. Throws std::invalid_argument for a world
/// size < 1.
SweepResult sweep_plans(const StepProgram& program, const ModelConfig& model, const Topology& topology,
                        const SweepOptions& options);

/// The best `top` plans that fit (rank, plan, device memory per rank, step time, comm
/// per step), then how many did not fit and were skipped, and the time taken.
std::string sweep_report_text(const SweepResult& r, int64_t top = 10);

/// {"dtensor_plan_version": 1, "sweep": {...}, "plans": [plan_report_json...], "skipped": [...]}.
nlohmann::json sweep_report_json(const SweepResult& r);

}  // namespace dtensor::planner
