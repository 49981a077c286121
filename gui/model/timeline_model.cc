// Timeline model: lanes and cross-rank mismatches. See timeline_model.h.
#include "gui/model/timeline_model.h"

#include <algorithm>
#include <map>
#include <utility>

namespace dtensor::gui {
namespace {

constexpr size_t kMaxLanes = 4096;
constexpr int64_t kAllLanesUpTo = 64;

// seq -> (kind, bytes) of every lane that has it; flags the disagreeing seqs.
std::set<int64_t> find_mismatches(const trace::CommTrace& trace,
                                  const std::vector<TimelineLane>& lanes) {
  std::map<int64_t, std::set<std::pair<std::string, int64_t>>> seen;
  std::map<int64_t, int64_t> lanes_with_seq;
  int64_t active_lanes = 0;
  for (const TimelineLane& lane : lanes) {
    if (lane.events.empty()) continue;
    ++active_lanes;
    for (size_t index : lane.events) {
      const trace::CollectiveRecord& e = trace.collectives[index];
      seen[e.seq].emplace(e.kind, e.bytes);
      ++lanes_with_seq[e.seq];
    }
  }
  std::set<int64_t> mismatched;
  for (const auto& [seq, calls] : seen) {
    if (calls.size() > 1 || lanes_with_seq[seq] != active_lanes) mismatched.insert(seq);
  }
  return mismatched;
}

}  // namespace

TimelineModel build_timeline(const trace::CommTrace& trace) {
  TimelineModel model;
  if (trace.collectives.empty()) return model;
  // Small worlds show every rank (an idle rank is news); big ones (solo-mode
  // traces of thousands of ranks) only the ranks that issued something.
  std::set<int64_t> ranks;
  if (trace.world_size <= kAllLanesUpTo) {
    for (int64_t rank = 0; rank < trace.world_size; ++rank) ranks.insert(rank);
  }
  for (const trace::CollectiveRecord& e : trace.collectives) ranks.insert(e.rank);
  std::map<int64_t, size_t> lane_of;
  for (int64_t rank : ranks) {
    if (model.lanes.size() == kMaxLanes) break;
    lane_of[rank] = model.lanes.size();
    model.lanes.push_back(TimelineLane{rank, {}});
  }
  std::set<std::string> kinds;
  for (size_t i = 0; i < trace.collectives.size(); ++i) {
    const trace::CollectiveRecord& e = trace.collectives[i];
    auto lane = lane_of.find(e.rank);
    if (lane == lane_of.end()) continue;
    model.lanes[lane->second].events.push_back(i);
    model.max_seq = std::max(model.max_seq, e.seq);
    kinds.insert(e.kind);
  }
  for (TimelineLane& lane : model.lanes) {
    std::stable_sort(lane.events.begin(), lane.events.end(), [&](size_t a, size_t b) {
      return trace.collectives[a].seq < trace.collectives[b].seq;
    });
  }
  model.kinds.assign(kinds.begin(), kinds.end());
  model.mismatched_seqs = find_mismatches(trace, model.lanes);
  return model;
}

}  // namespace dtensor::gui
