// Plans one option away. See verdict_changes.h.
#include "planner/verdict_changes.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "layout/text.h"

namespace dtensor::planner {
namespace {

// (change, plan) for every option that can differ by one word.
std::vector<std::pair<std::string, PlanConfig>> neighbours(const ModelConfig& model, const PlanConfig& plan) {
  std::vector<std::pair<std::string, PlanConfig>> out;
  auto add = [&](std::string change, PlanConfig p) {
    if (plan_problem(model, p).empty()) out.emplace_back(std::move(change), std::move(p));
  };
  for (const char* mode : {"none", "op", "full", "2"}) {
    PlanConfig p = plan;
    set_checkpointing(p, mode);
    if (p.checkpointing() != plan.checkpointing()) add(std::string("ac=") + mode, p);
  }
  const int64_t dp = plan.mesh.size_of("dp") * plan.mesh.size_of("rep"), tp = plan.mesh.size_of("tp");
  if (dp > 1 && !plan.fsdp) {
    PlanConfig p = plan;
    p.fsdp = true, p.zero1 = false;
    add("fsdp", p);
    if (!plan.zero1) {
      p = plan;
      p.zero1 = true;
      add("zero1", p);
    }
  }
  if (tp > 1) {
    PlanConfig p = plan;
    p.sequence_parallel = !plan.sequence_parallel;
    add(p.sequence_parallel ? "sp" : "nosp", p);
  }
  if (plan.micro_batch > 1) {
    PlanConfig p = plan;
    p.micro_batch = plan.micro_batch / 2;
    add("micro=" + std::to_string(p.micro_batch), p);
  }
  {
    PlanConfig p = plan;
    p.micro_batch = plan.micro_batch * 2;
    add("micro=" + std::to_string(p.micro_batch), p);
  }
  if (plan.fsdp) {
    PlanConfig p = plan;
    const std::string mp = mixed_precision_name(model.dtype);
    p.mixed_precision = plan.mixed_precision.empty() ? mp : "";
    if (p.mixed_precision != plan.mixed_precision) add(p.mixed_precision.empty() ? "mp=none" : "mp=" + mp, p);
  }
  return out;
}

std::string gib(int64_t bytes) { return format_bytes(static_cast<double>(bytes), 2); }

}  // namespace

std::vector<VerdictChange> verdict_changes(const StepProgram& program, const PlanEstimate& e,
                                           const EstimateOptions& options, size_t limit) {
  std::vector<VerdictChange> out;
  for (auto& [change, plan] : neighbours(e.model, e.plan)) {
    PlanEstimate n = estimate_plan(program, e.model, plan, e.topology, options);
    if (!n.fits()) continue;
    if (e.fits() && n.tokens_per_second_per_gpu() <= e.tokens_per_second_per_gpu()) continue;
    out.push_back(VerdictChange{change, std::move(n)});
  }
  std::stable_sort(out.begin(), out.end(), [](const VerdictChange& a, const VerdictChange& b) {
    return a.estimate.tokens_per_second_per_gpu() > b.estimate.tokens_per_second_per_gpu();
  });
  if (out.size() > limit) out.resize(limit);
  return out;
}

std::string verdict_changes_text(const PlanEstimate& e, const std::vector<VerdictChange>& changes) {
  if (changes.empty()) {
    return e.fits() ? "no single change of ac, fsdp, zero1, sp, micro or mp is faster and still fits"
                    : "no single change of ac, fsdp, zero1, sp, micro or mp makes it fit";
  }
  std::string out = e.fits() ? "faster and still fits with " : "fits with ";
  for (size_t i = 0; i < changes.size(); ++i) {
    const PlanEstimate& n = changes[i].estimate;
    char rate[64];
    if (e.fits()) {
      std::snprintf(rate, sizeof(rate), "%+.1f%% tokens/s", 100 * (n.tokens_per_second_per_gpu() / e.tokens_per_second_per_gpu() - 1));
    } else {
      std::snprintf(rate, sizeof(rate), "%.0f tokens/s per GPU", n.tokens_per_second_per_gpu());
    }
    out += (i ? "; " : "") + changes[i].change + " (" + gib(n.needed_bytes()) + ", " + rate + ")";
  }
  return out;
}

nlohmann::json verdict_changes_json(const std::vector<VerdictChange>& changes) {
  nlohmann::json j = nlohmann::json::array();
  for (const VerdictChange& c : changes) {
    j.push_back({{"change", c.change}, {"plan", c.estimate.plan.to_string()}, {"fits", c.estimate.fits()},
                 {"needed_bytes", c.estimate.needed_bytes()},
                 {"tokens_per_s_per_gpu", c.estimate.tokens_per_second_per_gpu()}});
  }
  return j;
}

}  // namespace dtensor::planner
