// Loads comm trace JSON (trace/comm_trace_schema.md) into the trace model,
// through debug's reader (trace/trace_json.h: one reader of the schema for
// the tools and the viewer). Never throws: a missing, empty, malformed or too-new file gives an error
// string that says what is wrong and where ("$.events[3].rank: expected an
// integer, got string").
//   TraceLoadResult loaded = load_trace_file("comm_trace.json");
//   if (!loaded.trace) std::cerr << loaded.error << "\n";
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "trace/trace_json.h"
#include "gui/model/trace_model.h"

namespace dtensor::gui {

// The newest dtensor_schema_version this viewer reads (debug's).
inline constexpr int kTraceSchemaVersion = trace::kCommTraceSchemaVersion;

// A trace, or the reason there is none. Exactly one of the two is set.
struct TraceLoadResult {
  std::optional<Trace> trace;
  std::string error;
};

// Parses trace JSON text; `source` names it in messages and in Trace::source.
// Accepts files without dtensor_schema_version (PyTorch's comm_mode_log.json)
// and refuses newer versions. [name, count] pairs may also be written as an
// object {"all_reduce": 1}. Unknown keys are ignored, missing optional keys
// read as empty. Example: parse_trace_json("{}", "x").trace->root.fqn == "Global".
TraceLoadResult parse_trace_json(std::string_view text, const std::string& source);

// Reads and parses the file at `path` (at most 256 MiB). Example error:
// "cannot open 'missing.json': No such file or directory".
TraceLoadResult load_trace_file(const std::string& path);

}  // namespace dtensor::gui
