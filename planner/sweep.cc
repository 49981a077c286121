// Plan sweeps. See sweep.h.
#include "planner/sweep.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <sstream>
#include <stdexcept>

#include "layout/text.h"
#include "planner/report.h"

namespace dtensor::planner {

int64_t SweepResult::fitting() const {
  return std::count_if(ranked.begin(), ranked.end(), [](const PlanEstimate& e) { return e.fits(); });
}

SweepResult sweep_plans(const StepProgram& program, const ModelConfig& model, const Topology& topology,
                        const SweepOptions& options) {
  if (options.world_size < 1) throw std::invalid_argument("sweep: world size must be >= 1");
  const auto start = std::chrono::steady_clock::now();
  SweepResult r;
  r.model = model, r.topology = topology, r.world_size = options.world_size;
  std::vector<int64_t> tps = options.tp_sizes;
  if (tps.empty()) {
    for (int64_t tp = 1; tp <= options.world_size; tp *= 2) {
      if (options.world_size % tp == 0) tps.push_back(tp);
    }
  }
  for (int64_t pp : options.pp_sizes) {
   for (int64_t v : pp > 1 ? options.virtual_stages : std::vector<int64_t>{1}) {
    for (int64_t tp : tps) {
    if (pp < 1 || options.world_size % (pp * tp) != 0) {
      r.skipped.push_back({"pp=" + std::to_string(pp) + ",tp=" + std::to_string(tp), "does not divide the world size"});
      continue;
    }
    const int64_t dp = options.world_size / (pp * tp);
    MeshConfig mesh;
    mesh.names = {"dp", "tp"};
    mesh.sizes = {dp, tp};
    if (pp > 1) {
      mesh.names.insert(mesh.names.begin(), "pp");
      mesh.sizes.insert(mesh.sizes.begin(), pp);
    }
    for (bool sp : {false, true}) {
      if (sp && (!options.try_sequence_parallel || tp == 1)) continue;
      for (int64_t micro : options.micro_batches) {
        for (Optimizer opt : options.optimizers) {
         // How dp shares the training state: not at all (DDP), ZeRO-1, FSDP.
         for (int sharding : {0, 1, 2}) {
          if (sharding == 1 && (!options.try_zero1 || dp == 1)) continue;
          if (sharding == 2 && (!options.try_fsdp || dp == 1)) continue;
          for (const std::string& ac : options.activation_checkpointing) {
            PlanConfig plan;
            plan.mesh = mesh, plan.sequence_parallel = sp, plan.micro_batch = micro, plan.optimizer = opt;
            plan.zero1 = sharding == 1;
            plan.fsdp = sharding == 2;
            plan.virtual_stages = v;
            set_checkpointing(plan, ac);
            const std::string problem = plan_problem(model, plan);
            if (!problem.empty()) {
              r.skipped.push_back({plan.to_string(), problem});
              continue;
            }
            r.ranked.push_back(estimate_plan(program, model, plan, topology, options.estimate));
          }
         }
        }
      }
    }
    }
   }
  }
  std::stable_sort(r.ranked.begin(), r.ranked.end(), [](const PlanEstimate& a, const PlanEstimate& b) {
    if (a.fits() != b.fits()) return a.fits();
    return a.fits() ? a.step_us_overlap < b.step_us_overlap : a.needed_bytes() < b.needed_bytes();
  });
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

std::string sweep_report_text(const SweepResult& r, int64_t top) {
  std::ostringstream out;
  char line[256];
  out << "sweep      " << r.model.to_string() << " on " << r.world_size << " ranks, cap "
      << format_bytes(static_cast<double>(r.topology.memory_cap_bytes()), 2) << "\n";
  out << "evaluated  " << r.ranked.size() << " plans in " << std::to_string(r.seconds).substr(0, 5) << " s ("
      << r.fitting() << " fit, " << r.skipped.size() << " skipped: the model cannot run them)\n\n";
  // Memory: the device total, as nvidia-smi would show it (Note [Device memory]).
  std::snprintf(line, sizeof(line), "  %-4s %-38s %12s %12s %12s %14s\n", "rank", "plan", "device/rank", "step",
                "serial", "comm/rank");
  out << line;
  int64_t shown = 0;
  bool flushed = false;
  for (const PlanEstimate& e : r.ranked) {
    if (!e.fits() || shown >= top) break;
    ++shown;
    int64_t ring = 0;
    for (const CommRow& c : e.totals.comm) ring += c.ring_bytes;
    const bool flush = e.device && e.device->cache_flushed;
    flushed = flushed || flush;
    const std::string memory =
        format_bytes(static_cast<double>(e.device ? e.device->total() : e.total_bytes), 2) + (flush ? "*" : "");
    std::snprintf(line, sizeof(line), "  %-4lld %-38s %12s %9.1f ms %9.1f ms %14s\n", static_cast<long long>(shown),
                  e.plan.to_string().c_str(), memory.c_str(), e.step_us_overlap / 1e3, e.step_us_serial / 1e3,
                  format_bytes(static_cast<double>(ring), 2).c_str());
    out << line;
  }
  if (shown == 0) out << "  (no plan fits)\n";
  if (flushed) out << "  * the caching allocator must free its cache to fit (cudaMalloc retries: slower than estimated)\n";
  const int64_t over = static_cast<int64_t>(r.ranked.size()) - r.fitting();
  if (over > 0) {
    const PlanEstimate& closest = r.ranked[static_cast<size_t>(r.fitting())];
    out << "\n" << over << " plans do not fit; the closest: " << closest.plan.to_string() << ", "
        << closest.verdict() << "\n";
  }
  return out.str();
}

nlohmann::json sweep_report_json(const SweepResult& r) {
  nlohmann::json j;
  j["dtensor_plan_version"] = kPlanJsonVersion;
  j["sweep"] = {{"model", r.model.to_string()}, {"world_size", r.world_size},
                {"cap", r.topology.memory_cap_bytes()}, {"evaluated", r.ranked.size()},
                {"fitting", r.fitting()}, {"seconds", r.seconds}};
  j["plans"] = nlohmann::json::array();
  for (const PlanEstimate& e : r.ranked) j["plans"].push_back(plan_report_json(e));
  j["skipped"] = nlohmann::json::array();
  for (const auto& [plan, why] : r.skipped) j["skipped"].push_back({{"plan", plan}, {"why", why}});
  return j;
}

}  // namespace dtensor::planner
