// Trace Event Format writer for comm traces.
#include "debug/chrome_trace.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "trace/comm_estimate.h"
#include "trace/trace_json.h"

namespace dtensor::debug {
namespace {

using Json = nlohmann::ordered_json;

Json metadata(const char* name, int64_t tid, Json args) {
  Json j;
  j["name"] = name;
  j["ph"] = "M";
  j["pid"] = 0;
  if (tid >= 0) j["tid"] = tid;
  j["args"] = std::move(args);
  return j;
}

}  // namespace

std::string chrome_trace_json(const trace::CommTrace& trace, const ChromeTraceOptions& options) {
  Json events = Json::array();
  events.push_back(
      metadata("process_name", -1, {{"name", trace.rank < 0 ? "dtensor fake world" : "dtensor"}}));
  // Each rank's records in issue order.
  std::map<int64_t, std::vector<const trace::CollectiveRecord*>> by_rank;
  for (const trace::CollectiveRecord& r : trace.collectives) by_rank[r.rank].push_back(&r);
  for (int64_t rank : ranks_in(trace)) {
    events.push_back(metadata("thread_name", rank, {{"name", "rank " + std::to_string(rank)}}));
    events.push_back(metadata("thread_sort_index", rank, {{"sort_index", rank}}));
  }
  for (auto& [rank, records] : by_rank) {
    std::stable_sort(records.begin(), records.end(),
                     [](const trace::CollectiveRecord* a, const trace::CollectiveRecord* b) { return a->seq < b->seq; });
    double clock = 0;
    for (size_t i = 0; i < records.size(); ++i) {
      const trace::CollectiveRecord& r = *records[i];
      const double estimate = estimate_collective_us(r, options.cost_model);
      double ts = r.ts_us;
      double dur = estimate;
      if (options.timeline == ChromeTimeline::kEstimated) {
        ts = clock;
        clock += estimate;
      } else if (i + 1 < records.size()) {
        dur = std::max(0.0, std::min(dur, records[i + 1]->ts_us - ts));
      }
      Json slice;
      slice["name"] = r.kind;
      slice["cat"] = std::string("collective,") + phase_name(r.phase);
      slice["ph"] = "X";
      slice["ts"] = ts;
      slice["dur"] = dur;
      slice["pid"] = 0;
      slice["tid"] = rank;
      Json args;
      args["bytes"] = r.bytes;
      args["output_bytes"] = r.output_bytes;
      args["group"] = r.group;
      args["mesh_dim"] = r.mesh_dim;
      if (!r.mesh_dim_name.empty()) args["mesh_dim_name"] = r.mesh_dim_name;
      args["module"] = r.module;
      args["phase"] = phase_name(r.phase);
      args["input_shapes"] = r.input_shapes;
      args["dtype"] = r.dtype;
      if (!r.reduce_op.empty()) args["reduce_op"] = r.reduce_op;
      args["seq"] = r.seq;
      args["estimated_us"] = estimate;
      slice["args"] = std::move(args);
      events.push_back(std::move(slice));
    }
  }
  Json root;
  root["traceEvents"] = std::move(events);
  root["displayTimeUnit"] = "ns";
  root["otherData"] = {{"generator", "dtensor debug::chrome_trace_json"},
                       {"world_size", trace.world_size},
                       {"timeline", options.timeline == ChromeTimeline::kRecorded ? "recorded" : "estimated"},
                       {"latency_us", options.cost_model.latency_us},
                       {"bandwidth_gbytes_per_s", options.cost_model.bandwidth_gbytes_per_s},
                       {"step_latency_us", options.cost_model.step_latency_us}};
  return root.dump(1) + "\n";
}

void write_chrome_trace(const std::string& path, const trace::CommTrace& trace, const ChromeTraceOptions& options) {
  trace::write_text_file(path, chrome_trace_json(trace, options));
}

}  // namespace dtensor::debug
