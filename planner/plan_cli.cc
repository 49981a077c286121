// The dtensor_plan command line. See plan_cli.h.
#include "planner/plan_cli.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "layout/flags.h"
#include "planner/estimate.h"
#include "planner/llama_step.h"
#include "planner/report.h"
#include "planner/sweep.h"
#include "planner/verdict_changes.h"

namespace dtensor::planner {
namespace {

constexpr int kDoesNotFit = 1;
constexpr int kUsage = 2;

const char* kUsageText = R"(usage: dtensor_plan --model SPEC (--mesh MESH | --sweep WORLD) [options]

Estimates per-rank memory, comm bytes and step time of a parallel training
plan from a solo-mode trace of one step (one rank of the world, meta tensors).

  --model SPEC          a preset with optional overrides: llama-70b, llama-8b,
                        llama, transformer (the example Transformer), e.g.
                        llama-70b:layers=40,seq=8192 or transformer:dim=32
                        keys: layers dim ffn heads kv_heads vocab seq batch dtype rope (0|1)
  --mesh MESH           dp=1024,tp=8 or pp=8,dp=128,tp=8 (dim names pp, rep, dp, tp,
                        outermost first; pp: pipeline stages; rep: HSDP's
                        replicas of the fsdp shards over dp)
  --plan OPTIONS        comma list: sp|nosp, adam|sgd-momentum|sgd, micro=N, zero1,
                        fsdp, ac=none|full|op|N (activation checkpointing: every
                        layer, torchtitan's selective op, every N-th layer),
                        v=N (with pp: interleaved 1F1B, N chunks per rank),
                        mp=bf16|fp16 (with fsdp: float32 parameters and optimizer
                        state, computed in the model's dtype, as torchtitan)
                        (default nosp,adam,micro=1)
  --topology FILE       links per mesh dim, peak rates, the memory cap, CUDA
                        context, NCCL buffers and the allocator's mode
                        (format: planner/topology.h; default H100 + NVLink + 400G)
  --cap-gib X           memory cap per rank in GiB (overrides the topology's)
  --allocator MODE      PyTorch's caching allocator: expandable (expandable_segments:True)
                        or segments (PyTorch's default); overrides the topology's
  --calibration FILE    compute at the rates measured on a GPU (tools/calibrate_gpu.sh;
                        format: planner/calibration.h) instead of the topology's peaks
  --sweep WORLD         enumerate meshes dp x tp of WORLD ranks and the plan
                        options (sp, micro 1..16, 3 optimizers, zero1, fsdp,
                        activation checkpointing); rank those that fit
  --sweep-ac LIST       sweep: activation checkpointing modes (default none,op,full)
  --sweep-pp LIST       sweep: pipeline-parallel sizes (default 1: none), e.g. 1,2,4,8
  --sweep-v LIST        sweep: chunks per pipeline rank where pp > 1 (default 1: 1F1B)
  --sweep-optimizers LIST  sweep: optimizers (default adam,sgd-momentum,sgd)
  --top N               sweep: plans shown (default 10)
  --trace-layers N      trace all layers up to N (at least 3), else 2 and 3 and scale (default 3; 0: all)
  --no-alternatives     plan: skip estimating the plans one option away (what
                        would make it fit, or faster)
  --json FILE           also write the report as JSON ("-": stdout only JSON)
exit status: 0 fits, 1 does not fit (sweep: none fits), 2 usage or run error
)";

struct Args {
  std::string model, mesh, plan = "nosp,adam,micro=1", topology, calibration, json, allocator, sweep_ac = "none,op,full",
                                                                                  sweep_pp = "1", sweep_v = "1",
                                                                                  sweep_optimizers = "adam,sgd-momentum,sgd";
  double cap_gib = 0;
  int64_t sweep = 0, top = 10, trace_layers = 3;
  bool no_alternatives = false;
};

bool parse(int argc, char** argv, Args& a, std::string& error) {
  Flags flags;
  flags.value("--model", &a.model)
      .value("--mesh", &a.mesh)
      .value("--plan", &a.plan)
      .value("--topology", &a.topology)
      .value("--calibration", &a.calibration)
      .value("--json", &a.json)
      .value("--cap-gib", &a.cap_gib)
      .value("--allocator", &a.allocator)
      .value("--sweep", &a.sweep)
      .value("--sweep-ac", &a.sweep_ac)
      .value("--sweep-pp", &a.sweep_pp)
      .value("--sweep-v", &a.sweep_v)
      .value("--sweep-optimizers", &a.sweep_optimizers)
      .value("--top", &a.top)
      .value("--trace-layers", &a.trace_layers)
      .toggle("--no-alternatives", &a.no_alternatives);
  if (!flags.parse(argc, argv, error)) return false;
  if (a.model.empty()) error = "--model is required";
  else if (a.mesh.empty() == (a.sweep == 0)) error = "give exactly one of --mesh and --sweep";
  else if (a.cap_gib < 0) error = "--cap-gib must be positive";
  else if (!a.allocator.empty() && !parse_allocator_mode(a.allocator)) {
    error = "--allocator " + a.allocator + ": expected expandable or segments";
  }
  return error.empty();
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::invalid_argument("cannot read " + path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// "1,2,4" as numbers, each >= 1.
std::vector<int64_t> positive_list(const std::string& flag, const std::string& text) {
  std::vector<int64_t> out;
  std::stringstream items(text);
  for (std::string item; std::getline(items, item, ',');) {
    size_t used = 0;
    int64_t v = 0;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || item.empty() || v < 1) {
      throw std::invalid_argument(flag + " " + text + ": expected positive integers separated by commas");
    }
    out.push_back(v);
  }
  if (out.empty()) throw std::invalid_argument(flag + ": give at least one value");
  return out;
}

void write_json(const std::string& path, const nlohmann::json& j) {
  if (path == "-") {
    std::cout << j.dump(2) << "\n";
    return;
  }
  std::ofstream out(path);
  if (!out) throw std::invalid_argument("cannot write " + path);
  out << j.dump(2) << "\n";
}

}  // namespace

int plan_cli(int argc, char** argv, const std::map<ModelKind, ProgramEntry>& extra) {
  Args a;
  std::string error;
  if (!parse(argc, argv, a, error)) {
    if (!error.empty()) std::cerr << "dtensor_plan: " << error << "\n\n";
    std::cerr << kUsageText;
    return error.empty() ? 0 : kUsage;
  }
  try {
    std::map<ModelKind, ProgramEntry> programs = {{ModelKind::kLlama, {llama_step_program(), c10::kMeta}}};
    for (const auto& [kind, entry] : extra) programs[kind] = entry;
    const ModelConfig model = parse_model(a.model);
    auto it = programs.find(model.kind);
    if (it == programs.end()) throw std::invalid_argument("no step program for model " + model.to_string());
    Topology topology = a.topology.empty() ? default_topology() : parse_topology(read_file(a.topology));
    if (a.cap_gib > 0) topology.memory_gib = a.cap_gib;
    if (!a.allocator.empty()) topology.expandable_segments = *parse_allocator_mode(a.allocator);
    if (!a.calibration.empty()) {
      topology.calibration = std::make_shared<const Calibration>(parse_calibration(read_file(a.calibration)));
    }
    EstimateOptions options;
    options.max_traced_layers = a.trace_layers;
    options.solo_device = it->second.solo_device;
    const bool json_only = a.json == "-";
    if (a.sweep > 0) {
      SweepOptions s;
      s.world_size = a.sweep;
      s.estimate = options;
      s.activation_checkpointing.clear();
      std::stringstream modes(a.sweep_ac);
      for (std::string mode; std::getline(modes, mode, ',');) {
        PlanConfig check;
        set_checkpointing(check, mode);  // a bad mode fails here, before the sweep
        s.activation_checkpointing.push_back(mode);
      }
      s.pp_sizes = positive_list("--sweep-pp", a.sweep_pp);
      s.virtual_stages = positive_list("--sweep-v", a.sweep_v);
      s.optimizers.clear();
      std::stringstream optimizers(a.sweep_optimizers);
      for (std::string name; std::getline(optimizers, name, ',');) {
        const std::vector<Optimizer> known = {Optimizer::kAdam, Optimizer::kSgdMomentum, Optimizer::kSgd};
        auto it = std::find_if(known.begin(), known.end(), [&](Optimizer o) { return name == optimizer_name(o); });
        if (it == known.end()) {
          throw std::invalid_argument("--sweep-optimizers " + a.sweep_optimizers + ": " + name +
                                      " is none of adam, sgd-momentum, sgd");
        }
        s.optimizers.push_back(*it);
      }
      const SweepResult r = sweep_plans(it->second.program, model, topology, s);
      if (!json_only) std::cout << sweep_report_text(r, a.top);
      if (!a.json.empty()) write_json(a.json, sweep_report_json(r));
      return r.fitting() > 0 ? 0 : kDoesNotFit;
    }
    const PlanConfig plan = parse_plan(parse_mesh(a.mesh), a.plan);
    const PlanEstimate e = estimate_plan(it->second.program, model, plan, topology, options);
    std::vector<VerdictChange> changes;
    if (!a.no_alternatives) changes = verdict_changes(it->second.program, e, options);
    if (!json_only) {
      std::cout << plan_report_text(e);
      if (!a.no_alternatives) std::cout << "changes    " << verdict_changes_text(e, changes) << "\n";
    }
    if (!a.json.empty()) {
      nlohmann::json j = plan_report_json(e);
      if (!a.no_alternatives) j["alternatives"] = verdict_changes_json(changes);
      write_json(a.json, j);
    }
    return e.fits() ? 0 : kDoesNotFit;
  } catch (const std::exception& ex) {
    std::cerr << "dtensor_plan: " << ex.what() << "\n";
    return kUsage;
  }
}

}  // namespace dtensor::planner
