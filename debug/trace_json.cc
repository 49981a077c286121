// Comm trace JSON: module tree writer/reader and schema validation.
#include "debug/trace_json.h"

#include <c10/util/Exception.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace dtensor::debug {
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

// ---- reading -------------------------------------------------------------

std::vector<int64_t> ints(const Json& j) {
  std::vector<int64_t> out;
  for (const Json& e : j) out.push_back(e.get<int64_t>());
  return out;
}

std::vector<std::vector<int64_t>> shapes(const Json& j) {
  std::vector<std::vector<int64_t>> out;
  for (const Json& e : j) {
    if (e.is_array()) out.push_back(ints(e));
  }
  return out;
}

KindCounts counts_of(const Json& node, const char* key) {
  KindCounts out;
  if (!node.contains(key)) return out;
  for (const Json& e : node[key]) out[e[0].get<std::string>()] += e[1].get<int64_t>();
  return out;
}

struct TreeReader {
  CommTrace& trace;
  bool synthesize_collectives;
  int64_t op_rank;

  // Adds the node (parent before children), its operations and, for PyTorch
  // dumps without events, collectives rebuilt from its own counts.
  void read(const Json& j, const std::string& parent) {
    const std::string fqn = j["fqn"].get<std::string>();
    if (fqn != kGlobalFqn) {
      ModuleRecord m;
      m.fqn = fqn;
      m.module_type = j["module_type"].get<std::string>();
      m.parent = parent;
      for (const Json& p : j["parameters"])
        m.parameters.emplace_back(p[0].get<std::string>(), p[1].get<std::string>());
      trace.modules.push_back(std::move(m));
    }
    for (const char* key : {"operations_forward", "operations_backward"}) {
      if (!j.contains(key)) continue;
      for (const Json& o : j[key]) {
        OpRecord op;
        op.rank = op_rank;
        op.name = o["name"].get<std::string>();
        op.module = fqn;
        op.phase = std::string(key) == "operations_forward" ? Phase::kForward : Phase::kBackward;
        if (o.contains("input_shape")) op.input_shapes = shapes(o["input_shape"]);
        if (o.contains("input_sharding"))
          op.input_sharding = o["input_sharding"].get<std::vector<std::string>>();
        if (o.contains("device_mesh")) op.device_mesh = o["device_mesh"].get<std::string>();
        op.dtensor = !op.input_sharding.empty();
        trace.operations.push_back(std::move(op));
      }
    }
    if (synthesize_collectives) synthesize(j, fqn);
    for (const Json& child : j["children"]) read(child, fqn);
  }

  // Own counts = this node's counts minus its children's.
  void synthesize(const Json& j, const std::string& fqn) {
    for (Phase phase : {Phase::kForward, Phase::kBackward}) {
      const bool fw = phase == Phase::kForward;
      KindCounts own = counts_of(j, fw ? "collectives_forward" : "collectives_backward");
      KindCounts own_bytes = counts_of(j, fw ? "bytes_forward" : "bytes_backward");
      for (const Json& child : j["children"]) {
        for (const auto& [k, n] : counts_of(child, fw ? "collectives_forward" : "collectives_backward"))
          own[k] -= n;
        for (const auto& [k, n] : counts_of(child, fw ? "bytes_forward" : "bytes_backward"))
          own_bytes[k] -= n;
      }
      for (const auto& [kind, n] : own) {
        for (int64_t i = 0; i < n; ++i) {
          CollectiveRecord r;
          r.rank = op_rank;
          r.seq = static_cast<int64_t>(trace.collectives.size());
          r.kind = kind;
          r.module = fqn;
          r.phase = phase;
          r.bytes = i == 0 ? own_bytes[kind] : 0;  // all of this module's bytes on its first record
          trace.collectives.push_back(std::move(r));
        }
      }
    }
  }
};

CollectiveRecord event_from_json(const Json& e) {
  CollectiveRecord r;
  r.rank = e["rank"].get<int64_t>();
  r.seq = e["seq"].get<int64_t>();
  r.kind = e["kind"].get<std::string>();
  r.bytes = e["bytes"].get<int64_t>();
  r.output_bytes = e.value("output_bytes", int64_t{0});
  r.group = ints(e["group"]);
  r.mesh_dim = e["mesh_dim"].get<int64_t>();
  r.mesh_dim_name = e.value("mesh_dim_name", std::string());
  r.module = e["module"].get<std::string>();
  r.phase = *parse_phase(e["phase"].get<std::string>());
  if (e.contains("input_shapes")) {
    r.input_shapes = shapes(e["input_shapes"]);
  } else if (e.contains("shape")) {
    r.input_shapes = {ints(e["shape"])};
  }
  if (e.contains("output_shapes")) r.output_shapes = shapes(e["output_shapes"]);
  r.dtype = e.value("dtype", std::string());
  r.reduce_op = e.value("reduce_op", std::string());
  r.ts_us = e.value("ts_us", 0.0);
  return r;
}

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

CommTrace comm_trace_from_json(const std::string& text) {
  std::vector<std::string> errors = validate_comm_trace_json(text);
  TORCH_CHECK(errors.empty(), "comm trace JSON does not match debug/comm_trace_schema.md: ", errors.front(),
              errors.size() > 1 ? " (and " + std::to_string(errors.size() - 1) + " more)" : std::string());
  Json j = Json::parse(text);
  CommTrace trace;
  trace.rank = j.value("rank", int64_t{0});
  trace.world_size = j.value("world_size", int64_t{1});
  const int64_t op_rank = trace.rank >= 0 ? trace.rank : j.value("reference_rank", int64_t{0});
  const bool has_events = j.contains("events");
  TreeReader{trace, !has_events, op_rank}.read(j, kGlobalFqn);
  if (has_events) {
    for (const Json& e : j["events"]) trace.collectives.push_back(event_from_json(e));
  }
  if (j.contains("mesh")) {
    MeshRecord mesh;
    mesh.shape = ints(j["mesh"].value("shape", Json::array()));
    mesh.dim_names = j["mesh"].value("dim_names", std::vector<std::string>{});
    mesh.device = j["mesh"].value("device", std::string());
    trace.mesh = mesh;
  }
  if (j.contains("per_rank_counts")) {
    for (const auto& [rank, counts] : j["per_rank_counts"].items()) {
      trace.per_rank_counts[std::stoll(rank)] = counts.get<std::map<std::string, int64_t>>();
    }
  }
  if (j.contains("differing_ranks")) trace.differing_ranks = ints(j["differing_ranks"]);
  if (j.contains("rank_differences"))
    trace.rank_differences = j["rank_differences"].get<std::vector<std::string>>();
  return trace;
}

void write_text_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  TORCH_CHECK(out.good(), "cannot open '", path, "' for writing");
  out << text;
  out.close();
  TORCH_CHECK(!out.fail(), "failed writing '", path, "'");
}

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  TORCH_CHECK(in.good(), "cannot open '", path, "' for reading");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace dtensor::debug
