// A capacity planner report (dtensor_plan --json: one plan, or a sweep's
// plans; planner/report.h, dtensor_plan_version 1) as the viewer's Plan panel
// draws it: memory per category against the cap, what the step's time is
// made of, and for a sweep the table of plans. Plain data, no ImGui; never
// throws: a malformed report gives an error naming the JSON path.
//   PlanLoadResult r = parse_plan_json(text, "plan.json");
//   if (r.report) draw(r.report->plans[0].memory);
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dtensor::gui {

// The newest dtensor_plan_version this viewer reads (planner/report.h's).
inline constexpr int kPlanJsonVersion = 1;

// One slice of a stacked bar: memory in bytes, or time in microseconds.
struct PlanSlice {
  std::string name;
  double value = 0;
};

// One plan of a report.
struct PlanSummary {
  std::string spec;      // "pp=4,dp=256,tp=4,sp,micro=1,adam,zero1"
  int64_t world_size = 0;
  // parameters, gradients, optimizer state, activations and transients at
  // the peak (the last absent when the world counted no memory); then, in
  // reports that have memory.device (planner Note [Device memory]), the
  // allocator's cache over the live peak, NCCL buffers and the CUDA context.
  std::vector<PlanSlice> memory;
  // The device total (what nvidia-smi would show) where the report has it,
  // else the live peak.
  double total_bytes = 0, cap_bytes = 0;
  bool fits = false;
  std::string verdict;
  // compute, exposed comm, pipeline bubble: the step with overlap, summing
  // to step_us.
  std::vector<PlanSlice> time;
  double step_us = 0, serial_us = 0;
  double tokens_per_s_per_gpu = 0, mfu = 0;  // 0 when the report predates them
};

// A report: one plan, or a sweep's plans (fitting first, fastest first).
struct PlanReport {
  std::string source;
  std::string model;
  bool sweep = false;
  int64_t fitting = 0;
  std::vector<PlanSummary> plans;
};

// A report, or why there is none. Exactly one of the two is set.
struct PlanLoadResult {
  std::optional<PlanReport> report;
  std::string error;
};

// True when `text` is a dtensor_plan report (an object with
// "dtensor_plan_version"), whatever else it holds.
bool looks_like_plan_json(std::string_view text);

// Parses a report; `source` names it in messages. Example error:
// "plan.json: $.plans[2].memory.total: expected a number, got string".
PlanLoadResult parse_plan_json(std::string_view text, const std::string& source);

}  // namespace dtensor::gui
