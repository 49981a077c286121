// Why a collective happened: the origin of the redistribution that issued it,
// as plain data (no LibTorch). core/ fills one for every collective it issues
// (Note [Collective origins] in core/redistribution_origin.h); CollectiveEvent
// carries it, CommDebugMode records it (trace::CollectiveRecord::origin), the
// comm trace JSON writes it ("origin" of an event, trace/comm_trace_schema.md)
// and reports group and diff by it.
//   CollectiveOrigin o;  // aten::mm needed input 1 as R on mesh dim 0
//   o.cause = "implicit"; o.op = "aten::mm"; o.input_index = 1;
//   o.from_placements = {Shard(0)}; o.to_placements = {Replicate()}; o.mesh_dim = 0;
//   o.step = OriginStep{Shard(0), Replicate()};
//   origin_summary(o);   // "implicit aten::mm input 1, S(0) -> R"
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "layout/placement.h"

namespace dtensor {

/// Causes of explicit redistributions (the API the user called), and the one
/// implicit cause. CollectiveOrigin::cause holds one of these names; readers
/// must accept names they do not know (newer writers may add some).
namespace origin_cause {
inline constexpr const char* kImplicit = "implicit";                // sharding propagation
inline constexpr const char* kRedistribute = "redistribute";        // DTensor::redistribute
inline constexpr const char* kRedistributeBackward = "redistribute_backward";  // its gradient
inline constexpr const char* kFullTensor = "full_tensor";           // DTensor::full_tensor
inline constexpr const char* kFromLocalBackward = "from_local_backward";  // gradient of from_local
inline constexpr const char* kDistributeTensor = "distribute_tensor";
inline constexpr const char* kRunCheck = "run_check";               // from_local(run_check)
inline constexpr const char* kParallelStyle = "parallel_style";     // a TP style's boundary
inline constexpr const char* kDistributeModule = "distribute_module";
inline constexpr const char* kDataParallel = "data_parallel";       // gradient sync of DDP-like wrappers
inline constexpr const char* kFsdpUnshard = "fsdp_unshard";         // fully_shard's parameter all-gather
inline constexpr const char* kFsdpReduceGrad = "fsdp_reduce_grad";  // fully_shard's gradient reduce-scatter
}  // namespace origin_cause

/// One step of a redistribution on one mesh dim: S(0) -> R.
struct OriginStep {
  Placement from;
  Placement to;
  /// "S(0) -> R".
  std::string to_string() const;
  bool operator==(const OriginStep& o) const { return from == o.from && to == o.to; }
  bool operator!=(const OriginStep& o) const { return !(*this == o); }
};

/// Reads OriginStep::to_string's form ("S(0) -> R"); throws LayoutError
/// naming the text otherwise.
OriginStep parse_origin_step(const std::string& text);

/// The origin of one collective.
struct CollectiveOrigin {
  /// True when the user asked for it (any cause but "implicit").
  bool is_explicit = false;
  /// One of origin_cause's names.
  std::string cause;
  /// Implicit: the operator, "aten::addmm" (name.overload). Explicit: the API
  /// or boundary, "DTensor::redistribute", "ColwiseParallel input",
  /// "distribute_tensor".
  std::string op;
  /// Implicit: the index of the tensor input (among the op's tensor inputs,
  /// in argument order) whose placements changed; -1 when not applicable.
  int64_t input_index = -1;
  /// The whole redistribution this collective is a step of: placements
  /// before and after, [S(0), R] -> [R, R]; empty when unknown.
  Placements from_placements;
  Placements to_placements;
  /// The dim of the redistributed tensor's mesh this step ran over (-1 when
  /// unknown), and the step itself on that dim, S(0) -> R.
  int64_t mesh_dim = -1;
  std::optional<OriginStep> step;
  /// Implicit ones decided by a cost comparison (Note [Choosing among
  /// candidates] in core/dispatch/sharding_registry.cc): the strategy chosen
  /// on `mesh_dim`, "[S(0)], [R] -> [S(0)]" (input placements -> output
  /// placements), and its cost; the cheapest candidate rejected and its cost
  /// ("" and 0 when there was none). Costs are in bytes: ring bytes per rank
  /// plus each collective's latency: 250000 (5 us at 50 GB/s) and 25000 per
  /// ring step (n-1 steps, an all_reduce 2(n-1); Note [Comm cost model]).
  std::string strategy;
  double strategy_cost = 0;
  std::string rejected_strategy;
  double rejected_cost = 0;

  bool operator==(const CollectiveOrigin& o) const {
    return is_explicit == o.is_explicit && cause == o.cause && op == o.op && input_index == o.input_index &&
           from_placements == o.from_placements && to_placements == o.to_placements &&
           mesh_dim == o.mesh_dim && step == o.step && strategy == o.strategy &&
           strategy_cost == o.strategy_cost && rejected_strategy == o.rejected_strategy &&
           rejected_cost == o.rejected_cost;
  }
  bool operator!=(const CollectiveOrigin& o) const { return !(*this == o); }
};

/// The per-mesh-dim strategy comparison behind an implicit redistribution,
/// as the sharding propagator made it (CollectiveOrigin's strategy fields).
/// Built once per cached decision, never per call.
struct StrategyChoice {
  std::string chosen;    // "S(0), R -> S(0)": each input's placement -> each output's
  double chosen_cost = 0;
  std::string rejected;  // the cheapest other feasible candidate; "" when none
  double rejected_cost = 0;
};

/// Placements as origins print them: "[S(0), R]", or "" when unknown (empty).
std::string origin_placements_text(const Placements& placements);

/// One line for tables and diffs:
///   implicit:  "implicit aten::addmm input 1, S(0) -> R"   (the step; the whole
///              redistribution is added when it differs: "..., S(0) -> R ([S(0), S(1)] -> [R, S(1)])")
///   explicit:  "explicit full_tensor (DTensor::full_tensor), S(0) -> R"
std::string origin_summary(const CollectiveOrigin& origin);

/// origin_summary without its first word ("implicit" / "explicit"), for
/// sentences that say it already: "aten::addmm input 1, S(0) -> R",
/// "full_tensor (DTensor::full_tensor), S(0) -> R".
std::string origin_reason(const CollectiveOrigin& origin);

/// The grouping key of reports ("what changed and why"): the origin without
/// its costs, "implicit aten::addmm input 1 [S(0)] -> [R] dim 0".
std::string origin_key(const CollectiveOrigin& origin);

}  // namespace dtensor
