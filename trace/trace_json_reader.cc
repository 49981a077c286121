// Comm trace JSON reader: the document (read_comm_trace_json), checked key by
// key with the JSON path in every message, and the CommTrace it describes.
// See trace_json.h; the viewer's loader (gui/model/trace_loader.cc) adapts it.
#include <algorithm>
#include <cstdlib>
#include <limits>
#include <nlohmann/json.hpp>

#include "trace/trace_json.h"

namespace dtensor::trace {
namespace {

using Json = nlohmann::json;

constexpr int kMaxDepth = 128;

[[noreturn]] void fail(const std::string& where, const std::string& what) {
  throw TraceJsonError(TraceJsonError::Kind::kSchema, where + ": " + what);
}

std::string at(const std::string& where, size_t i) { return where + "[" + std::to_string(i) + "]"; }

int64_t read_int(const Json& j, const std::string& where, int64_t min_value) {
  if (!j.is_number_integer()) fail(where, std::string("expected an integer, got ") + j.type_name());
  if (j.is_number_unsigned() && j.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    fail(where, "integer too large");
  }
  const int64_t value = j.get<int64_t>();
  if (value < min_value) fail(where, "expected >= " + std::to_string(min_value) + ", got " + std::to_string(value));
  return value;
}

std::string read_string(const Json& j, const std::string& where) {
  if (!j.is_string()) fail(where, std::string("expected a string, got ") + j.type_name());
  return j.get<std::string>();
}

std::vector<int64_t> read_int_list(const Json& j, const std::string& where, int64_t min_value) {
  if (!j.is_array()) fail(where, std::string("expected an array of integers, got ") + j.type_name());
  std::vector<int64_t> out;
  for (size_t i = 0; i < j.size(); ++i) out.push_back(read_int(j[i], at(where, i), min_value));
  return out;
}

std::vector<std::string> read_string_list(const Json& j, const std::string& where) {
  if (!j.is_array()) fail(where, std::string("expected an array of strings, got ") + j.type_name());
  std::vector<std::string> out;
  for (size_t i = 0; i < j.size(); ++i) out.push_back(read_string(j[i], at(where, i)));
  return out;
}

// [[8, 16], ...]; with `skip_strings`, PyTorch's "torch.Size([8, 16])" entries are skipped.
std::vector<std::vector<int64_t>> read_shapes(const Json& j, const std::string& where, bool skip_strings) {
  if (!j.is_array()) fail(where, std::string("expected an array of shapes, got ") + j.type_name());
  std::vector<std::vector<int64_t>> out;
  for (size_t i = 0; i < j.size(); ++i) {
    if (skip_strings && j[i].is_string()) continue;
    out.push_back(read_int_list(j[i], at(where, i), 0));
  }
  return out;
}

// The member `key` of object `j`, or nullptr when absent or null.
const Json* member(const Json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return nullptr;
  return &*it;
}

// [[name, count], ...] or {"name": count}: collective counts or bytes.
KindCounts read_kind_counts(const Json& j, const std::string& where) {
  KindCounts out;
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) out[it.key()] += read_int(it.value(), where + "." + it.key(), 0);
    return out;
  }
  if (!j.is_array()) fail(where, std::string("expected [[name, count], ...], got ") + j.type_name());
  for (size_t i = 0; i < j.size(); ++i) {
    const Json& pair = j[i];
    if (!pair.is_array() || pair.size() != 2) fail(at(where, i), "expected a [name, count] pair");
    out[read_string(pair[0], at(where, i) + "[0]")] += read_int(pair[1], at(where, i) + "[1]", 0);
  }
  return out;
}

// [[name, placements], ...] or {"name": "placements"}.
std::vector<std::pair<std::string, std::string>> read_parameters(const Json& j, const std::string& where) {
  std::vector<std::pair<std::string, std::string>> out;
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it)
      out.emplace_back(it.key(), read_string(it.value(), where + "." + it.key()));
    return out;
  }
  if (!j.is_array()) fail(where, std::string("expected [[name, placements], ...], got ") + j.type_name());
  for (size_t i = 0; i < j.size(); ++i) {
    if (!j[i].is_array() || j[i].size() != 2) fail(at(where, i), "expected a [name, placements] pair");
    out.emplace_back(read_string(j[i][0], at(where, i) + "[0]"), read_string(j[i][1], at(where, i) + "[1]"));
  }
  return out;
}

std::vector<TraceJsonOp> read_operations(const Json& j, const std::string& where) {
  if (!j.is_array()) fail(where, std::string("expected an array of operations, got ") + j.type_name());
  std::vector<TraceJsonOp> out;
  for (size_t i = 0; i < j.size(); ++i) {
    const std::string w = at(where, i);
    if (!j[i].is_object()) fail(w, std::string("expected an operation object, got ") + j[i].type_name());
    TraceJsonOp op;
    if (const Json* v = member(j[i], "name")) op.name = read_string(*v, w + ".name");
    if (const Json* v = member(j[i], "input_shape")) op.input_shapes = read_shapes(*v, w + ".input_shape", true);
    if (const Json* v = member(j[i], "input_sharding")) op.input_sharding = read_string_list(*v, w + ".input_sharding");
    if (const Json* v = member(j[i], "device_mesh")) op.device_mesh = read_string(*v, w + ".device_mesh");
    out.push_back(std::move(op));
  }
  return out;
}

TraceJsonNode read_node(const Json& j, const std::string& where, int depth) {
  if (depth > kMaxDepth) fail(where, "module tree deeper than " + std::to_string(kMaxDepth));
  if (!j.is_object()) fail(where, std::string("expected a module object, got ") + j.type_name());
  TraceJsonNode node;
  node.fqn = depth == 0 ? kGlobalFqn : "";
  if (const Json* v = member(j, "fqn")) node.fqn = read_string(*v, where + ".fqn");
  if (const Json* v = member(j, "module_type")) node.module_type = read_string(*v, where + ".module_type");
  if (const Json* v = member(j, "parameters")) node.parameters = read_parameters(*v, where + ".parameters");
  const std::pair<const char*, KindCounts*> counts[] = {{"collectives_forward", &node.collectives_forward},
                                                        {"collectives_backward", &node.collectives_backward},
                                                        {"bytes_forward", &node.bytes_forward},
                                                        {"bytes_backward", &node.bytes_backward}};
  for (const auto& [key, out] : counts) {
    if (const Json* v = member(j, key)) *out = read_kind_counts(*v, where + "." + key);
  }
  if (const Json* v = member(j, "operations_forward"))
    node.operations_forward = read_operations(*v, where + ".operations_forward");
  if (const Json* v = member(j, "operations_backward"))
    node.operations_backward = read_operations(*v, where + ".operations_backward");
  if (const Json* v = member(j, "children")) {
    if (!v->is_array()) fail(where + ".children", std::string("expected an array of modules, got ") + v->type_name());
    for (size_t i = 0; i < v->size(); ++i)
      node.children.push_back(read_node((*v)[i], where + ".children" + at("", i), depth + 1));
  }
  if (node.fqn.empty()) fail(where + ".fqn", "a module needs a non-empty fqn");
  return node;
}

double read_number(const Json& j, const std::string& where) {
  if (!j.is_number()) fail(where, std::string("expected a number, got ") + j.type_name());
  return j.get<double>();
}

// An event's "origin" (schema version 2).
CollectiveOriginRecord read_origin(const Json& j, const std::string& where) {
  if (!j.is_object()) fail(where, std::string("expected an origin object, got ") + j.type_name());
  CollectiveOriginRecord o;
  if (const Json* v = member(j, "explicit")) {
    if (!v->is_boolean()) fail(where + ".explicit", std::string("expected a boolean, got ") + v->type_name());
    o.is_explicit = v->get<bool>();
  }
  if (const Json* v = member(j, "cause")) o.cause = read_string(*v, where + ".cause");
  if (o.cause.empty()) fail(where + ".cause", "an origin needs a non-empty cause");
  if (const Json* v = member(j, "op")) o.op = read_string(*v, where + ".op");
  if (const Json* v = member(j, "input_index")) o.input_index = read_int(*v, where + ".input_index", -1);
  if (const Json* v = member(j, "from")) o.from_placements = read_string(*v, where + ".from");
  if (const Json* v = member(j, "to")) o.to_placements = read_string(*v, where + ".to");
  if (const Json* v = member(j, "mesh_dim")) o.mesh_dim = read_int(*v, where + ".mesh_dim", -1);
  if (const Json* v = member(j, "step")) o.step = read_string(*v, where + ".step");
  if (const Json* v = member(j, "strategy")) o.strategy = read_string(*v, where + ".strategy");
  if (const Json* v = member(j, "strategy_cost")) o.strategy_cost = read_number(*v, where + ".strategy_cost");
  if (const Json* v = member(j, "rejected_strategy"))
    o.rejected_strategy = read_string(*v, where + ".rejected_strategy");
  if (const Json* v = member(j, "rejected_cost")) o.rejected_cost = read_number(*v, where + ".rejected_cost");
  return o;
}

TraceJsonEvent read_event(const Json& j, const std::string& where) {
  if (!j.is_object()) fail(where, std::string("expected an event object, got ") + j.type_name());
  const Json* rank = member(j, "rank");
  const Json* seq = member(j, "seq");
  const Json* kind = member(j, "kind");
  if (!rank || !seq || !kind) fail(where, "an event needs \"rank\", \"seq\" and \"kind\"");
  TraceJsonEvent e;
  e.rank = read_int(*rank, where + ".rank", 0);
  e.seq = read_int(*seq, where + ".seq", 0);
  e.kind = read_string(*kind, where + ".kind");
  if (const Json* v = member(j, "bytes")) e.bytes = read_int(*v, where + ".bytes", 0);
  if (const Json* v = member(j, "output_bytes")) e.output_bytes = read_int(*v, where + ".output_bytes", 0);
  if (const Json* v = member(j, "group")) e.group = read_int_list(*v, where + ".group", 0);
  if (const Json* v = member(j, "mesh_dim")) e.mesh_dim = read_int(*v, where + ".mesh_dim", -1);
  if (const Json* v = member(j, "mesh_dim_name")) e.mesh_dim_name = read_string(*v, where + ".mesh_dim_name");
  if (const Json* v = member(j, "module")) e.module = read_string(*v, where + ".module");
  if (const Json* v = member(j, "phase")) e.phase = read_string(*v, where + ".phase");
  if (const Json* v = member(j, "input_shapes")) {
    e.input_shapes = read_shapes(*v, where + ".input_shapes", false);
  } else if (const Json* s = member(j, "shape")) {
    e.input_shapes = {read_int_list(*s, where + ".shape", 0)};
  }
  if (const Json* v = member(j, "output_shapes")) e.output_shapes = read_shapes(*v, where + ".output_shapes", false);
  if (const Json* v = member(j, "dtype")) e.dtype = read_string(*v, where + ".dtype");
  if (const Json* v = member(j, "reduce_op")) e.reduce_op = read_string(*v, where + ".reduce_op");
  if (const Json* v = member(j, "ts_us")) {
    if (!v->is_number()) fail(where + ".ts_us", std::string("expected a number, got ") + v->type_name());
    e.ts_us = v->get<double>();
  }
  if (const Json* v = member(j, "origin")) e.origin = read_origin(*v, where + ".origin");
  return e;
}

void read_root_fields(const Json& root, TraceJsonDocument* doc) {
  if (const Json* v = member(root, "world_size")) doc->world_size = read_int(*v, "$.world_size", 1);
  if (const Json* v = member(root, "rank")) doc->rank = read_int(*v, "$.rank", -1);
  if (const Json* v = member(root, "reference_rank")) doc->reference_rank = read_int(*v, "$.reference_rank", 0);
  if (const Json* v = member(root, "mesh")) {
    if (!v->is_object())
      fail("$.mesh", std::string("expected {\"shape\": [...], \"dim_names\": [...]}, got ") + v->type_name());
    MeshRecord mesh;
    if (const Json* s = member(*v, "shape")) mesh.shape = read_int_list(*s, "$.mesh.shape", 1);
    if (const Json* n = member(*v, "dim_names")) mesh.dim_names = read_string_list(*n, "$.mesh.dim_names");
    if (const Json* d = member(*v, "device")) mesh.device = read_string(*d, "$.mesh.device");
    doc->mesh = std::move(mesh);
  }
}

void read_per_rank(const Json& root, TraceJsonDocument* doc) {
  if (const Json* v = member(root, "per_rank_counts")) {
    if (!v->is_object())
      fail("$.per_rank_counts", std::string("expected an object {rank: {collective: count}}, got ") + v->type_name());
    for (auto it = v->begin(); it != v->end(); ++it) {
      const std::string where = "$.per_rank_counts." + it.key();
      char* end = nullptr;
      const long long rank = std::strtoll(it.key().c_str(), &end, 10);
      if (it.key().empty() || *end != '\0' || rank < 0) fail(where, "the key must be a rank number");
      doc->per_rank_counts[rank] = read_kind_counts(it.value(), where);
    }
  }
  if (const Json* v = member(root, "memory")) {
    if (!v->is_object()) fail("$.memory", std::string("expected an object {rank: {peak_bytes, ...}}, got ") + v->type_name());
    for (auto it = v->begin(); it != v->end(); ++it) {
      const std::string where = "$.memory." + it.key();
      char* end = nullptr;
      const long long rank = std::strtoll(it.key().c_str(), &end, 10);
      if (it.key().empty() || *end != '\0' || rank < 0) fail(where, "the key must be a rank number");
      if (!it.value().is_object()) fail(where, "expected {peak_bytes, current_bytes, cap_bytes, peak_location}");
      RankMemoryRecord m;
      auto bytes = [&](const char* key, int64_t* out) {
        const Json* b = member(it.value(), key);
        if (b == nullptr) return;
        if (!b->is_number_integer() || b->get<int64_t>() < 0) fail(where + "." + key, "expected an integer >= 0");
        *out = b->get<int64_t>();
      };
      bytes("peak_bytes", &m.peak_bytes);
      bytes("current_bytes", &m.current_bytes);
      bytes("cap_bytes", &m.cap_bytes);
      if (const Json* l = member(it.value(), "peak_location")) m.peak_location = read_string(*l, where + ".peak_location");
      doc->memory[rank] = std::move(m);
    }
  }
  if (const Json* v = member(root, "differing_ranks")) doc->differing_ranks = read_int_list(*v, "$.differing_ranks", 0);
  if (const Json* v = member(root, "rank_differences"))
    doc->rank_differences = read_string_list(*v, "$.rank_differences");
}

// nlohmann's "[json.exception.parse_error.101] parse error at ..." without the tag.
std::string strip_exception_tag(const std::string& message) {
  if (message.rfind("[json.exception", 0) == 0) {
    const size_t close = message.find("] ");
    if (close != std::string::npos) return message.substr(close + 2);
  }
  return message;
}

// ---- document -> CommTrace ---------------------------------------------------

struct TraceBuilder {
  CommTrace& trace;
  bool synthesize_collectives;
  int64_t op_rank;

  // Adds the node (parent before children), its operations and, for PyTorch
  // dumps without events, collectives rebuilt from its own counts.
  void add(const TraceJsonNode& node, const std::string& parent) {
    if (node.fqn != kGlobalFqn) trace.modules.push_back({node.fqn, node.module_type, parent, node.parameters});
    for (Phase phase : {Phase::kForward, Phase::kBackward}) {
      for (const TraceJsonOp& o : phase == Phase::kForward ? node.operations_forward : node.operations_backward) {
        OpRecord op;
        op.rank = op_rank;
        op.name = o.name;
        op.module = node.fqn;
        op.phase = phase;
        op.input_shapes = o.input_shapes;
        op.input_sharding = o.input_sharding;
        op.device_mesh = o.device_mesh;
        op.dtensor = !op.input_sharding.empty();
        trace.operations.push_back(std::move(op));
      }
    }
    if (synthesize_collectives) synthesize(node);
    for (const TraceJsonNode& child : node.children) add(child, node.fqn);
  }

  // Own counts = this node's counts minus its children's; all of a module's
  // bytes go on its first record of a kind.
  void synthesize(const TraceJsonNode& node) {
    for (Phase phase : {Phase::kForward, Phase::kBackward}) {
      const bool fw = phase == Phase::kForward;
      KindCounts own = fw ? node.collectives_forward : node.collectives_backward;
      KindCounts own_bytes = fw ? node.bytes_forward : node.bytes_backward;
      for (const TraceJsonNode& child : node.children) {
        for (const auto& [k, n] : fw ? child.collectives_forward : child.collectives_backward) own[k] -= n;
        for (const auto& [k, n] : fw ? child.bytes_forward : child.bytes_backward) own_bytes[k] -= n;
      }
      for (const auto& [kind, n] : own) {
        for (int64_t i = 0; i < n; ++i) {
          CollectiveRecord r;
          r.rank = op_rank;
          r.seq = static_cast<int64_t>(trace.collectives.size());
          r.kind = kind;
          r.module = node.fqn;
          r.phase = phase;
          r.bytes = i == 0 ? own_bytes[kind] : 0;
          trace.collectives.push_back(std::move(r));
        }
      }
    }
  }
};

CollectiveRecord record_of(const TraceJsonEvent& e) {
  CollectiveRecord r;
  r.rank = e.rank;
  r.seq = e.seq;
  r.kind = e.kind;
  r.bytes = e.bytes;
  r.output_bytes = e.output_bytes;
  r.group = e.group;
  r.mesh_dim = e.mesh_dim;
  r.mesh_dim_name = e.mesh_dim_name;
  r.module = e.module;
  r.phase = parse_phase(e.phase).value_or(Phase::kForward);
  r.input_shapes = e.input_shapes;
  r.output_shapes = e.output_shapes;
  r.dtype = e.dtype;
  r.reduce_op = e.reduce_op;
  r.ts_us = e.ts_us;
  r.origin = e.origin;
  return r;
}

}  // namespace

TraceJsonDocument read_comm_trace_json(std::string_view text) {
  Json root;
  try {
    root = Json::parse(text.begin(), text.end());
  } catch (const Json::parse_error& e) {
    throw TraceJsonError(TraceJsonError::Kind::kSyntax, strip_exception_tag(e.what()));
  }
  if (!root.is_object()) fail("$", std::string("expected a JSON object (a comm trace), got ") + root.type_name());
  TraceJsonDocument doc;
  try {
    if (const Json* v = member(root, "dtensor_schema_version")) {
      doc.schema_version = read_int(*v, "$.dtensor_schema_version", 1);
      if (doc.schema_version > kCommTraceSchemaVersion) {
        throw TraceJsonError(TraceJsonError::Kind::kNewerVersion,
                             "dtensor_schema_version is " + std::to_string(doc.schema_version) +
                                 " but this dtensor reads version " + std::to_string(kCommTraceSchemaVersion),
                             doc.schema_version);
      }
    }
    read_root_fields(root, &doc);
    doc.root = read_node(root, "$", /*depth=*/0);
    if (const Json* v = member(root, "events")) {
      if (!v->is_array()) fail("$.events", std::string("expected an array of events, got ") + v->type_name());
      doc.events.emplace();
      for (size_t i = 0; i < v->size(); ++i) doc.events->push_back(read_event((*v)[i], at("$.events", i)));
    }
    read_per_rank(root, &doc);
  } catch (const Json::exception& e) {  // a case the checks above missed: still a schema error
    throw TraceJsonError(TraceJsonError::Kind::kSchema, strip_exception_tag(e.what()));
  }
  return doc;
}

CommTrace comm_trace_from_document(const TraceJsonDocument& document) {
  CommTrace trace;
  trace.rank = document.rank.value_or(0);
  trace.world_size = document.world_size.value_or(1);
  const int64_t op_rank = trace.rank >= 0 ? trace.rank : document.reference_rank.value_or(0);
  const bool has_events = document.events.has_value();
  TraceBuilder{trace, !has_events, op_rank}.add(document.root, kGlobalFqn);
  if (has_events) {
    for (const TraceJsonEvent& e : *document.events) trace.collectives.push_back(record_of(e));
  }
  trace.mesh = document.mesh;
  trace.per_rank_counts = document.per_rank_counts;
  trace.memory = document.memory;
  trace.differing_ranks = document.differing_ranks;
  trace.rank_differences = document.rank_differences;
  return trace;
}

CommTrace comm_trace_from_json(const std::string& text) {
  const std::vector<std::string> errors = validate_comm_trace_json(text);
  if (!errors.empty()) {
    throw TraceJsonError(TraceJsonError::Kind::kSchema,
                         "comm trace JSON does not match trace/comm_trace_schema.md: " + errors.front() +
                             (errors.size() > 1 ? " (and " + std::to_string(errors.size() - 1) + " more)" : ""));
  }
  return comm_trace_from_document(read_comm_trace_json(text));
}

}  // namespace dtensor::trace
