// The comm trace JSON (schema: trace/comm_trace_schema.md): its one writer and
// its one reader, for debug/, the tools and the viewer. Key names follow
// PyTorch's comm_mode_log.json. No LibTorch: errors are TraceJsonError.
//   std::string text = comm_trace_to_json(comm.trace(), /*noise_level=*/3);
//   CommTrace back = comm_trace_from_json(text);
//   validate_comm_trace_json(text).empty();   // true
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
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

/// How closely a read holds a document to the schema.
enum class SchemaCheck {
  /// Missing optional and required keys read as empty, {"all_reduce": 1}
  /// objects stand for [name, count] pairs, an unknown phase reads as
  /// forward (with a warning): what hand-written fixtures and older tools
  /// write. The viewer reads this way.
  kLenient,
  /// Every key the schema requires, in the form it is written.
  kStrict,
};

/// A trace read from JSON, with what the document says about itself.
struct TraceRead {
  CommTrace trace;
  /// dtensor_schema_version; 0 when absent (PyTorch's comm_mode_log.json).
  int64_t schema_version = 0;
  /// True when the document lists each call ("events"); false when the
  /// collectives were rebuilt from module counts (PyTorch's dump): then
  /// they carry no order, timing, group or per-rank data.
  bool calls_recorded = false;
  /// What a lenient read took on trust ("events with phase \"x\" ...").
  std::vector<std::string> warnings;
};

/// Reads any comm trace JSON into the trace it describes: ours, and
/// PyTorch's comm_mode_log.json. Modules and operations come from the module
/// tree; collectives from "events", or, for a dump without events, rebuilt
/// from each node's own counts (its counts minus its children's, with bytes
/// from bytes_* when present). world_size, when absent, is one more than the
/// largest rank named. Checks the type and range of every key it reads
/// (counts and ranks >= 0, module trees at most 128 deep); unknown keys are
/// ignored. Throws TraceJsonError: kSyntax, kNewerVersion (checked first), or
/// kSchema naming the path of the first problem.
/// Example: read_comm_trace_json("{}").trace.modules.empty() == true.
TraceRead read_comm_trace_json(std::string_view text, SchemaCheck check = SchemaCheck::kLenient);

/// Every problem of `text` against the documented schema (a strict read that
/// goes on past each problem), as "path: message", e.g.
/// "$.children[0].collectives_forward[0][1]: expected an integer, got string";
/// empty when valid. Unknown keys are allowed.
std::vector<std::string> validate_comm_trace_json(std::string_view text);

/// The trace of a valid document (ours or PyTorch's): throws TraceJsonError
/// naming the first problem validate_comm_trace_json finds and how many more.
CommTrace comm_trace_from_json(std::string_view text);

/// The module tree rooted at Global with `trace`'s counts (module_tree.h),
/// plus our root additions (events, mesh, per-rank data). `noise_level`
/// selects what the tree shows as in generate_json_dump (see NoiseFilter);
/// events are always written. A merged trace (rank -1) shows its reference
/// rank's (lowest rank's) counts and operations in the tree, and every
/// rank's events. Output is deterministic: keys in the schema's order,
/// `indent` spaces per level.
std::string comm_trace_to_json(const CommTrace& trace, int noise_level = 3, int indent = 2);

/// Writes `text` to `path`; throws TraceJsonError (kFile) naming the path
/// when it cannot.
void write_text_file(const std::string& path, const std::string& text);
/// Reads `path`; throws TraceJsonError (kFile) naming the path when it cannot.
std::string read_text_file(const std::string& path);

}  // namespace dtensor::trace
