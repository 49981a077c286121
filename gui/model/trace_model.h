// Trace model of the viewer: the comm trace JSON of trace/comm_trace_schema.md
// (schema versions 1 and 2) as plain structs: the module tree with forward/backward
// collective counts and bytes, parameters' sharding, the events of every rank
// and per-rank totals. Loading lives in trace_loader.h.
//   const ModuleNode& root = trace.root;   // fqn "Global"
//   root.total_forward();                  // collectives issued in forward
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "layout/collective_origin.h"

namespace dtensor::gui {

// Collective name -> value (a count or bytes), ordered by name.
using KindMap = std::map<std::string, int64_t>;

// One DTensor operation seen inside a module (kept for tooltips).
struct TraceOperation {
  std::string name;
  std::vector<std::string> input_sharding;
  std::string device_mesh;
};

// One module of the tree. Counts include the module's descendants, as
// PyTorch's CommDebugMode reports them.
struct ModuleNode {
  // "Global" for the root, else the module path ("MLP.net1").
  std::string fqn;
  // The C++ module's name() ("torch::nn::Linear"); empty for Global.
  std::string module_type;
  // (parameter name, placements text such as "[S(0), R]").
  std::vector<std::pair<std::string, std::string>> parameters;
  KindMap forward_counts;
  KindMap backward_counts;
  KindMap forward_bytes;
  KindMap backward_bytes;
  std::vector<TraceOperation> forward_operations;
  std::vector<TraceOperation> backward_operations;
  std::vector<ModuleNode> children;

  // Sum of forward_counts (collectives issued in forward).
  int64_t total_forward() const;
  // Sum of backward_counts.
  int64_t total_backward() const;
  // Sum of forward and backward bytes.
  int64_t total_bytes() const;
  // The last path component: "net1" for "MLP.net1", the fqn itself otherwise.
  std::string short_name() const;
};

// Why a collective happened (schema 2's "origin" of an event): core's plain
// struct (explicit or implicit, cause, op, input index, from/to placements,
// mesh dim, step, chosen and rejected strategy), shared with debug/.
using TraceOrigin = ::dtensor::CollectiveOrigin;

// One collective issued by one rank, in issue order (`seq`).
struct TraceEvent {
  int64_t rank = 0;
  int64_t seq = 0;
  std::string kind;
  int64_t bytes = 0;
  std::vector<int64_t> group;
  // -1 when the group is not a mesh dim's group.
  int mesh_dim = -1;
  std::string module;
  // "forward" or "backward" (anything else is kept as written).
  std::string phase;
  std::vector<int64_t> shape;
  std::string dtype;
  // Bytes received into the output (all_gather: the gathered tensor).
  int64_t output_bytes = 0;
  // Why it happened; unset in traces before schema 2 and PyTorch's files.
  std::optional<TraceOrigin> origin;
};

// The mesh the trace was recorded on, when the file says.
struct TraceMesh {
  std::vector<int64_t> shape;
  std::vector<std::string> dim_names;
};

// One rank's memory during the trace (the JSON's optional "memory", on
// worlds that count it: fake and solo).
struct RankMemory {
  int64_t peak_bytes = 0;
  int64_t current_bytes = 0;  // live bytes when the trace ended
  int64_t cap_bytes = 0;      // 0: no cap
  std::string peak_location;  // "<module FQN> <phase>"
};

// A loaded trace file.
struct Trace {
  // Where it came from (path, or a name given to parse_trace_json).
  std::string source;
  // dtensor_schema_version; 0 when absent (a PyTorch comm_mode_log.json).
  int schema_version = 0;
  // World size from the file, else 1 + the largest rank seen (0 if none).
  int64_t world_size = 0;
  // Rank whose view the tree shows; -1 for a merged view or when absent.
  int64_t rank = -1;
  std::optional<TraceMesh> mesh;
  ModuleNode root;
  // Sorted by (rank, seq).
  std::vector<TraceEvent> events;
  // rank -> collective -> count; from the file, else derived from events.
  std::map<int64_t, KindMap> per_rank_counts;
  // Ranks whose counts differ from the lowest rank's; from the file, else
  // derived from per_rank_counts.
  std::vector<int64_t> differing_ranks;
  // rank -> memory; empty when the file has none.
  std::map<int64_t, RankMemory> memory;
  // Non-fatal oddities noticed while loading (unknown phase names, ...).
  std::vector<std::string> warnings;

  // Number of modules in the tree, the root included.
  int64_t module_count() const;
};

}  // namespace dtensor::gui
