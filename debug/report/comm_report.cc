// Comm reports: program registry, runner, JSON / markdown writers, golden diff.
#include "debug/report/comm_report.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <tuple>

#include "backends/fake/fake_world.h"
#include "backends/solo/solo_world.h"
#include "trace/comm_estimate.h"
#include "layout/text.h"
#include "debug/fake_world_trace.h"

namespace dtensor::debug {
namespace {

using Json = nlohmann::ordered_json;

std::mutex& registry_mutex() {
  static std::mutex mutex;
  return mutex;
}

std::map<std::string, ReportProgramInfo>& registry() {
  static auto* programs = new std::map<std::string, ReportProgramInfo>();
  return *programs;
}

trace::CommTrace reference_view(const trace::CommTrace& trace) {
  if (trace.rank >= 0) return trace;
  const std::vector<int64_t> ranks = ranks_in(trace);
  return rank_view(trace, ranks.empty() ? 0 : ranks.front());
}

std::string dim_label(const trace::CollectiveRecord& r) {
  return r.mesh_dim_name.empty() ? std::to_string(r.mesh_dim) : r.mesh_dim_name;
}

// Per kind and mesh dim: count, bytes, ring bytes, estimated time.
struct DimStats {
  int64_t count = 0;
  int64_t bytes = 0;
  int64_t ring_bytes = 0;
  double estimated_us = 0;
};

std::map<std::string, std::map<std::string, DimStats>> stats_by_kind_and_dim(const trace::CommTrace& view,
                                                                             const CommCostModel& model) {
  std::map<std::string, std::map<std::string, DimStats>> out;
  for (const trace::CollectiveRecord& r : view.collectives) {
    DimStats& s = out[r.kind][dim_label(r)];
    ++s.count;
    s.bytes += r.bytes;
    s.ring_bytes += ring_bytes_per_rank(r);
    s.estimated_us += estimate_collective_us(r, model);
  }
  return out;
}

// Recursive diff of two JSON values; `path` is the JSON path so far.
void diff_json(const Json& expected, const Json& actual, const std::string& path,
               std::vector<std::string>& out) {
  if (expected.is_object() && actual.is_object()) {
    for (const auto& [key, value] : expected.items()) {
      const std::string p = path + "[\"" + key + "\"]";
      if (!actual.contains(key)) {
        out.push_back(p + ": expected " + value.dump() + ", got (missing)");
      } else {
        diff_json(value, actual[key], p, out);
      }
    }
    for (const auto& [key, value] : actual.items()) {
      if (!expected.contains(key))
        out.push_back(path + "[\"" + key + "\"]: expected (missing), got " + value.dump());
    }
    return;
  }
  if (expected != actual) out.push_back(path + ": expected " + expected.dump() + ", got " + actual.dump());
}

// ---- origins: what changed and why -----------------------------------------

// One group of the report's "origins": collectives of one kind in one module
// and phase with the same origin (trace/comm_trace_schema.md).
struct OriginGroup {
  std::string module, phase, kind, origin;
  bool is_explicit = false;
  bool operator<(const OriginGroup& o) const {
    return std::tie(module, phase, kind, is_explicit, origin) < std::tie(o.module, o.phase, o.kind, o.is_explicit, o.origin);
  }
};

std::map<OriginGroup, int64_t> origin_groups(const trace::CommTrace& view) {
  std::map<OriginGroup, int64_t> out;
  for (const trace::CollectiveRecord& r : view.collectives) {
    OriginGroup g{r.module, phase_name(r.phase), r.kind, "", false};
    if (r.origin) {
      g.origin = origin_reason(*r.origin);
      g.is_explicit = r.origin->is_explicit;
    } else {
      g.origin = "unknown";
    }
    ++out[g];
  }
  return out;
}

Json origins_json(const trace::CommTrace& view) {
  Json out = Json::array();
  for (const auto& [g, n] : origin_groups(view)) {
    out.push_back({{"module", g.module}, {"phase", g.phase}, {"kind", g.kind}, {"explicit", g.is_explicit},
                   {"origin", g.origin}, {"count", n}});
  }
  return out;
}

// The "origins" array of a report JSON, read back; Throws naming the entry.
std::map<OriginGroup, int64_t> read_origin_groups(const Json& report, const char* which) {
  std::map<OriginGroup, int64_t> out;
  const Json& list = report["origins"];
  TORCH_CHECK(list.is_array(), "compare_report_json: the ", which, " report's \"origins\" is not an array");
  for (size_t i = 0; i < list.size(); ++i) {
    const Json& e = list[i];
    const bool ok = e.is_object() && e.contains("module") && e["module"].is_string() && e.contains("phase") &&
                    e["phase"].is_string() && e.contains("kind") && e["kind"].is_string() &&
                    e.contains("origin") && e["origin"].is_string() && e.contains("count") &&
                    e["count"].is_number_integer();
    TORCH_CHECK(ok, "compare_report_json: the ", which, " report's origins[", i,
                "] needs module, phase, kind, origin (strings) and count (an integer)");
    OriginGroup g{e["module"], e["phase"], e["kind"], e["origin"],
                  e.contains("explicit") && e["explicit"].is_boolean() && e["explicit"].get<bool>()};
    out[g] += e["count"].get<int64_t>();
  }
  return out;
}

// "new implicit all_gather_into_tensor in M from aten::addmm input 1, S(0) -> R (forward, 0 -> 1)".
std::vector<std::string> origin_changes(const std::map<OriginGroup, int64_t>& expected,
                                        const std::map<OriginGroup, int64_t>& actual) {
  std::map<OriginGroup, std::pair<int64_t, int64_t>> both;
  for (const auto& [g, n] : expected) both[g].first = n;
  for (const auto& [g, n] : actual) both[g].second = n;
  std::vector<std::string> out;
  for (const auto& [g, counts] : both) {
    const auto [e, a] = counts;
    if (e == a) continue;
    const char* change = e == 0 ? "new" : a == 0 ? "gone:" : a > e ? "more" : "fewer";
    out.push_back(std::string(change) + " " + (g.is_explicit ? "explicit " : "implicit ") + g.kind + " in " +
                  g.module + " from " + g.origin + " (" + g.phase + ", " + std::to_string(e) + " -> " +
                  std::to_string(a) + ")");
  }
  return out;
}

Json parse_report(const std::string& text, const char* which) {
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  TORCH_CHECK(!j.is_discarded() && j.is_object() && j.contains("dtensor_report_version"),
              "compare_report_json: the ", which,
              " text is not a comm report JSON (no \"dtensor_report_version\")");
  return j;
}

}  // namespace

// ---- context ---------------------------------------------------------------

ReportContext::ReportContext(const ReportOptions& options, CommDebugMode& mode)
    : options_(options), mode_(mode) {}

c10::DeviceType ReportContext::device_type() const {
  if (options_.backend == BackendKind::kSolo && options_.meta) return c10::kMeta;
  return require_current_world("ReportContext::device_type").device().type();
}

int64_t ReportContext::int_arg(const std::string& name, int64_t default_value) const {
  auto it = options_.args.find(name);
  if (it == options_.args.end()) return default_value;
  try {
    size_t used = 0;
    int64_t value = std::stoll(it->second, &used);
    if (used == it->second.size()) return value;
  } catch (const std::exception&) {
  }
  TORCH_CHECK(false, "report program '", options_.program, "': argument ", name, "=", it->second,
              " is not an integer");
  return default_value;  // unreachable
}

CommDebugMode::Guard ReportContext::trace(torch::nn::Module& root, std::string root_name) {
  TORCH_CHECK(!traced_, "report program '", options_.program, "' called ReportContext::trace twice");
  traced_ = true;
  return mode_.enter(root, std::move(root_name));
}

CommDebugMode::Guard ReportContext::trace() {
  TORCH_CHECK(!traced_, "report program '", options_.program, "' called ReportContext::trace twice");
  traced_ = true;
  return mode_.enter();
}

// ---- registry --------------------------------------------------------------

void register_report_program(const std::string& name, const std::string& description, ReportProgram program) {
  TORCH_CHECK(!name.empty() && program, "register_report_program: needs a name and a function");
  std::lock_guard<std::mutex> lock(registry_mutex());
  registry()[name] = ReportProgramInfo{name, description, std::move(program)};
}

std::vector<ReportProgramInfo> report_programs() {
  std::lock_guard<std::mutex> lock(registry_mutex());
  std::vector<ReportProgramInfo> out;
  for (const auto& entry : registry()) out.push_back(entry.second);
  return out;
}

// ---- running ---------------------------------------------------------------

trace::KindCounts CommReport::get_comm_counts() const { return comm_counts(reference_view(trace)); }

trace::ModuleCounts CommReport::get_comm_module_counts() const { return comm_module_counts(reference_view(trace)); }

CommReport run_comm_report(const ReportOptions& options) {
  ReportProgram program;
  {
    std::lock_guard<std::mutex> lock(registry_mutex());
    auto it = registry().find(options.program);
    if (it == registry().end()) {
      std::string names;
      for (const auto& entry : registry()) names += (names.empty() ? "" : ", ") + entry.first;
      TORCH_CHECK(false, "run_comm_report: unknown program '", options.program, "'; registered: ",
                  names.empty() ? "(none: register programs with register_report_program, e.g. examples::register_report_programs)" : names);
    }
    program = it->second.program;
  }
  TORCH_CHECK(options.world_size >= 1, "run_comm_report: world_size must be >= 1, got ", options.world_size);
  auto run_rank = [&](World& world, CommDebugMode& mode) {
    ReportContext ctx(options, mode);
    program(world, ctx);
    TORCH_CHECK(ctx.traced(), "report program '", options.program,
                "' never called ctx.trace(...): nothing was traced");
  };
  CommReport report;
  report.options = options;
  if (options.backend == BackendKind::kFake) {
    FakeWorldTrace world_trace;
    run_fake_world(options.world_size, [&](World& world) {
      CommDebugMode mode(&world_trace);
      run_rank(world, mode);
    });
    report.trace = world_trace.trace();
  } else if (options.backend == BackendKind::kSolo) {
    TORCH_CHECK(options.rank >= 0 && options.rank < options.world_size, "run_comm_report: solo rank ",
                options.rank, " is outside the world of ", options.world_size);
    SoloOptions solo;
    solo.device = options.meta ? c10::Device(c10::kMeta) : c10::Device(c10::kCPU);
    run_solo_world(
        options.world_size, options.rank,
        [&](World& world) {
          CommDebugMode mode;
          run_rank(world, mode);
          mode.exit();
          report.trace = mode.trace();
        },
        solo);
  } else {
    TORCH_CHECK(false, "run_comm_report: backend ", backend_kind_name(options.backend),
                " is not supported; use the fake world or solo mode");
  }
  return report;
}

// ---- writers ---------------------------------------------------------------

std::string report_json(const CommReport& report) {
  const trace::CommTrace view = reference_view(report.trace);
  Json j;
  j["dtensor_report_version"] = 1;
  j["program"] = report.options.program;
  j["backend"] = backend_kind_name(report.options.backend);
  j["world_size"] = report.options.world_size;
  j["rank"] = view.rank;
  j["args"] = report.options.args;
  if (view.mesh) {
    j["mesh"] = {
        {"shape", view.mesh->shape}, {"dim_names", view.mesh->dim_names}, {"device", view.mesh->device}};
  }
  j["total_collectives"] = total_counts(view);
  j["counts"] = comm_counts(view);
  Json modules = Json::object();
  for (const auto& [fqn, phases] : comm_module_counts(view)) modules[fqn] = phases;
  j["module_counts"] = modules;
  Json bytes = Json::object();
  Json estimated = Json::object();
  double total_us = 0;
  for (const auto& [kind, dims] : stats_by_kind_and_dim(view, report.options.cost_model)) {
    double kind_us = 0;
    for (const auto& [dim, s] : dims) {
      bytes[kind][dim] = s.bytes;
      kind_us += s.estimated_us;
    }
    estimated[kind] = kind_us;
    total_us += kind_us;
  }
  j["bytes"] = bytes;
  j["origins"] = origins_json(view);
  estimated["total"] = total_us;
  j["estimated_us"] = estimated;
  j["cost_model"] = {{"latency_us", report.options.cost_model.latency_us},
                     {"bandwidth_gbytes_per_s", report.options.cost_model.bandwidth_gbytes_per_s},
                     {"step_latency_us", report.options.cost_model.step_latency_us}};
  j["differing_ranks"] = report.trace.differing_ranks;
  j["rank_differences"] = report.trace.rank_differences;
  return j.dump(2) + "\n";
}

std::string report_markdown(const CommReport& report) {
  const trace::CommTrace view = reference_view(report.trace);
  const ReportOptions& o = report.options;
  std::ostringstream md;
  md << "# Comm report: " << o.program << "\n\n";
  md << "- backend: " << backend_kind_name(o.backend) << ", world size " << o.world_size;
  if (o.backend == BackendKind::kSolo) {
    md << ", simulated rank " << o.rank << (o.meta ? " (meta tensors)" : "");
  } else {
    md << ", counts of rank " << view.rank << " ("
       << (report.trace.differing_ranks.empty() ? "every rank agrees" : "RANKS DIFFER, see below") << ")";
  }
  md << "\n";
  if (!o.args.empty()) {
    md << "- args:";
    for (const auto& [k, v] : o.args) md << ' ' << k << '=' << v;
    md << "\n";
  }
  if (view.mesh) {
    md << "- mesh: [";
    for (size_t i = 0; i < view.mesh->shape.size(); ++i) {
      md << (i ? ", " : "") << (view.mesh->dim_names.empty() ? "" : view.mesh->dim_names[i] + "=")
         << view.mesh->shape[i];
    }
    md << "] on " << view.mesh->device << "\n";
  }
  const auto stats = stats_by_kind_and_dim(view, o.cost_model);
  double total_us = 0;
  for (const auto& kind : stats) {
    for (const auto& dim : kind.second) total_us += dim.second.estimated_us;
  }
  md << "- collectives: " << total_counts(view) << ", estimated " << format_us(total_us)
     << " us (alpha-beta: " << o.cost_model.latency_us << " us latency + " << o.cost_model.step_latency_us
     << " us per ring step, " << o.cost_model.bandwidth_gbytes_per_s << " GB/s)\n\n";

  md << "## Collectives per module\n\n";
  md << "| Module | trace::Phase | Collective | Count | Bytes |\n| --- | --- | --- | ---: | ---: |\n";
  const trace::ModuleCounts counts = comm_module_counts(view);
  const trace::ModuleCounts bytes = comm_module_bytes(view);
  for (const auto& [fqn, phases] : counts) {
    for (const auto& [phase, kinds] : phases) {
      for (const auto& [kind, n] : kinds) {
        md << "| " << fqn << " | " << phase << " | " << kind << " | " << n << " | "
           << bytes.at(fqn).at(phase).at(kind) << " |\n";
      }
    }
  }
  md << "\n## Per collective and mesh dim\n\n";
  md << "| Collective | Mesh dim | Count | Bytes sent | Ring bytes per rank | Estimated us |\n"
     << "| --- | --- | ---: | ---: | ---: | ---: |\n";
  for (const auto& [kind, dims] : stats) {
    for (const auto& [dim, s] : dims) {
      md << "| " << kind << " | " << dim << " | " << s.count << " | " << s.bytes << " | " << s.ring_bytes
         << " | " << format_us(s.estimated_us) << " |\n";
    }
  }
  md << "\n## Why: collectives by origin\n\n";
  md << "| Module | trace::Phase | Collective | Explicit | Origin | Count |\n| --- | --- | --- | --- | --- | ---: |\n";
  for (const auto& [g, n] : origin_groups(view)) {
    md << "| " << g.module << " | " << g.phase << " | " << g.kind << " | " << (g.is_explicit ? "yes" : "no")
       << " | " << g.origin << " | " << n << " |\n";
  }
  if (!report.trace.memory.empty()) {  // worlds that count memory: See Note [Memory location]
    md << "\n## Memory per rank (traced part)\n\n| Rank | Peak bytes | Live at end | Cap | Peak at |\n"
       << "| ---: | ---: | ---: | ---: | --- |\n";
    for (const auto& [rank, m] : report.trace.memory) {
      md << "| " << rank << " | " << m.peak_bytes << " | " << m.current_bytes << " | "
         << (m.cap_bytes > 0 ? std::to_string(m.cap_bytes) : std::string("none")) << " | " << m.peak_location
         << " |\n";
    }
  }
  if (!report.trace.differing_ranks.empty()) {
    md << "\n## Ranks that differ from rank " << view.rank << "\n\n";
    for (const std::string& d : report.trace.rank_differences) md << "- " << d << "\n";
  }
  return md.str();
}

GoldenComparison compare_report_json(const std::string& expected_json, const std::string& actual_json) {
  const Json expected = parse_report(expected_json, "expected (golden)");
  const Json actual = parse_report(actual_json, "actual");
  std::vector<std::string> lines;
  // What changed and why first, when both runs recorded origins (goldens
  // written before origins existed are compared on counts and bytes only).
  if (expected.contains("origins") && actual.contains("origins")) {
    const auto why = origin_changes(read_origin_groups(expected, "expected (golden)"),
                                    read_origin_groups(actual, "actual"));
    lines.insert(lines.end(), why.begin(), why.end());
  }
  for (const char* key :
       {"program", "backend", "world_size", "total_collectives", "counts", "module_counts", "bytes"}) {
    const Json e = expected.contains(key) ? expected[key] : Json();
    const Json a = actual.contains(key) ? actual[key] : Json();
    diff_json(e, a, key, lines);
  }
  GoldenComparison result;
  result.matches = lines.empty();
  for (const std::string& line : lines) result.diff += line + "\n";
  return result;
}

}  // namespace dtensor::debug
