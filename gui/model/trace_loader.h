// Loads comm trace JSON (trace/comm_trace_schema.md) for the viewer, through
// trace/'s one reader (a lenient read), and derives once what the panels
// need. Never throws: a missing, empty, malformed or too-new file gives an
// error string that says what is wrong and where ("$.events[3].rank:
// expected an integer, got string").
//   TraceLoadResult loaded = load_trace_file("comm_trace.json");
//   if (!loaded.trace) std::cerr << loaded.error << "\n";
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trace/module_tree.h"
#include "trace/trace_json.h"
#include "trace/trace_model.h"

namespace dtensor::gui {

// The newest dtensor_schema_version this viewer reads (trace/'s).
inline constexpr int kTraceSchemaVersion = trace::kCommTraceSchemaVersion;

// A loaded trace file.
struct LoadedTrace {
  // Where it came from (path, or a name given to parse_trace_json).
  std::string source;
  // dtensor_schema_version; 0 when absent (a PyTorch comm_mode_log.json).
  int64_t schema_version = 0;
  // The trace, its collectives sorted by (rank, seq); per_rank_counts and
  // differing_ranks are derived from the calls when the file has none.
  trace::CommTrace trace;
  // module_tree(trace), built once.
  trace::ModuleNode tree;
  // False for a file without "events" (PyTorch's dump): its collectives were
  // rebuilt from the module counts, so the tree is all it has; the timeline,
  // the calls and the per-rank tables stay empty.
  bool calls_recorded = false;
  // Non-fatal oddities noticed while loading (unknown phase names, ...).
  std::vector<std::string> warnings;
};

// A trace, or the reason there is none. Exactly one of the two is set.
struct TraceLoadResult {
  std::optional<LoadedTrace> trace;
  std::string error;
};

// Parses trace JSON text; `source` names it in messages and in
// LoadedTrace::source. Accepts files without dtensor_schema_version
// (PyTorch's comm_mode_log.json) and refuses newer versions; reads leniently
// (SchemaCheck::kLenient). Example: parse_trace_json("{}", "x").trace->tree.fqn == "Global".
TraceLoadResult parse_trace_json(std::string_view text, const std::string& source);

// Reads and parses the file at `path` (at most 256 MiB). Example error:
// "cannot open 'missing.json': No such file or directory".
TraceLoadResult load_trace_file(const std::string& path);

// The text of the file at `path` (at most 256 MiB), or nullopt with the
// reason in *error (as load_trace_file words it).
std::optional<std::string> read_viewer_file(const std::string& path, std::string* error);

}  // namespace dtensor::gui
