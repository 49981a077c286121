// The planner's outputs: a per-rank table for people and JSON for CI, for one
// plan (PlanEstimate) and for a sweep (sweep.h). See README "Capacity planner".
//   std::cout << plan_report_text(e);
//   write(plan_report_json(e).dump(2));    // "dtensor_plan_version": 1
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "planner/estimate.h"

namespace dtensor::planner {

/// Schema version of plan_report_json / sweep_report_json.
inline constexpr int kPlanJsonVersion = 1;

/// The per-rank report: model, mesh, plan; memory rows (parameters,
/// gradients, optimizer state, activations at the peak, total vs cap); comm
/// rows (kind x mesh dim x phase: count, recorded bytes, ring bytes, time);
/// FLOPs and the step time with and without overlap; the verdict.
std::string plan_report_text(const PlanEstimate& e);

/// The same as JSON: {"dtensor_plan_version": 1, "model": {...}, "plan": {...},
/// "topology": {...}, "memory": {...bytes...}, "comm": [...], "time": {...},
/// "fits": bool, "verdict": "..."}.
nlohmann::json plan_report_json(const PlanEstimate& e);

}  // namespace dtensor::planner
