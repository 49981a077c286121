// Capacity planner reports for the Plan panel. See plan_model.h.
#include "gui/model/plan_model.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace dtensor::gui {
namespace {

using nlohmann::json;

// A field error: "$.plans[2].memory.total: expected a number, got string".
struct BadField : std::runtime_error {
  using std::runtime_error::runtime_error;
};

const json& field(const json& j, const char* name, const std::string& path) {
  if (!j.is_object()) throw BadField(path + ": expected an object, got " + std::string(j.type_name()));
  auto it = j.find(name);
  if (it == j.end()) throw BadField(path + "." + name + ": missing");
  return *it;
}

double number(const json& j, const char* name, const std::string& path) {
  const json& v = field(j, name, path);
  if (!v.is_number()) throw BadField(path + "." + name + ": expected a number, got " + std::string(v.type_name()));
  return v.get<double>();
}

std::string string_field(const json& j, const char* name, const std::string& path) {
  const json& v = field(j, name, path);
  if (!v.is_string()) throw BadField(path + "." + name + ": expected a string, got " + std::string(v.type_name()));
  return v.get<std::string>();
}

PlanSummary summary(const json& p, const std::string& path) {
  PlanSummary s;
  const json& plan = field(p, "plan", path);
  s.spec = string_field(plan, "spec", path + ".plan");
  s.world_size = static_cast<int64_t>(number(plan, "world_size", path + ".plan"));
  const std::string mpath = path + ".memory";
  const json& m = field(p, "memory", path);
  s.memory = {{"parameters", number(m, "parameters", mpath)},
              {"gradients", number(m, "gradients", mpath)},
              {"optimizer state", number(m, "optimizer", mpath)}};
  const json& activations = field(m, "activations", mpath);
  if (!activations.is_null()) s.memory.push_back({"activations", number(m, "activations", mpath)});
  s.total_bytes = number(m, "total", mpath);
  s.cap_bytes = number(m, "cap", mpath);
  if (m.contains("device")) {  // reports of 2026-12-01 on
    const json& d = field(m, "device", mpath);
    const std::string dpath = mpath + ".device";
    s.memory.push_back({"allocator cache", std::max(0.0, number(d, "reserved", dpath) - s.total_bytes)});
    s.memory.push_back({"NCCL buffers", number(d, "nccl", dpath)});
    s.memory.push_back({"CUDA context", number(d, "cuda_context", dpath)});
    s.total_bytes = number(d, "total", dpath);
  }
  const json& fits = field(p, "fits", path);
  if (!fits.is_boolean()) throw BadField(path + ".fits: expected a bool, got " + std::string(fits.type_name()));
  s.fits = fits.get<bool>();
  s.verdict = string_field(p, "verdict", path);
  const std::string tpath = path + ".time";
  const json& t = field(p, "time", path);
  s.step_us = number(t, "step_us_overlap", tpath);
  s.serial_us = number(t, "step_us_serial", tpath);
  const double compute = number(t, "compute_us", tpath);
  const double bubble = p.contains("pipeline") ? number(field(p, "pipeline", path), "bubble_us", path + ".pipeline") : 0;
  // Reports of 2026-12-01 (second) on: compute slowed by the collectives it hides.
  const double slowdown = t.contains("overlap_slowdown_us") ? number(t, "overlap_slowdown_us", tpath) : 0;
  s.time = {{"compute", compute}, {"exposed comm", std::max(0.0, s.step_us - compute - bubble - slowdown)}};
  if (slowdown > 0) s.time.push_back({"overlap slowdown", slowdown});
  if (bubble > 0) s.time.push_back({"pipeline bubble", bubble});
  if (p.contains("throughput")) {  // reports of 2026-11-29 on
    const json& th = field(p, "throughput", path);
    s.tokens_per_s_per_gpu = number(th, "tokens_per_s_per_gpu", path + ".throughput");
    s.mfu = number(th, "mfu", path + ".throughput");
  }
  return s;
}

}  // namespace

bool looks_like_plan_json(std::string_view text) {
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  return j.is_object() && j.contains("dtensor_plan_version");
}

PlanLoadResult parse_plan_json(std::string_view text, const std::string& source) {
  PlanLoadResult out;
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    out.error = source + ": not JSON";
    return out;
  }
  try {
    const double version = number(j, "dtensor_plan_version", "$");
    if (version > kPlanJsonVersion) {
      throw BadField("$.dtensor_plan_version: " + std::to_string(static_cast<int64_t>(version)) +
                     " is newer than this viewer reads (" + std::to_string(kPlanJsonVersion) + ")");
    }
    PlanReport r;
    r.source = source;
    if (j.contains("sweep")) {
      r.sweep = true;
      const json& sweep = field(j, "sweep", "$");
      r.model = string_field(sweep, "model", "$.sweep");
      r.fitting = static_cast<int64_t>(number(sweep, "fitting", "$.sweep"));
      const json& plans = field(j, "plans", "$");
      if (!plans.is_array()) throw BadField("$.plans: expected an array, got " + std::string(plans.type_name()));
      for (size_t i = 0; i < plans.size(); ++i) r.plans.push_back(summary(plans[i], "$.plans[" + std::to_string(i) + "]"));
    } else {
      r.model = string_field(field(j, "model", "$"), "spec", "$.model");
      r.plans.push_back(summary(j, "$"));
      r.fitting = r.plans[0].fits ? 1 : 0;
    }
    out.report = std::move(r);
  } catch (const BadField& e) {
    out.error = source + ": " + e.what();
  }
  return out;
}

}  // namespace dtensor::gui
