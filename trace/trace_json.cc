// Comm trace JSON: the writer, the schema validator and the text file
// helpers. The reader is trace_json_reader.cc.
#include "trace/trace_json.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace dtensor::trace {
namespace {

using Json = nlohmann::ordered_json;

Json pairs(const KindCounts& counts) {
  Json out = Json::array();
  for (const auto& [kind, n] : counts) out.push_back(Json::array({kind, n}));
  return out;
}

Json op_json(const OpRecord& op) {
  Json j;
  j["name"] = op.name;
  j["input_shape"] = op.input_shapes;
  j["input_sharding"] = op.input_sharding;
  j["device_mesh"] = op.device_mesh;
  return j;
}

struct TreeWriter {
  TreeWriter(const CommTrace& v, int noise_level)
      : view(v), filter(noise_level), counts(comm_module_counts(v)), bytes(comm_module_bytes(v)) {}

  const CommTrace& view;  // one rank's records
  NoiseFilter filter;
  ModuleCounts counts;
  ModuleCounts bytes;

  Json node(const std::string& fqn) const {
    Json j;
    j["fqn"] = fqn;
    const ModuleRecord* m = find_module(view, fqn);
    j["module_type"] = filter.module_data && m != nullptr ? m->module_type : "";
    j["parameters"] = Json::array();
    if (filter.module_data && m != nullptr) {
      for (const auto& [name, placements] : m->parameters) {
        j["parameters"].push_back(Json::array({name, placements}));
      }
    }
    j["children"] = Json::array();
    for (const std::string& child : module_children(view, fqn)) j["children"].push_back(node(child));
    auto phase_counts = [&](const ModuleCounts& table, const char* phase) {
      auto it = table.find(fqn);
      return it == table.end() ? Json::array() : pairs(it->second.at(phase));
    };
    j["collectives_forward"] = phase_counts(counts, "forward");
    j["collectives_backward"] = phase_counts(counts, "backward");
    j["operations_forward"] = Json::array();
    j["operations_backward"] = Json::array();
    for (const OpRecord& op : view.operations) {
      if (op.module != fqn || !filter.shows(op)) continue;
      j[op.phase == Phase::kForward ? "operations_forward" : "operations_backward"].push_back(op_json(op));
    }
    j["operations_checkpointing"] = Json::array();  // PyTorch's key; recomputation is not separated here
    j["bytes_forward"] = phase_counts(bytes, "forward");
    j["bytes_backward"] = phase_counts(bytes, "backward");
    return j;
  }
};

Json origin_json(const CollectiveOriginRecord& o) {
  Json j;
  j["explicit"] = o.is_explicit;
  j["cause"] = o.cause;
  j["op"] = o.op;
  j["input_index"] = o.input_index;
  j["from"] = o.from_placements;
  j["to"] = o.to_placements;
  j["mesh_dim"] = o.mesh_dim;
  j["step"] = o.step;
  j["strategy"] = o.strategy;
  j["strategy_cost"] = o.strategy_cost;
  j["rejected_strategy"] = o.rejected_strategy;
  j["rejected_cost"] = o.rejected_cost;
  return j;
}

Json event_json(const CollectiveRecord& r) {
  Json j;
  j["rank"] = r.rank;
  j["seq"] = r.seq;
  j["kind"] = r.kind;
  j["bytes"] = r.bytes;
  j["output_bytes"] = r.output_bytes;
  j["group"] = r.group;
  j["mesh_dim"] = r.mesh_dim;
  j["mesh_dim_name"] = r.mesh_dim_name;
  j["module"] = r.module;
  j["phase"] = phase_name(r.phase);
  j["shape"] = r.input_shapes.empty() ? std::vector<int64_t>{} : r.input_shapes.front();
  j["input_shapes"] = r.input_shapes;
  j["output_shapes"] = r.output_shapes;
  j["dtype"] = r.dtype;
  j["reduce_op"] = r.reduce_op;
  j["ts_us"] = r.ts_us;
  if (r.origin) j["origin"] = origin_json(*r.origin);
  return j;
}

// ---- validation ----------------------------------------------------------

struct Validator {
  std::vector<std::string> errors;

  void fail(const std::string& path, const std::string& message) { errors.push_back(path + ": " + message); }

  bool expect(const std::string& path, bool ok, const char* what) {
    if (!ok) fail(path, std::string("expected ") + what);
    return ok;
  }

  void int_list(const Json& j, const std::string& path) {
    if (!expect(path, j.is_array(), "an array of integers")) return;
    for (size_t i = 0; i < j.size(); ++i) {
      expect(path + "[" + std::to_string(i) + "]", j[i].is_number_integer(), "an integer");
    }
  }

  void shape_list(const Json& j, const std::string& path) {
    if (!expect(path, j.is_array(), "an array of shapes")) return;
    for (size_t i = 0; i < j.size(); ++i) int_list(j[i], path + "[" + std::to_string(i) + "]");
  }

  void pair_list(const Json& node, const char* key, const std::string& path, bool int_second) {
    const std::string p = path + "." + key;
    if (!node.contains(key)) return fail(p, "missing");
    const Json& j = node[key];
    if (!expect(p, j.is_array(), "an array")) return;
    for (size_t i = 0; i < j.size(); ++i) {
      const Json& e = j[i];
      bool ok = e.is_array() && e.size() == 2 && e[0].is_string() &&
                (int_second ? e[1].is_number_integer() : e[1].is_string());
      expect(p + "[" + std::to_string(i) + "]", ok, int_second ? "[name, count]" : "[name, placements]");
    }
  }

  void op(const Json& j, const std::string& path) {
    if (!expect(path, j.is_object(), "an operation object")) return;
    if (!j.contains("name") || !j["name"].is_string()) fail(path + ".name", "expected a string");
    if (j.contains("input_shape")) {
      const Json& s = j["input_shape"];
      // PyTorch writes shapes as strings ("torch.Size([8, 16])"); we write integer lists.
      bool ok = s.is_array();
      for (const Json& e : s) ok = ok && (e.is_array() || e.is_string());
      expect(path + ".input_shape", ok, "an array of shapes");
    }
    if (j.contains("input_sharding")) {
      const Json& s = j["input_sharding"];
      bool ok = s.is_array();
      for (const Json& e : s) ok = ok && e.is_string();
      expect(path + ".input_sharding", ok, "an array of strings");
    }
    if (j.contains("device_mesh")) expect(path + ".device_mesh", j["device_mesh"].is_string(), "a string");
  }

  void node(const Json& j, const std::string& path) {
    if (!expect(path, j.is_object(), "a module node object")) return;
    for (const char* key : {"fqn", "module_type"}) {
      if (!j.contains(key) || !j[key].is_string()) fail(path + "." + key, "expected a string");
    }
    pair_list(j, "parameters", path, /*int_second=*/false);
    pair_list(j, "collectives_forward", path, /*int_second=*/true);
    pair_list(j, "collectives_backward", path, /*int_second=*/true);
    for (const char* key : {"bytes_forward", "bytes_backward"}) {
      if (j.contains(key)) pair_list(j, key, path, /*int_second=*/true);
    }
    for (const char* key : {"operations_forward", "operations_backward", "operations_checkpointing"}) {
      if (!j.contains(key)) {
        if (std::string(key) != "operations_checkpointing") fail(path + "." + key, "missing");
        continue;
      }
      const Json& ops = j[key];
      if (!expect(path + "." + key, ops.is_array(), "an array")) continue;
      for (size_t i = 0; i < ops.size(); ++i) op(ops[i], path + "." + key + "[" + std::to_string(i) + "]");
    }
    if (!j.contains("children")) return fail(path + ".children", "missing");
    const Json& children = j["children"];
    if (!expect(path + ".children", children.is_array(), "an array")) return;
    for (size_t i = 0; i < children.size(); ++i)
      node(children[i], path + ".children[" + std::to_string(i) + "]");
  }

  void event(const Json& j, const std::string& path) {
    if (!expect(path, j.is_object(), "an event object")) return;
    for (const char* key : {"rank", "seq", "bytes", "mesh_dim"}) {
      if (!j.contains(key) || !j[key].is_number_integer()) fail(path + "." + key, "expected an integer");
    }
    for (const char* key : {"kind", "module"}) {
      if (!j.contains(key) || !j[key].is_string()) fail(path + "." + key, "expected a string");
    }
    if (!j.contains("phase") || !j["phase"].is_string() || !parse_phase(j["phase"].get<std::string>())) {
      fail(path + ".phase", "expected \"forward\" or \"backward\"");
    }
    if (!j.contains("group")) {
      fail(path + ".group", "missing");
    } else {
      int_list(j["group"], path + ".group");
    }
    if (j.contains("shape")) int_list(j["shape"], path + ".shape");
    for (const char* key : {"input_shapes", "output_shapes"}) {
      if (j.contains(key)) shape_list(j[key], path + "." + key);
    }
    if (j.contains("origin") && !j["origin"].is_null()) origin(j["origin"], path + ".origin");
  }

  void origin(const Json& j, const std::string& path) {
    if (!expect(path, j.is_object(), "an origin object")) return;
    if (!j.contains("explicit") || !j["explicit"].is_boolean()) fail(path + ".explicit", "expected a boolean");
    if (!j.contains("cause") || !j["cause"].is_string() || j["cause"].get<std::string>().empty())
      fail(path + ".cause", "expected a non-empty string");
    for (const char* key : {"op", "from", "to", "step", "strategy", "rejected_strategy"}) {
      if (j.contains(key)) expect(path + "." + key, j[key].is_string(), "a string");
    }
    for (const char* key : {"input_index", "mesh_dim"}) {
      if (j.contains(key)) {
        expect(path + "." + key, j[key].is_number_integer() && j[key].get<int64_t>() >= -1, "an integer >= -1");
      }
    }
    for (const char* key : {"strategy_cost", "rejected_cost"}) {
      if (j.contains(key)) expect(path + "." + key, j[key].is_number(), "a number");
    }
  }

  void root(const Json& j) {
    node(j, "$");
    if (!j.is_object()) return;
    if (j.contains("dtensor_schema_version")) {
      const Json& v = j["dtensor_schema_version"];
      if (!v.is_number_integer() || v.get<int>() < 1 || v.get<int>() > kCommTraceSchemaVersion) {
        fail("$.dtensor_schema_version", "expected an integer in [1, " +
                                             std::to_string(kCommTraceSchemaVersion) +
                                             "] (written by a newer dtensor?)");
      }
    }
    for (const char* key : {"world_size", "rank"}) {
      if (j.contains(key) && !j[key].is_number_integer())
        fail(std::string("$.") + key, "expected an integer");
    }
    if (j.contains("events")) {
      const Json& events = j["events"];
      if (expect("$.events", events.is_array(), "an array")) {
        for (size_t i = 0; i < events.size(); ++i) event(events[i], "$.events[" + std::to_string(i) + "]");
      }
    }
    if (j.contains("mesh")) {
      const Json& m = j["mesh"];
      if (expect("$.mesh", m.is_object(), "an object") && m.contains("shape"))
        int_list(m["shape"], "$.mesh.shape");
    }
    if (j.contains("memory")) {
      const Json& m = j["memory"];
      if (expect("$.memory", m.is_object(), "an object of rank -> {peak_bytes, current_bytes, cap_bytes, peak_location}")) {
        for (const auto& [rank, r] : m.items()) {
          bool ok = r.is_object();
          for (const char* k : {"peak_bytes", "current_bytes", "cap_bytes"}) {
            ok = ok && (!r.contains(k) || (r[k].is_number_integer() && r[k].get<int64_t>() >= 0));
          }
          ok = ok && (!r.contains("peak_location") || r["peak_location"].is_string());
          expect("$.memory." + rank, ok, "{peak_bytes, current_bytes, cap_bytes: integers >= 0, peak_location: string}");
        }
      }
    }
    if (j.contains("differing_ranks")) int_list(j["differing_ranks"], "$.differing_ranks");
    if (j.contains("per_rank_counts")) {
      const Json& p = j["per_rank_counts"];
      if (expect("$.per_rank_counts", p.is_object(), "an object of rank -> counts")) {
        for (const auto& [rank, counts] : p.items()) {
          bool ok = counts.is_object();
          for (const auto& c : counts) ok = ok && c.is_number_integer();
          expect("$.per_rank_counts." + rank, ok, "an object of collective -> count");
        }
      }
    }
  }
};

}  // namespace

std::string comm_trace_to_json(const CommTrace& trace, int noise_level, int indent) {
  const std::vector<int64_t> ranks = ranks_in(trace);
  const bool merged = trace.rank < 0;
  const int64_t reference = merged ? (ranks.empty() ? 0 : ranks.front()) : trace.rank;
  const CommTrace view = merged ? rank_view(trace, reference) : trace;
  Json root = TreeWriter(view, noise_level).node(kGlobalFqn);
  root["dtensor_schema_version"] = kCommTraceSchemaVersion;
  root["noise_level"] = noise_level;
  root["world_size"] = trace.world_size;
  root["rank"] = trace.rank;
  if (merged) root["reference_rank"] = reference;
  if (trace.mesh) {
    Json mesh;
    mesh["shape"] = trace.mesh->shape;
    mesh["dim_names"] = trace.mesh->dim_names;
    mesh["device"] = trace.mesh->device;
    root["mesh"] = mesh;
  }
  root["events"] = Json::array();
  for (const CollectiveRecord& r : trace.collectives) root["events"].push_back(event_json(r));
  if (!trace.memory.empty()) {  // optional: worlds that count memory
    Json memory = Json::object();
    for (const auto& [rank, m] : trace.memory) {
      memory[std::to_string(rank)] = {{"peak_bytes", m.peak_bytes},
                                      {"current_bytes", m.current_bytes},
                                      {"cap_bytes", m.cap_bytes},
                                      {"peak_location", m.peak_location}};
    }
    root["memory"] = memory;
  }
  if (merged) {
    Json per_rank = Json::object();
    for (const auto& [rank, counts] : trace.per_rank_counts) per_rank[std::to_string(rank)] = counts;
    root["per_rank_counts"] = per_rank;
    root["differing_ranks"] = trace.differing_ranks;
    root["rank_differences"] = trace.rank_differences;
  }
  return root.dump(indent) + "\n";
}

std::vector<std::string> validate_comm_trace_json(const std::string& text) {
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return {"$: not valid JSON"};
  Validator v;
  v.root(j);
  return v.errors;
}

void write_text_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out.good()) throw TraceJsonError(TraceJsonError::Kind::kFile, "cannot open '" + path + "' for writing");
  out << text;
  out.close();
  if (out.fail()) throw TraceJsonError(TraceJsonError::Kind::kFile, "failed writing '" + path + "'");
}

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in.good()) throw TraceJsonError(TraceJsonError::Kind::kFile, "cannot open '" + path + "' for reading");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace dtensor::trace
