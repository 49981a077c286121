// Comm trace JSON reader: the one walker of the schema. It reads ours and
// PyTorch's dumps into a CommTrace, checking the type and range of every key
// with the JSON path in each message; strict reads (validation) also require
// the keys the schema requires, and may collect every problem instead of
// stopping at the first. See trace_json.h.
#include <algorithm>
#include <cstdlib>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "trace/trace_json.h"

namespace dtensor::trace {
namespace {

using Json = nlohmann::json;

constexpr int kMaxDepth = 128;

// Thrown by Reader::fail when problems are collected: abandons the value
// being read; the caller of Reader::guarded carries on with the next one.
struct Abandon {};

std::string at(const std::string& where, size_t i) { return where + "[" + std::to_string(i) + "]"; }

// The member `key` of object `j`, or nullptr when absent or null.
const Json* member(const Json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return nullptr;
  return &*it;
}

// A document's module tree node while reading (its counts stay here: the
// trace keeps records, and the counts of a dump without events become records).
struct Node {
  std::string fqn;
  KindCounts counts[2];  // by Phase
  KindCounts bytes[2];
  std::vector<Node> children;
};

// Note [One reader]
// Reading and validating are one walk: `strict` adds the schema's required
// keys and exact forms ([name, count] arrays, not {"name": count} objects),
// and `errors` (when set) collects every problem: a bad value is recorded and
// skipped (Abandon), the walk goes on with the next key or element. Without
// `errors` the first problem throws TraceJsonError.
class Reader {
 public:
  Reader(bool strict, std::vector<std::string>* errors) : strict_(strict), errors_(errors) {}

  [[noreturn]] void fail(const std::string& where, const std::string& what) {
    if (errors_ == nullptr)
      throw TraceJsonError(TraceJsonError::Kind::kSchema, where + ": " + what);
    errors_->push_back(where + ": " + what);
    throw Abandon{};
  }

  // Runs `read`; a collected problem abandons only it.
  template <typename F>
  void guarded(F&& read) {
    try {
      read();
    } catch (const Abandon&) {
    }
  }

  // Reads `key` of `j` with `read(value, path)` when present; in strict
  // mode a `required` key that is absent is a problem ("missing").
  template <typename F>
  void key(const Json& j, const char* name, const std::string& where, bool required, F&& read) {
    const std::string path = where + "." + name;
    guarded([&] {
      if (const Json* v = member(j, name)) {
        read(*v, path);
      } else if (strict_ && required) {
        fail(path, "missing");
      }
    });
  }

  int64_t integer(const Json& j, const std::string& where, int64_t min_value) {
    if (!j.is_number_integer())
      fail(where, std::string("expected an integer, got ") + j.type_name());
    if (j.is_number_unsigned() &&
        j.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      fail(where, "integer too large");
    }
    const int64_t value = j.get<int64_t>();
    if (value < min_value)
      fail(where, "expected >= " + std::to_string(min_value) + ", got " + std::to_string(value));
    return value;
  }

  double number(const Json& j, const std::string& where) {
    if (!j.is_number()) fail(where, std::string("expected a number, got ") + j.type_name());
    return j.get<double>();
  }

  bool boolean(const Json& j, const std::string& where) {
    if (!j.is_boolean()) fail(where, std::string("expected a boolean, got ") + j.type_name());
    return j.get<bool>();
  }

  std::string string(const Json& j, const std::string& where) {
    if (!j.is_string()) fail(where, std::string("expected a string, got ") + j.type_name());
    return j.get<std::string>();
  }

  std::vector<int64_t> int_list(const Json& j, const std::string& where, int64_t min_value) {
    if (!j.is_array())
      fail(where, std::string("expected an array of integers, got ") + j.type_name());
    std::vector<int64_t> out;
    for (size_t i = 0; i < j.size(); ++i)
      guarded([&] { out.push_back(integer(j[i], at(where, i), min_value)); });
    return out;
  }

  std::vector<std::string> string_list(const Json& j, const std::string& where) {
    if (!j.is_array())
      fail(where, std::string("expected an array of strings, got ") + j.type_name());
    std::vector<std::string> out;
    for (size_t i = 0; i < j.size(); ++i)
      guarded([&] { out.push_back(string(j[i], at(where, i))); });
    return out;
  }

  // [[8, 16], ...]; with `skip_strings`, PyTorch's "torch.Size([8, 16])" entries are skipped.
  std::vector<std::vector<int64_t>> shapes(const Json& j, const std::string& where,
                                           bool skip_strings) {
    if (!j.is_array())
      fail(where, std::string("expected an array of shapes, got ") + j.type_name());
    std::vector<std::vector<int64_t>> out;
    for (size_t i = 0; i < j.size(); ++i) {
      if (skip_strings && j[i].is_string()) continue;
      guarded([&] { out.push_back(int_list(j[i], at(where, i), 0)); });
    }
    return out;
  }

  // [[name, count], ...] (or {"name": count} where that is the written
  // form); lenient reads take either.
  KindCounts kind_counts(const Json& j, const std::string& where, bool written_as_object = false) {
    KindCounts out;
    if (j.is_object() && (written_as_object || !strict_)) {
      for (auto it = j.begin(); it != j.end(); ++it) {
        guarded([&] { out[it.key()] += integer(it.value(), where + "." + it.key(), 0); });
      }
      return out;
    }
    if (strict_ && written_as_object) {
      fail(where, std::string("expected an object of collective -> count, got ") + j.type_name());
    }
    if (!j.is_array())
      fail(where, std::string("expected [[name, count], ...], got ") + j.type_name());
    for (size_t i = 0; i < j.size(); ++i) {
      guarded([&] {
        const Json& pair = j[i];
        if (!pair.is_array() || pair.size() != 2)
          fail(at(where, i), "expected a [name, count] pair");
        const std::string name = string(pair[0], at(where, i) + "[0]");
        out[name] += integer(pair[1], at(where, i) + "[1]", 0);
      });
    }
    return out;
  }

  // [[name, placements], ...]; lenient reads also take {"name": "placements"}.
  std::vector<std::pair<std::string, std::string>> parameters(const Json& j,
                                                              const std::string& where) {
    std::vector<std::pair<std::string, std::string>> out;
    if (j.is_object() && !strict_) {
      for (auto it = j.begin(); it != j.end(); ++it) {
        guarded([&] { out.emplace_back(it.key(), string(it.value(), where + "." + it.key())); });
      }
      return out;
    }
    if (!j.is_array())
      fail(where, std::string("expected [[name, placements], ...], got ") + j.type_name());
    for (size_t i = 0; i < j.size(); ++i) {
      guarded([&] {
        if (!j[i].is_array() || j[i].size() != 2)
          fail(at(where, i), "expected a [name, placements] pair");
        std::string name = string(j[i][0], at(where, i) + "[0]");
        out.emplace_back(std::move(name), string(j[i][1], at(where, i) + "[1]"));
      });
    }
    return out;
  }

  void operations(const Json& j, const std::string& where, const std::string& fqn, Phase phase,
                  bool keep) {
    if (!j.is_array())
      fail(where, std::string("expected an array of operations, got ") + j.type_name());
    for (size_t i = 0; i < j.size(); ++i) {
      guarded([&] {
        const std::string w = at(where, i);
        if (!j[i].is_object())
          fail(w, std::string("expected an operation object, got ") + j[i].type_name());
        OpRecord op;
        op.rank = op_rank_;
        op.module = fqn;
        op.phase = phase;
        key(j[i], "name", w, /*required=*/true,
            [&](const Json& v, const std::string& p) { op.name = string(v, p); });
        key(j[i], "input_shape", w, false, [&](const Json& v, const std::string& p) {
          op.input_shapes = shapes(v, p, /*skip_strings=*/true);
        });
        key(j[i], "input_sharding", w, false,
            [&](const Json& v, const std::string& p) { op.input_sharding = string_list(v, p); });
        key(j[i], "device_mesh", w, false,
            [&](const Json& v, const std::string& p) { op.device_mesh = string(v, p); });
        op.dtensor = !op.input_sharding.empty();
        if (keep) trace_.operations.push_back(std::move(op));
      });
    }
  }

  // One module node and its subtree: its record (after its parent's) and
  // operations go into the trace, its counts into `node`.
  void node(const Json& j, const std::string& where, int depth, const std::string& parent,
            Node* node) {
    if (depth > kMaxDepth) fail(where, "module tree deeper than " + std::to_string(kMaxDepth));
    if (!j.is_object()) fail(where, std::string("expected a module object, got ") + j.type_name());
    ModuleRecord record;
    record.fqn = depth == 0 ? kGlobalFqn : "";
    record.parent = parent;
    if (const Json* fqn = member(j, "fqn")) {
      record.fqn =
          string(*fqn, where + ".fqn");  // a node without a name cannot be placed: abandoned
    } else if (strict_) {
      if (depth == 0) {
        guarded([&] { fail(where + ".fqn", "missing"); });  // the root is Global anyway: go on
      } else {
        fail(where + ".fqn", "missing");
      }
    }
    if (record.fqn.empty()) fail(where + ".fqn", "a module needs a non-empty fqn");
    node->fqn = record.fqn;
    key(j, "module_type", where, true,
        [&](const Json& v, const std::string& p) { record.module_type = string(v, p); });
    key(j, "parameters", where, true,
        [&](const Json& v, const std::string& p) { record.parameters = parameters(v, p); });
    if (depth > 0) trace_.modules.push_back(record);
    for (Phase phase : {Phase::kForward, Phase::kBackward}) {
      const int k = static_cast<int>(phase);
      const std::string suffix = phase_name(phase);
      key(j, ("collectives_" + suffix).c_str(), where, true,
          [&](const Json& v, const std::string& p) { node->counts[k] = kind_counts(v, p); });
      key(j, ("bytes_" + suffix).c_str(), where, false,
          [&](const Json& v, const std::string& p) { node->bytes[k] = kind_counts(v, p); });
      key(j, ("operations_" + suffix).c_str(), where, true,
          [&](const Json& v, const std::string& p) {
            operations(v, p, record.fqn, phase, /*keep=*/true);
          });
    }
    // PyTorch's recomputed ops: checked, not kept (the trace does not separate recomputation).
    key(j, "operations_checkpointing", where, false, [&](const Json& v, const std::string& p) {
      operations(v, p, record.fqn, Phase::kForward, /*keep=*/false);
    });
    key(j, "children", where, true, [&](const Json& v, const std::string& p) {
      if (!v.is_array()) fail(p, std::string("expected an array of modules, got ") + v.type_name());
      for (size_t i = 0; i < v.size(); ++i) {
        guarded([&] {
          Node child;
          this->node(v[i], at(p, i), depth + 1, record.fqn, &child);
          node->children.push_back(std::move(child));
        });
      }
    });
  }

  // An event's "origin" (schema version 2).
  CollectiveOriginRecord origin(const Json& j, const std::string& where) {
    if (!j.is_object()) fail(where, std::string("expected an origin object, got ") + j.type_name());
    CollectiveOriginRecord o;
    key(j, "explicit", where, true,
        [&](const Json& v, const std::string& p) { o.is_explicit = boolean(v, p); });
    key(j, "cause", where, true,
        [&](const Json& v, const std::string& p) { o.cause = string(v, p); });
    if (o.cause.empty())
      guarded([&] { fail(where + ".cause", "an origin needs a non-empty cause"); });
    auto text = [&](const char* name, std::string* out) {
      key(j, name, where, false, [&](const Json& v, const std::string& p) { *out = string(v, p); });
    };
    text("op", &o.op);
    // Typed, from the writer's text form; "" is unknown. A text this reader
    // cannot parse (a placement kind newer than it) is a schema error for
    // strict reads; lenient ones leave that field unknown, keep the rest of
    // the origin and warn.
    auto typed = [&](const char* name, auto parse, auto* out) {
      key(j, name, where, false, [&](const Json& v, const std::string& p) {
        const std::string s = string(v, p);
        if (s.empty()) return;
        try {
          *out = parse(s);
        } catch (const std::exception& e) {
          if (strict_) fail(p, e.what());
          unread_origin_texts_.insert(s);
        }
      });
    };
    typed("from", [](const std::string& s) { return parse_placements(s); }, &o.from_placements);
    typed("to", [](const std::string& s) { return parse_placements(s); }, &o.to_placements);
    typed("step", [](const std::string& s) { return std::optional<OriginStep>(parse_origin_step(s)); }, &o.step);
    text("strategy", &o.strategy);
    text("rejected_strategy", &o.rejected_strategy);
    key(j, "input_index", where, false,
        [&](const Json& v, const std::string& p) { o.input_index = integer(v, p, -1); });
    key(j, "mesh_dim", where, false,
        [&](const Json& v, const std::string& p) { o.mesh_dim = integer(v, p, -1); });
    key(j, "strategy_cost", where, false,
        [&](const Json& v, const std::string& p) { o.strategy_cost = number(v, p); });
    key(j, "rejected_cost", where, false,
        [&](const Json& v, const std::string& p) { o.rejected_cost = number(v, p); });
    return o;
  }

  void event(const Json& j, const std::string& where) {
    if (!j.is_object()) fail(where, std::string("expected an event object, got ") + j.type_name());
    if (!member(j, "rank") || !member(j, "seq") || !member(j, "kind")) {
      fail(where, "an event needs \"rank\", \"seq\" and \"kind\"");
    }
    CollectiveRecord r;
    bool ok = true;
    // A required value that is bad drops the event; optional ones only themselves.
    auto must = [&](const char* name, auto read) {
      const size_t before = errors_ ? errors_->size() : 0;
      key(j, name, where, true, read);
      if (errors_ && errors_->size() != before) ok = false;
    };
    must("rank", [&](const Json& v, const std::string& p) { r.rank = integer(v, p, 0); });
    must("seq", [&](const Json& v, const std::string& p) { r.seq = integer(v, p, 0); });
    must("kind", [&](const Json& v, const std::string& p) { r.kind = string(v, p); });
    key(j, "bytes", where, true,
        [&](const Json& v, const std::string& p) { r.bytes = integer(v, p, 0); });
    key(j, "output_bytes", where, false,
        [&](const Json& v, const std::string& p) { r.output_bytes = integer(v, p, 0); });
    key(j, "group", where, true,
        [&](const Json& v, const std::string& p) { r.group = int_list(v, p, 0); });
    key(j, "mesh_dim", where, true,
        [&](const Json& v, const std::string& p) { r.mesh_dim = integer(v, p, -1); });
    key(j, "mesh_dim_name", where, false,
        [&](const Json& v, const std::string& p) { r.mesh_dim_name = string(v, p); });
    key(j, "module", where, true,
        [&](const Json& v, const std::string& p) { r.module = string(v, p); });
    key(j, "phase", where, true, [&](const Json& v, const std::string& p) {
      const std::string name = string(v, p);
      if (std::optional<Phase> phase = parse_phase(name)) {
        r.phase = *phase;
      } else if (strict_) {
        fail(p, "expected \"forward\" or \"backward\"");
      } else {
        odd_phases_.insert(name);  // read as forward, with a warning
      }
    });
    if (const Json* v = member(j, "input_shapes")) {
      guarded([&] { r.input_shapes = shapes(*v, where + ".input_shapes", false); });
      key(j, "shape", where, false,
          [&](const Json& s, const std::string& p) { (void)int_list(s, p, 0); });
    } else {
      key(j, "shape", where, false,
          [&](const Json& s, const std::string& p) { r.input_shapes = {int_list(s, p, 0)}; });
    }
    key(j, "output_shapes", where, false,
        [&](const Json& v, const std::string& p) { r.output_shapes = shapes(v, p, false); });
    key(j, "dtype", where, false,
        [&](const Json& v, const std::string& p) { r.dtype = string(v, p); });
    key(j, "reduce_op", where, false,
        [&](const Json& v, const std::string& p) { r.reduce_op = string(v, p); });
    key(j, "ts_us", where, false,
        [&](const Json& v, const std::string& p) { r.ts_us = number(v, p); });
    key(j, "origin", where, false,
        [&](const Json& v, const std::string& p) { r.origin = origin(v, p); });
    if (ok) trace_.collectives.push_back(std::move(r));
  }

  // "rank" keys of per_rank_counts and memory.
  int64_t rank_key(const std::string& text, const std::string& where) {
    char* end = nullptr;
    const long long rank = std::strtoll(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || rank < 0) fail(where, "the key must be a rank number");
    return rank;
  }

  void root_fields(const Json& root) {
    key(root, "world_size", "$", false,
        [&](const Json& v, const std::string& p) { world_size_ = integer(v, p, 1); });
    key(root, "rank", "$", false,
        [&](const Json& v, const std::string& p) { trace_.rank = integer(v, p, -1); });
    key(root, "reference_rank", "$", false,
        [&](const Json& v, const std::string& p) { reference_rank_ = integer(v, p, 0); });
    key(root, "mesh", "$", false, [&](const Json& v, const std::string& p) {
      if (!v.is_object())
        fail(p, std::string("expected {\"shape\": [...], \"dim_names\": [...]}, got ") +
                    v.type_name());
      MeshRecord mesh;
      key(v, "shape", p, false,
          [&](const Json& s, const std::string& q) { mesh.shape = int_list(s, q, 1); });
      key(v, "dim_names", p, false,
          [&](const Json& s, const std::string& q) { mesh.dim_names = string_list(s, q); });
      key(v, "device", p, false,
          [&](const Json& s, const std::string& q) { mesh.device = string(s, q); });
      trace_.mesh = std::move(mesh);
    });
  }

  void per_rank_fields(const Json& root) {
    key(root, "per_rank_counts", "$", false, [&](const Json& v, const std::string& p) {
      if (!v.is_object())
        fail(p,
             std::string("expected an object {rank: {collective: count}}, got ") + v.type_name());
      for (auto it = v.begin(); it != v.end(); ++it) {
        guarded([&] {
          const std::string where = p + "." + it.key();
          const int64_t rank = rank_key(it.key(), where);
          KindCounts counts = kind_counts(it.value(), where, /*written_as_object=*/true);
          trace_.per_rank_counts[rank] = std::move(counts);
        });
      }
    });
    key(root, "memory", "$", false, [&](const Json& v, const std::string& p) {
      if (!v.is_object())
        fail(p, std::string("expected an object {rank: {peak_bytes, ...}}, got ") + v.type_name());
      for (auto it = v.begin(); it != v.end(); ++it) {
        guarded([&] {
          const std::string where = p + "." + it.key();
          const int64_t rank = rank_key(it.key(), where);
          if (!it.value().is_object())
            fail(where, "expected {peak_bytes, current_bytes, cap_bytes, peak_location}");
          RankMemoryRecord m;
          auto bytes = [&](const char* name, int64_t* out) {
            key(it.value(), name, where, false,
                [&](const Json& b, const std::string& q) { *out = integer(b, q, 0); });
          };
          bytes("peak_bytes", &m.peak_bytes);
          bytes("current_bytes", &m.current_bytes);
          bytes("cap_bytes", &m.cap_bytes);
          key(it.value(), "peak_location", where, false,
              [&](const Json& l, const std::string& q) { m.peak_location = string(l, q); });
          trace_.memory[rank] = std::move(m);
        });
      }
    });
    key(root, "differing_ranks", "$", false,
        [&](const Json& v, const std::string& p) { trace_.differing_ranks = int_list(v, p, 0); });
    key(root, "rank_differences", "$", false,
        [&](const Json& v, const std::string& p) { trace_.rank_differences = string_list(v, p); });
  }

  // Collectives of a dump without events, rebuilt from each node's own
  // counts (its counts minus its children's); all of a module's bytes go on
  // its first record of a kind.
  void synthesize(const Node& node) {
    for (Phase phase : {Phase::kForward, Phase::kBackward}) {
      const int k = static_cast<int>(phase);
      KindCounts own = node.counts[k];
      KindCounts own_bytes = node.bytes[k];
      for (const Node& child : node.children) {
        for (const auto& [kind, n] : child.counts[k]) own[kind] -= n;
        for (const auto& [kind, n] : child.bytes[k]) own_bytes[kind] -= n;
      }
      for (const auto& [kind, n] : own) {
        for (int64_t i = 0; i < n; ++i) {
          CollectiveRecord r;
          r.rank = op_rank_;
          r.seq = static_cast<int64_t>(trace_.collectives.size());
          r.kind = kind;
          r.module = node.fqn;
          r.phase = phase;
          r.bytes = i == 0 ? own_bytes[kind] : 0;
          trace_.collectives.push_back(std::move(r));
        }
      }
    }
    for (const Node& child : node.children) synthesize(child);
  }

  TraceRead read(const Json& root) {
    TraceRead result;
    if (!root.is_object())
      fail("$", std::string("expected a JSON object (a comm trace), got ") + root.type_name());
    if (const Json* v = member(root, "dtensor_schema_version")) {
      result.schema_version = integer(*v, "$.dtensor_schema_version", 1);
      if (result.schema_version > kCommTraceSchemaVersion) {
        const std::string message =
            "dtensor_schema_version is " + std::to_string(result.schema_version) +
            " but this dtensor reads version " + std::to_string(kCommTraceSchemaVersion) +
            " (written by a newer dtensor?)";
        if (errors_ == nullptr) {
          throw TraceJsonError(TraceJsonError::Kind::kNewerVersion, message, result.schema_version);
        }
        fail("$.dtensor_schema_version", message);
      }
    }
    root_fields(root);
    op_rank_ = trace_.rank >= 0 ? trace_.rank : reference_rank_;
    Node tree;
    guarded([&] { node(root, "$", /*depth=*/0, kGlobalFqn, &tree); });
    const Json* events = member(root, "events");
    result.calls_recorded = events != nullptr;
    if (events != nullptr) {
      guarded([&] {
        if (!events->is_array())
          fail("$.events", std::string("expected an array of events, got ") + events->type_name());
        for (size_t i = 0; i < events->size(); ++i)
          guarded([&] { event((*events)[i], at("$.events", i)); });
      });
    } else {
      synthesize(tree);
    }
    per_rank_fields(root);
    trace_.world_size = world_size_.value_or(1 + largest_rank());
    for (const std::string& phase : odd_phases_) {
      result.warnings.push_back("events with phase \"" + phase +
                                "\" (expected forward or backward) read as forward");
    }
    for (const std::string& text : unread_origin_texts_) {
      result.warnings.push_back("origin placements \"" + text + "\" this reader cannot parse read as unknown");
    }
    result.trace = std::move(trace_);
    return result;
  }

 private:
  // The largest rank the records name (0 when none): a file without
  // "world_size" has at least that many ranks.
  int64_t largest_rank() const {
    int64_t top = std::max<int64_t>(trace_.rank, 0);
    for (const CollectiveRecord& r : trace_.collectives) top = std::max(top, r.rank);
    for (const auto& [rank, counts] : trace_.per_rank_counts) top = std::max(top, rank);
    for (const auto& [rank, memory] : trace_.memory) top = std::max(top, rank);
    return top;
  }

  bool strict_;
  std::vector<std::string>* errors_;
  CommTrace trace_;
  std::optional<int64_t> world_size_;
  int64_t reference_rank_ = 0;
  int64_t op_rank_ = 0;
  std::set<std::string> odd_phases_;
  std::set<std::string> unread_origin_texts_;  // lenient reads: origin texts left unknown
};

// nlohmann's "[json.exception.parse_error.101] parse error at ..." without the tag.
std::string strip_exception_tag(const std::string& message) {
  if (message.rfind("[json.exception", 0) == 0) {
    const size_t close = message.find("] ");
    if (close != std::string::npos) return message.substr(close + 2);
  }
  return message;
}

Json parse(std::string_view text) {
  try {
    return Json::parse(text.begin(), text.end());
  } catch (const Json::parse_error& e) {
    throw TraceJsonError(TraceJsonError::Kind::kSyntax, strip_exception_tag(e.what()));
  }
}

}  // namespace

TraceRead read_comm_trace_json(std::string_view text, SchemaCheck check) {
  const Json root = parse(text);
  try {
    return Reader(check == SchemaCheck::kStrict, /*errors=*/nullptr).read(root);
  } catch (const Json::exception& e) {  // a case the checks missed: still a schema error
    throw TraceJsonError(TraceJsonError::Kind::kSchema, strip_exception_tag(e.what()));
  }
}

std::vector<std::string> validate_comm_trace_json(std::string_view text) {
  const Json root = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return {"$: not valid JSON"};
  std::vector<std::string> errors;
  Reader reader(/*strict=*/true, &errors);
  try {
    reader.guarded([&] { (void)reader.read(root); });
  } catch (const Json::exception& e) {
    errors.push_back("$: " + strip_exception_tag(e.what()));
  }
  return errors;
}

CommTrace comm_trace_from_json(std::string_view text) {
  const std::vector<std::string> errors = validate_comm_trace_json(text);
  if (!errors.empty()) {
    throw TraceJsonError(
        TraceJsonError::Kind::kSchema,
        "comm trace JSON does not match trace/comm_trace_schema.md: " + errors.front() +
            (errors.size() > 1 ? " (and " + std::to_string(errors.size() - 1) + " more)" : ""));
  }
  return read_comm_trace_json(text, SchemaCheck::kStrict).trace;
}

}  // namespace dtensor::trace
