// The comm trace JSON (schema: debug/comm_trace_schema.md): writer, reader
// and validator. Key names follow PyTorch's comm_mode_log.json.
//   std::string text = comm_trace_to_json(comm.trace(), /*noise_level=*/3);
//   CommTrace back = comm_trace_from_json(text);
//   validate_comm_trace_json(text).empty();   // true
#pragma once

#include <string>
#include <vector>

#include "debug/trace_model.h"

namespace dtensor::debug {

/// The schema version this code writes (root key "dtensor_schema_version").
inline constexpr int kCommTraceSchemaVersion = 1;

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
/// bytes_* when present). Throws c10::Error naming the JSON path of the first
/// problem (see validate_comm_trace_json).
CommTrace comm_trace_from_json(const std::string& text);

/// Problems with `text` against the documented schema, as "path: message"
/// (e.g. "$.children[0].collectives_forward[1]: expected [name, count]");
/// empty when valid. Unknown keys are allowed.
std::vector<std::string> validate_comm_trace_json(const std::string& text);

/// Writes `text` to `path`; throws c10::Error naming the path when it cannot.
void write_text_file(const std::string& path, const std::string& text);
/// Reads `path`; throws c10::Error naming the path when it cannot.
std::string read_text_file(const std::string& path);

}  // namespace dtensor::debug
