// Comm trace JSON loading for the viewer: an adapter over debug's reader
// (trace/trace_json.h, read_comm_trace_json), which checks every key; this
// file turns its document into the viewer's Trace, derives what the file
// lacks, and turns every failure into one message. See trace_loader.h.
#include "gui/model/trace_loader.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <exception>
#include <fstream>
#include <set>
#include <tuple>

#include "trace/trace_json.h"

namespace dtensor::gui {
namespace {

using trace::TraceJsonError;

constexpr std::streamoff kMaxFileBytes = std::streamoff{256} << 20;

std::vector<TraceOperation> operations_of(const std::vector<trace::TraceJsonOp>& ops) {
  std::vector<TraceOperation> out;
  for (const trace::TraceJsonOp& op : ops) out.push_back({op.name, op.input_sharding, op.device_mesh});
  return out;
}

ModuleNode node_of(const trace::TraceJsonNode& n) {
  ModuleNode node;
  node.fqn = n.fqn;
  node.module_type = n.module_type;
  node.parameters = n.parameters;
  node.forward_counts = n.collectives_forward;
  node.backward_counts = n.collectives_backward;
  node.forward_bytes = n.bytes_forward;
  node.backward_bytes = n.bytes_backward;
  node.forward_operations = operations_of(n.operations_forward);
  node.backward_operations = operations_of(n.operations_backward);
  for (const trace::TraceJsonNode& child : n.children) node.children.push_back(node_of(child));
  return node;
}

TraceEvent event_of(const trace::TraceJsonEvent& e) {
  TraceEvent out;
  out.rank = e.rank;
  out.seq = e.seq;
  out.kind = e.kind;
  out.bytes = e.bytes;
  out.output_bytes = e.output_bytes;
  out.group = e.group;
  out.mesh_dim = static_cast<int>(std::min<int64_t>(e.mesh_dim, 64));
  out.module = e.module;
  out.phase = e.phase;
  if (!e.input_shapes.empty()) out.shape = e.input_shapes.front();
  out.dtype = e.dtype;
  out.origin = e.origin;
  return out;
}

Trace trace_of(const trace::TraceJsonDocument& doc, const std::string& source) {
  Trace trace;
  trace.source = source;
  trace.schema_version = static_cast<int>(doc.schema_version);
  trace.world_size = doc.world_size.value_or(0);
  trace.rank = doc.rank.value_or(-1);
  if (doc.mesh) trace.mesh = TraceMesh{doc.mesh->shape, doc.mesh->dim_names};
  trace.root = node_of(doc.root);
  std::set<std::string> odd_phases;
  if (doc.events) {
    for (const trace::TraceJsonEvent& e : *doc.events) {
      if (e.phase != "forward" && e.phase != "backward") odd_phases.insert(e.phase);
      trace.events.push_back(event_of(e));
    }
  }
  for (const std::string& phase : odd_phases) {
    trace.warnings.push_back("events with phase \"" + phase + "\" (expected forward or backward)");
  }
  std::stable_sort(trace.events.begin(), trace.events.end(), [](const TraceEvent& a, const TraceEvent& b) {
    return std::tie(a.rank, a.seq) < std::tie(b.rank, b.seq);
  });
  trace.per_rank_counts = doc.per_rank_counts;
  trace.differing_ranks = doc.differing_ranks;
  for (const auto& [rank, m] : doc.memory) {
    trace.memory[rank] = RankMemory{m.peak_bytes, m.current_bytes, m.cap_bytes, m.peak_location};
  }
  return trace;
}

// Fills per_rank_counts / differing_ranks / world_size when the file lacks
// them; "" or why the trace is inconsistent.
std::string derive_missing(Trace* trace) {
  int64_t max_rank = -1;
  for (const TraceEvent& e : trace->events) max_rank = std::max(max_rank, e.rank);
  for (const auto& [rank, counts] : trace->per_rank_counts) max_rank = std::max(max_rank, rank);
  if (trace->world_size == 0) trace->world_size = max_rank + 1;
  if (max_rank >= trace->world_size) {
    return "rank " + std::to_string(max_rank) + " appears but world_size is " + std::to_string(trace->world_size);
  }
  if (trace->per_rank_counts.empty()) {
    for (const TraceEvent& e : trace->events) ++trace->per_rank_counts[e.rank][e.kind];
  }
  if (trace->differing_ranks.empty() && !trace->per_rank_counts.empty()) {
    const KindMap& first = trace->per_rank_counts.begin()->second;
    for (const auto& [rank, counts] : trace->per_rank_counts) {
      if (counts != first) trace->differing_ranks.push_back(rank);
    }
  }
  return "";
}

}  // namespace

TraceLoadResult parse_trace_json(std::string_view text, const std::string& source) {
  TraceLoadResult result;
  const std::string not_a_trace = "'" + source + "' is not a comm trace (trace/comm_trace_schema.md): ";
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    result.error = "'" + source + "' is empty: expected a comm trace JSON object";
    return result;
  }
  try {
    Trace trace = trace_of(trace::read_comm_trace_json(text), source);
    if (std::string problem = derive_missing(&trace); !problem.empty()) {
      result.error = not_a_trace + problem;
      return result;
    }
    result.trace = std::move(trace);
  } catch (const TraceJsonError& e) {
    switch (e.kind()) {
      case TraceJsonError::Kind::kSyntax:
        result.error = "'" + source + "' is not valid JSON: " + e.what();
        break;
      case TraceJsonError::Kind::kNewerVersion:
        result.error = not_a_trace + "dtensor_schema_version is " + std::to_string(e.schema_version()) +
                       " but this viewer reads version " + std::to_string(kTraceSchemaVersion) +
                       "; use a newer dtensor-viewer";
        break;
      default:
        result.error = not_a_trace + e.what();
    }
  } catch (const std::exception& e) {
    result.error = not_a_trace + e.what();
  }
  return result;
}

TraceLoadResult load_trace_file(const std::string& path) {
  TraceLoadResult result;
  try {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      result.error = "cannot open '" + path + "': " + std::strerror(errno);
      return result;
    }
    in.seekg(0, std::ios::end);
    const std::streamoff size = in.tellg();
    if (size < 0) {
      result.error = "cannot read '" + path + "' (is it a directory?)";
      return result;
    }
    if (size > kMaxFileBytes) {
      result.error = "'" + path + "' is larger than 256 MiB; not loading it";
      return result;
    }
    in.seekg(0, std::ios::beg);
    std::string text(static_cast<size_t>(size), '\0');
    in.read(text.data(), size);
    if (!in) {
      result.error = "cannot read '" + path + "'";
      return result;
    }
    return parse_trace_json(text, path);
  } catch (const std::exception& e) {
    result.error = "cannot read '" + path + "': " + e.what();
  }
  return result;
}

}  // namespace dtensor::gui
