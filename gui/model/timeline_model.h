// Timeline model: a trace's events as one lane per rank over sequence number,
// the collective kinds for the legend, and the sequence numbers at which ranks
// disagree (different kind or bytes, or a rank missing the call). No ImGui.
//   TimelineModel timeline = build_timeline(trace);
//   for (const TimelineLane& lane : timeline.lanes) { ... lane.events ... }
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "trace/trace_model.h"

namespace dtensor::gui {

// The events of one rank, by increasing seq (indices into Trace::events).
struct TimelineLane {
  int64_t rank = 0;
  std::vector<size_t> events;
};

// Everything the timeline panel draws.
struct TimelineModel {
  // One lane per rank, ascending: every rank 0 .. world_size - 1 when the
  // world has at most 64 ranks (idle ranks get an empty lane), else only the
  // ranks with events.
  std::vector<TimelineLane> lanes;
  // Largest seq of any event; -1 when there are none.
  int64_t max_seq = -1;
  // Collective kinds present, sorted.
  std::vector<std::string> kinds;
  // Sequence numbers where the ranks' events differ in kind or bytes, or
  // where some rank with events has none at that seq.
  std::set<int64_t> mismatched_seqs;
};

// Builds the lanes of `trace`. At most 4096 lanes are built (higher ranks are
// dropped); an empty model when the trace has no events.
TimelineModel build_timeline(const trace::CommTrace& trace);

}  // namespace dtensor::gui
