// Chrome trace / Perfetto export of a comm trace: one track per rank, one
// slice per collective (Trace Event Format JSON, loadable in ui.perfetto.dev
// and chrome://tracing).
//   write_chrome_trace("comm.trace.json", world_trace.trace());
#pragma once

#include <string>

#include "layout/comm_cost.h"
#include "trace/trace_model.h"

namespace dtensor::debug {

/// Where slices sit on the time axis.
/// - kRecorded: at the time each rank issued the collective (microseconds
///   after the trace started), lasting the cost model's estimate, cut short
///   where the rank's next collective starts (issue times are observed,
///   completion is not).
/// - kEstimated: back to back from 0 on every rank, each lasting its
///   estimate: a deterministic, reproducible timeline (solo mode, tests).
enum class ChromeTimeline { kRecorded, kEstimated };

struct ChromeTraceOptions {
  ChromeTimeline timeline = ChromeTimeline::kRecorded;
  CommCostModel cost_model;
};

/// {"traceEvents": [...], "displayTimeUnit": "ns", "otherData": {...}}: pid 0,
/// tid = rank (named "rank N" by metadata events), slices with ph "X", ts and
/// dur in microseconds, name = collective kind, cat = "collective,<phase>",
/// args = bytes, output_bytes, group, mesh_dim, module, phase, shapes, dtype,
/// estimated_us.
std::string chrome_trace_json(const trace::CommTrace& trace, const ChromeTraceOptions& options = {});

/// Writes chrome_trace_json to `path`; throws c10::Error when it cannot.
void write_chrome_trace(const std::string& path, const trace::CommTrace& trace,
                        const ChromeTraceOptions& options = {});

}  // namespace dtensor::debug
