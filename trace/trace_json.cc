// Comm trace JSON: the writer and the text file helpers. The reader is
// trace_json_reader.cc.
#include "trace/trace_json.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>

#include "trace/module_tree.h"

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

// A module node as generate_json_dump writes it; `filter` hides module data
// and operations below its noise level.
Json node_json(const ModuleNode& node, const NoiseFilter& filter) {
  Json j;
  j["fqn"] = node.fqn;
  j["module_type"] = filter.module_data ? node.module_type : "";
  j["parameters"] = Json::array();
  if (filter.module_data) {
    for (const auto& [name, placements] : node.parameters) j["parameters"].push_back(Json::array({name, placements}));
  }
  j["children"] = Json::array();
  for (const ModuleNode& child : node.children) j["children"].push_back(node_json(child, filter));
  j["collectives_forward"] = pairs(node.forward_counts);
  j["collectives_backward"] = pairs(node.backward_counts);
  for (const auto& [key, ops] : {std::pair<const char*, const std::vector<OpRecord>*>{"operations_forward", &node.forward_operations},
                                 {"operations_backward", &node.backward_operations}}) {
    j[key] = Json::array();
    for (const OpRecord& op : *ops) {
      if (filter.shows(op)) j[key].push_back(op_json(op));
    }
  }
  j["operations_checkpointing"] = Json::array();  // PyTorch's key; recomputation is not separated here
  j["bytes_forward"] = pairs(node.forward_bytes);
  j["bytes_backward"] = pairs(node.backward_bytes);
  return j;
}

Json origin_json(const CollectiveOriginRecord& o) {
  Json j;
  j["explicit"] = o.is_explicit;
  j["cause"] = o.cause;
  j["op"] = o.op;
  j["input_index"] = o.input_index;
  j["from"] = origin_placements_text(o.from_placements);
  j["to"] = origin_placements_text(o.to_placements);
  j["mesh_dim"] = o.mesh_dim;
  j["step"] = o.step ? o.step->to_string() : std::string();
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

}  // namespace

std::string comm_trace_to_json(const CommTrace& trace, int noise_level, int indent) {
  const bool merged = trace.rank < 0;
  Json root = node_json(module_tree(trace), NoiseFilter(noise_level));
  root["dtensor_schema_version"] = kCommTraceSchemaVersion;
  root["noise_level"] = noise_level;
  root["world_size"] = trace.world_size;
  root["rank"] = trace.rank;
  if (merged) root["reference_rank"] = reference_rank(trace);
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
