// The comm trace JSON (schema: trace/comm_trace_schema.md): the one writer,
// validator and reader of it, for debug/ and the viewer (gui/model reads
// through read_comm_trace_json). Key names follow PyTorch's
// comm_mode_log.json. No LibTorch: errors are TraceJsonError.
//   std::string text = comm_trace_to_json(comm.trace(), /*noise_level=*/3);
//   CommTrace back = comm_trace_from_json(text);
//   validate_comm_trace_json(text).empty();   // true
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trace/trace_model.h"

namespace dtensor::trace {

/// The schema version this code writes (root key "dtensor_schema_version").
/// Version 2 added "origin" to events (why each collective happened); version
/// 1 files still load (their events have no origin).
inline constexpr int kCommTraceSchemaVersion = 2;

/// What the comm trace readers and the text file helpers throw. what() names
/// the JSON path of the problem ("$.events[3].rank: expected an integer, got
/// string") or the file.
class TraceJsonError : public std::runtime_error {
 public:
  enum class Kind {
    kSyntax,         // not JSON at all (what(): "parse error at line 1, ...")
    kSchema,         // JSON, but not a comm trace
    kNewerVersion,   // dtensor_schema_version above kCommTraceSchemaVersion
    kFile,           // a file could not be opened, read or written
  };
  TraceJsonError(Kind kind, const std::string& message, int64_t schema_version = 0)
      : std::runtime_error(message), kind_(kind), schema_version_(schema_version) {}
  Kind kind() const { return kind_; }
  /// kNewerVersion: the version the document declares.
  int64_t schema_version() const { return schema_version_; }

 private:
  Kind kind_;
  int64_t schema_version_;
};

// ---- The document as written ------------------------------------------------

/// One operation of a module node ("operations_forward" entries).
struct TraceJsonOp {
  std::string name;
  std::vector<std::vector<int64_t>> input_shapes;  // integer shapes only (PyTorch's strings are skipped)
  std::vector<std::string> input_sharding;
  std::string device_mesh;
};

/// One node of the module tree, with the counts the file states (a node's
/// counts include its descendants', as PyTorch writes them).
struct TraceJsonNode {
  std::string fqn;
  std::string module_type;
  std::vector<std::pair<std::string, std::string>> parameters;
  KindCounts collectives_forward, collectives_backward;
  KindCounts bytes_forward, bytes_backward;
  std::vector<TraceJsonOp> operations_forward, operations_backward;
  std::vector<TraceJsonNode> children;
};

/// One entry of "events": a CollectiveRecord with the phase as written.
struct TraceJsonEvent {
  int64_t rank = 0;
  int64_t seq = 0;
  std::string kind;
  int64_t bytes = 0;
  int64_t output_bytes = 0;
  std::vector<int64_t> group;
  int64_t mesh_dim = -1;
  std::string mesh_dim_name;
  std::string module;
  std::string phase;  // "forward" / "backward"; anything else is kept as written
  std::vector<std::vector<int64_t>> input_shapes;  // from "input_shapes", else ["shape"]
  std::vector<std::vector<int64_t>> output_shapes;
  std::string dtype;
  std::string reduce_op;
  double ts_us = 0;
  std::optional<CollectiveOriginRecord> origin;  // "origin" (version 2); nullopt when absent
};

/// A comm trace JSON document, key by key. Absent optional keys read as
/// empty (or nullopt where absence means something).
struct TraceJsonDocument {
  int64_t schema_version = 0;  // 0: absent (PyTorch's comm_mode_log.json)
  std::optional<int64_t> world_size;
  std::optional<int64_t> rank;  // -1: a merged fake-world trace
  std::optional<int64_t> reference_rank;
  std::optional<MeshRecord> mesh;
  TraceJsonNode root;  // fqn "Global" unless the file says otherwise
  std::optional<std::vector<TraceJsonEvent>> events;  // nullopt: no "events" key
  std::map<int64_t, KindCounts> per_rank_counts;
  std::vector<int64_t> differing_ranks;
  std::vector<std::string> rank_differences;
  /// Optional "memory": rank -> peak bytes and where (worlds that count memory).
  std::map<int64_t, RankMemoryRecord> memory;
};

/// Reads any comm trace JSON: ours, PyTorch's comm_mode_log.json, and the
/// lenient forms older files and hand-written fixtures use (missing optional
/// keys; {"all_reduce": 1} objects for [name, count] pairs and parameters).
/// Checks the type and range of every key it reads (counts and ranks >= 0,
/// module trees at most 128 deep); unknown keys are ignored. Throws
/// TraceJsonError: kSyntax, kNewerVersion (checked first), or kSchema naming
/// the path of the first problem. Example: read_comm_trace_json("{}").root.fqn == "Global".
TraceJsonDocument read_comm_trace_json(std::string_view text);

/// The module tree rooted at Global with `trace`'s counts, plus our root
/// additions (events, mesh, per-rank data). `noise_level` selects what the
/// tree shows as in generate_json_dump (see NoiseFilter); events are always
/// written. A merged trace (rank -1) shows its reference rank's (lowest
/// rank's) counts and operations in the tree, and every rank's events.
/// Output is deterministic: keys in the schema's order, `indent` spaces per level.
std::string comm_trace_to_json(const CommTrace& trace, int noise_level = 3, int indent = 2);

/// Reads a trace back from comm_trace_to_json's output, or from PyTorch's
/// comm_mode_log.json (no "events": collectives are rebuilt from each node's
/// own counts, i.e. its counts minus its children's, with bytes from
/// bytes_* when present). The text must pass validate_comm_trace_json:
/// throws TraceJsonError naming the JSON path of the first problem.
CommTrace comm_trace_from_json(const std::string& text);

/// The trace a document describes (comm_trace_from_json without the
/// validation): modules and operations from the tree, collectives from
/// "events", or rebuilt from each node's own counts when there are none.
CommTrace comm_trace_from_document(const TraceJsonDocument& document);

/// Problems with `text` against the documented schema, as "path: message"
/// (e.g. "$.children[0].collectives_forward[1]: expected [name, count]");
/// empty when valid. Unknown keys are allowed.
std::vector<std::string> validate_comm_trace_json(const std::string& text);

/// Writes `text` to `path`; throws TraceJsonError (kFile) naming the path
/// when it cannot.
void write_text_file(const std::string& path, const std::string& text);
/// Reads `path`; throws TraceJsonError (kFile) naming the path when it cannot.
std::string read_text_file(const std::string& path);

}  // namespace dtensor::trace
