// What would change a plan's verdict (issue #37 item 5): the plans one option
// away from it (activation checkpointing, fsdp, zero1, sequence parallelism,
// micro-batch, mixed precision), each estimated; those that fit where the
// plan does not, or, where it fits, those that also fit and run faster.
//   PlanEstimate e = estimate_plan(program, model, plan, topology);
//   std::cout << verdict_changes_text(e, verdict_changes(program, e));
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "planner/estimate.h"

namespace dtensor::planner {

struct VerdictChange {
  std::string change;  // "ac=full", "fsdp", "micro=1"
  PlanEstimate estimate;
};

/// The plans one option away from `e.plan` that fit where it does not, or
/// (where it fits) that fit and have a higher tokens/s per GPU; the best
/// `limit` by tokens/s per GPU.
std::vector<VerdictChange> verdict_changes(const StepProgram& program, const PlanEstimate& e,
                                           const EstimateOptions& options = {}, size_t limit = 3);

/// One line: "what would make it fit: ac=full (71.20 GiB, 2,950 tokens/s per
/// GPU), ..." / "faster and still fits: ..." / that no single change does.
std::string verdict_changes_text(const PlanEstimate& e, const std::vector<VerdictChange>& changes);

/// [{"change", "plan", "fits", "needed_bytes", "tokens_per_s_per_gpu"}, ...].
nlohmann::json verdict_changes_json(const std::vector<VerdictChange>& changes);

}  // namespace dtensor::planner
