// Comm trace JSON reader: validates every field it uses and converts the
// problem into one readable message. See trace_loader.h.
#include "gui/model/trace_loader.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <exception>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <stdexcept>

namespace dtensor::gui {
namespace {

using nlohmann::json;

// Thrown inside this file only; parse_trace_json turns it into an error string.
struct FormatError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

constexpr int kMaxDepth = 128;
constexpr std::streamoff kMaxFileBytes = std::streamoff{256} << 20;

[[noreturn]] void fail(const std::string& where, const std::string& what) {
  throw FormatError(where + ": " + what);
}

std::string type_of(const json& j) { return j.type_name(); }

int64_t read_int(const json& j, const std::string& where, int64_t min_value) {
  if (!j.is_number_integer()) fail(where, "expected an integer, got " + type_of(j));
  if (j.is_number_unsigned() &&
      j.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    fail(where, "integer too large");
  }
  int64_t value = j.get<int64_t>();
  if (value < min_value)
    fail(where, "expected >= " + std::to_string(min_value) + ", got " + std::to_string(value));
  return value;
}

std::string read_string(const json& j, const std::string& where) {
  if (!j.is_string()) fail(where, "expected a string, got " + type_of(j));
  return j.get<std::string>();
}

std::vector<int64_t> read_int_list(const json& j, const std::string& where, int64_t min_value) {
  if (!j.is_array()) fail(where, "expected an array of integers, got " + type_of(j));
  std::vector<int64_t> out;
  for (size_t i = 0; i < j.size(); ++i) {
    out.push_back(read_int(j[i], where + "[" + std::to_string(i) + "]", min_value));
  }
  return out;
}

// The member `key` of object `j`, or nullptr when absent or null.
const json* member(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return nullptr;
  return &*it;
}

// [[name, count], ...] or {"name": count}: collective counts or bytes.
KindMap read_kind_map(const json& j, const std::string& where) {
  KindMap out;
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it)
      out[it.key()] += read_int(it.value(), where + "." + it.key(), 0);
    return out;
  }
  if (!j.is_array()) fail(where, "expected [[name, count], ...], got " + type_of(j));
  for (size_t i = 0; i < j.size(); ++i) {
    std::string at = where + "[" + std::to_string(i) + "]";
    const json& pair = j[i];
    if (!pair.is_array() || pair.size() != 2) fail(at, "expected a [name, count] pair");
    out[read_string(pair[0], at + "[0]")] += read_int(pair[1], at + "[1]", 0);
  }
  return out;
}

// [[name, placements], ...] or {"name": "placements"}.
std::vector<std::pair<std::string, std::string>> read_parameters(const json& j,
                                                                 const std::string& where) {
  std::vector<std::pair<std::string, std::string>> out;
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it)
      out.emplace_back(it.key(), read_string(it.value(), where + "." + it.key()));
    return out;
  }
  if (!j.is_array()) fail(where, "expected [[name, placements], ...], got " + type_of(j));
  for (size_t i = 0; i < j.size(); ++i) {
    std::string at = where + "[" + std::to_string(i) + "]";
    if (!j[i].is_array() || j[i].size() != 2) fail(at, "expected a [name, placements] pair");
    out.emplace_back(read_string(j[i][0], at + "[0]"), read_string(j[i][1], at + "[1]"));
  }
  return out;
}

std::vector<TraceOperation> read_operations(const json& j, const std::string& where) {
  if (!j.is_array()) fail(where, "expected an array of operations, got " + type_of(j));
  std::vector<TraceOperation> out;
  for (size_t i = 0; i < j.size(); ++i) {
    std::string at = where + "[" + std::to_string(i) + "]";
    if (!j[i].is_object()) fail(at, "expected an object, got " + type_of(j[i]));
    TraceOperation op;
    if (const json* v = member(j[i], "name")) op.name = read_string(*v, at + ".name");
    if (const json* v = member(j[i], "device_mesh"))
      op.device_mesh = read_string(*v, at + ".device_mesh");
    if (const json* v = member(j[i], "input_sharding"); v && v->is_array()) {
      for (size_t k = 0; k < v->size(); ++k) {
        if ((*v)[k].is_string()) op.input_sharding.push_back((*v)[k].get<std::string>());
      }
    }
    out.push_back(std::move(op));
  }
  return out;
}

ModuleNode read_node(const json& j, const std::string& where, int depth) {
  if (depth > kMaxDepth) fail(where, "module tree deeper than " + std::to_string(kMaxDepth));
  if (!j.is_object()) fail(where, "expected a module object, got " + type_of(j));
  ModuleNode node;
  node.fqn = depth == 0 ? "Global" : "";
  if (const json* v = member(j, "fqn")) node.fqn = read_string(*v, where + ".fqn");
  if (const json* v = member(j, "module_type"))
    node.module_type = read_string(*v, where + ".module_type");
  if (const json* v = member(j, "parameters"))
    node.parameters = read_parameters(*v, where + ".parameters");
  if (const json* v = member(j, "collectives_forward"))
    node.forward_counts = read_kind_map(*v, where + ".collectives_forward");
  if (const json* v = member(j, "collectives_backward"))
    node.backward_counts = read_kind_map(*v, where + ".collectives_backward");
  if (const json* v = member(j, "bytes_forward"))
    node.forward_bytes = read_kind_map(*v, where + ".bytes_forward");
  if (const json* v = member(j, "bytes_backward"))
    node.backward_bytes = read_kind_map(*v, where + ".bytes_backward");
  if (const json* v = member(j, "operations_forward"))
    node.forward_operations = read_operations(*v, where + ".operations_forward");
  if (const json* v = member(j, "operations_backward"))
    node.backward_operations = read_operations(*v, where + ".operations_backward");
  if (const json* v = member(j, "children")) {
    if (!v->is_array())
      fail(where + ".children", "expected an array of modules, got " + type_of(*v));
    for (size_t i = 0; i < v->size(); ++i) {
      node.children.push_back(
          read_node((*v)[i], where + ".children[" + std::to_string(i) + "]", depth + 1));
    }
  }
  if (node.fqn.empty()) fail(where + ".fqn", "a module needs a non-empty fqn");
  return node;
}

TraceEvent read_event(const json& j, const std::string& at) {
  if (!j.is_object()) fail(at, "expected an event object, got " + type_of(j));
  TraceEvent e;
  const json* rank = member(j, "rank");
  const json* seq = member(j, "seq");
  const json* kind = member(j, "kind");
  if (!rank || !seq || !kind) fail(at, "an event needs \"rank\", \"seq\" and \"kind\"");
  e.rank = read_int(*rank, at + ".rank", 0);
  e.seq = read_int(*seq, at + ".seq", 0);
  e.kind = read_string(*kind, at + ".kind");
  if (const json* v = member(j, "bytes")) e.bytes = read_int(*v, at + ".bytes", 0);
  if (const json* v = member(j, "group")) e.group = read_int_list(*v, at + ".group", 0);
  if (const json* v = member(j, "mesh_dim"))
    e.mesh_dim = static_cast<int>(std::min<int64_t>(read_int(*v, at + ".mesh_dim", -1), 64));
  if (const json* v = member(j, "module")) e.module = read_string(*v, at + ".module");
  if (const json* v = member(j, "phase")) e.phase = read_string(*v, at + ".phase");
  if (const json* v = member(j, "shape")) e.shape = read_int_list(*v, at + ".shape", 0);
  if (const json* v = member(j, "dtype")) e.dtype = read_string(*v, at + ".dtype");
  return e;
}

void read_events(const json& j, Trace* trace) {
  if (!j.is_array()) fail("$.events", "expected an array of events, got " + type_of(j));
  std::set<std::string> odd_phases;
  for (size_t i = 0; i < j.size(); ++i) {
    TraceEvent e = read_event(j[i], "$.events[" + std::to_string(i) + "]");
    if (e.phase != "forward" && e.phase != "backward") odd_phases.insert(e.phase);
    trace->events.push_back(std::move(e));
  }
  for (const std::string& phase : odd_phases) {
    trace->warnings.push_back("events with phase \"" + phase + "\" (expected forward or backward)");
  }
  std::stable_sort(trace->events.begin(), trace->events.end(),
                   [](const TraceEvent& a, const TraceEvent& b) {
                     return std::tie(a.rank, a.seq) < std::tie(b.rank, b.seq);
                   });
}

void read_per_rank(const json& root, Trace* trace) {
  if (const json* v = member(root, "per_rank_counts")) {
    if (!v->is_object())
      fail("$.per_rank_counts",
           "expected an object {rank: {collective: count}}, got " + type_of(*v));
    for (auto it = v->begin(); it != v->end(); ++it) {
      std::string at = "$.per_rank_counts." + it.key();
      char* end = nullptr;
      long long rank = std::strtoll(it.key().c_str(), &end, 10);
      if (it.key().empty() || *end != '\0' || rank < 0) fail(at, "the key must be a rank number");
      trace->per_rank_counts[rank] = read_kind_map(it.value(), at);
    }
  }
  if (const json* v = member(root, "differing_ranks")) {
    trace->differing_ranks = read_int_list(*v, "$.differing_ranks", 0);
  }
}

void read_root_fields(const json& root, Trace* trace) {
  if (const json* v = member(root, "dtensor_schema_version")) {
    trace->schema_version =
        static_cast<int>(std::min<int64_t>(read_int(*v, "$.dtensor_schema_version", 1), 1 << 20));
    if (trace->schema_version > kTraceSchemaVersion) {
      throw FormatError("dtensor_schema_version is " + std::to_string(trace->schema_version) +
                        " but this viewer reads version " + std::to_string(kTraceSchemaVersion) +
                        "; use a newer dtensor-viewer");
    }
  }
  if (const json* v = member(root, "world_size"))
    trace->world_size = read_int(*v, "$.world_size", 1);
  if (const json* v = member(root, "rank")) trace->rank = read_int(*v, "$.rank", -1);
  if (const json* v = member(root, "mesh")) {
    if (!v->is_object())
      fail("$.mesh", "expected {\"shape\": [...], \"dim_names\": [...]}, got " + type_of(*v));
    TraceMesh mesh;
    if (const json* s = member(*v, "shape")) mesh.shape = read_int_list(*s, "$.mesh.shape", 1);
    if (const json* n = member(*v, "dim_names")) {
      if (!n->is_array())
        fail("$.mesh.dim_names", "expected an array of strings, got " + type_of(*n));
      for (size_t i = 0; i < n->size(); ++i)
        mesh.dim_names.push_back(
            read_string((*n)[i], "$.mesh.dim_names[" + std::to_string(i) + "]"));
    }
    trace->mesh = std::move(mesh);
  }
}

// Fills per_rank_counts / differing_ranks / world_size when the file lacks them.
void derive_missing(Trace* trace) {
  int64_t max_rank = -1;
  for (const TraceEvent& e : trace->events) max_rank = std::max(max_rank, e.rank);
  for (const auto& [rank, counts] : trace->per_rank_counts) max_rank = std::max(max_rank, rank);
  if (trace->world_size == 0) trace->world_size = max_rank + 1;
  if (max_rank >= trace->world_size) {
    throw FormatError("rank " + std::to_string(max_rank) + " appears but world_size is " +
                      std::to_string(trace->world_size));
  }
  if (trace->per_rank_counts.empty()) {
    for (const TraceEvent& e : trace->events) ++trace->per_rank_counts[e.rank][e.kind];
  }
  if (trace->differing_ranks.empty() && !trace->per_rank_counts.empty()) {
    const KindMap& first = trace->per_rank_counts.begin()->second;
    for (const auto& [rank, counts] : trace->per_rank_counts) {
      if (counts != first) trace->differing_ranks.push_back(rank);
    }
  }
}

// nlohmann's "[json.exception.parse_error.101] parse error at ..." without the tag.
std::string strip_exception_tag(const std::string& message) {
  if (message.rfind("[json.exception", 0) == 0) {
    size_t close = message.find("] ");
    if (close != std::string::npos) return message.substr(close + 2);
  }
  return message;
}

}  // namespace

TraceLoadResult parse_trace_json(std::string_view text, const std::string& source) {
  TraceLoadResult result;
  try {
    if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) {
      result.error = "'" + source + "' is empty: expected a comm trace JSON object";
      return result;
    }
    json root = json::parse(text.begin(), text.end());
    if (!root.is_object()) fail("$", "expected a JSON object (a comm trace), got " + type_of(root));
    Trace trace;
    trace.source = source;
    read_root_fields(root, &trace);
    trace.root = read_node(root, "$", /*depth=*/0);
    if (const json* v = member(root, "events")) read_events(*v, &trace);
    read_per_rank(root, &trace);
    derive_missing(&trace);
    result.trace = std::move(trace);
  } catch (const json::parse_error& e) {
    result.error = "'" + source + "' is not valid JSON: " + strip_exception_tag(e.what());
  } catch (const std::exception& e) {
    result.error = "'" + source + "' is not a comm trace (debug/comm_trace_schema.md): " +
                   strip_exception_tag(e.what());
  }
  return result;
}

TraceLoadResult load_trace_file(const std::string& path) {
  TraceLoadResult result;
  try {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      result.error = "cannot open '" + path + "': " + std::strerror(errno);
      return result;
    }
    in.seekg(0, std::ios::end);
    std::streamoff size = in.tellg();
    if (size < 0) {
      result.error = "cannot read '" + path + "' (is it a directory?)";
      return result;
    }
    if (size > kMaxFileBytes) {
      result.error = "'" + path + "' is larger than 256 MiB; not loading it";
      return result;
    }
    in.seekg(0, std::ios::beg);
    std::string text(static_cast<size_t>(size), '\0');
    in.read(text.data(), size);
    if (!in) {
      result.error = "cannot read '" + path + "'";
      return result;
    }
    return parse_trace_json(text, path);
  } catch (const std::exception& e) {
    result.error = "cannot read '" + path + "': " + e.what();
  }
  return result;
}

}  // namespace dtensor::gui
