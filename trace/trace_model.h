// The data a comm trace holds (collectives, DTensor/local op records, the
// module tree) as plain values, and the aggregations PyTorch's CommDebugMode
// answers (counts by kind, by module and phase). No LibTorch: the JSON writer,
// tables, Chrome trace and reports all work on this.
//   CommTrace t = comm.trace();
//   comm_module_counts(t)["MLPModule.net2"]["forward"]["all_reduce"];   // 1
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "layout/collective_origin.h"

namespace dtensor::trace {

/// The root of every module tree: collectives outside any tracked module.
inline constexpr const char* kGlobalFqn = "Global";

enum class Phase { kForward, kBackward };

/// "forward" / "backward".
const char* phase_name(Phase phase);
/// Inverse of phase_name; nullopt for anything else.
std::optional<Phase> parse_phase(std::string_view name);

/// Why a collective happened (see layout/collective_origin.h): explicit
/// (the API the user called) or implicit (the op, the input, the strategy
/// sharding propagation chose and the cheapest one it rejected).
using CollectiveOriginRecord = ::dtensor::CollectiveOrigin;

/// One collective issued by one rank.
struct CollectiveRecord {
  int64_t rank = 0;
  int64_t seq = 0;                  // order among this rank's collectives in the trace, from 0
  std::string kind;                 // "all_reduce", ... (CollectiveEvent's name)
  std::string module = kGlobalFqn;  // innermost module FQN
  Phase phase = Phase::kForward;
  int64_t bytes = 0;           // bytes this rank contributed (input)
  int64_t output_bytes = 0;    // bytes this rank received into its output
  std::vector<int64_t> group;  // global ranks, in group order
  int64_t mesh_dim = -1;       // dim of CommTrace::mesh it ran over (core/collectives tags it), or -1
  std::string mesh_dim_name;   // that dim's name ("tp"), "" when unnamed or unknown
  std::vector<std::vector<int64_t>> input_shapes;
  std::vector<std::vector<int64_t>> output_shapes;
  std::string dtype;      // "Float"
  std::string reduce_op;  // "sum" for reductions, else ""
  double ts_us = 0;       // issue time, microseconds after CommTrace::epoch_us
  /// Why it happened; nullopt when unknown (a Communicator called directly,
  /// a trace of schema version 1 or from PyTorch).
  std::optional<CollectiveOriginRecord> origin;
};

/// One operator call seen on a rank: a DTensor op (with input placements), or
/// a local op on plain tensors (`dtensor == false`, empty input_sharding).
struct OpRecord {
  int64_t rank = 0;
  std::string name;  // "aten::mm", "aten::add.Tensor"
  std::string module = kGlobalFqn;
  Phase phase = Phase::kForward;
  bool dtensor = true;
  std::vector<std::vector<int64_t>> input_shapes;  // global shapes for DTensor inputs
  std::vector<std::string> input_sharding;         // "[S(0), R]" per DTensor input
  std::string device_mesh;                         // "DeviceMesh(cpu, (4))", "" for local ops
};

/// A module seen in forward. `parent` is the module that was running when it
/// was first entered (kGlobalFqn for top-level modules).
struct ModuleRecord {
  std::string fqn;
  std::string module_type;  // "torch::nn::Linear"
  std::string parent = kGlobalFqn;
  /// DTensor parameters (non-recursive): name -> placements text "[S(0)]".
  std::vector<std::pair<std::string, std::string>> parameters;
};

/// The primary mesh of a trace (the largest one seen), for mesh-dim names.
struct MeshRecord {
  std::vector<int64_t> shape;
  std::vector<std::string> dim_names;
  std::string device;  // "cpu", "meta", "cuda:0"
};

/// One rank's memory over a trace session, on worlds that count it (fake,
/// solo; see backends/rank_memory.h): the peak of live bytes during the
/// session and the module and phase it was reached in ("Transformer.layers.0
/// backward").
struct RankMemoryRecord {
  int64_t peak_bytes = 0;
  int64_t current_bytes = 0;  // live bytes when the session ended
  int64_t cap_bytes = 0;      // 0 = no cap
  std::string peak_location;
};

/// A trace: one rank's (rank >= 0) or a merged fake-world view (rank == -1,
/// records of every rank, see FakeWorldTrace).
struct CommTrace {
  int64_t rank = 0;
  int64_t world_size = 1;
  double epoch_us = 0;  // steady-clock time the trace started (for merging)
  std::optional<MeshRecord> mesh;
  std::vector<ModuleRecord> modules;  // first-entry order: parents before children
  std::vector<CollectiveRecord> collectives;
  std::vector<OpRecord> operations;
  // Merged traces only: each rank's totals, the ranks whose module counts
  // differ from the reference rank's (an SPMD program has none), and why.
  std::map<int64_t, std::map<std::string, int64_t>> per_rank_counts;
  std::vector<int64_t> differing_ranks;
  std::vector<std::string> rank_differences;
  // Rank -> its memory during the session; empty when the world counts no
  // memory (Gloo, NCCL). Optional in the JSON ("memory").
  std::map<int64_t, RankMemoryRecord> memory;
};

/// kind -> count (or bytes).
using KindCounts = std::map<std::string, int64_t>;
/// fqn -> "forward"/"backward" -> kind -> count (PyTorch's comm_module_counts).
using ModuleCounts = std::map<std::string, std::map<std::string, KindCounts>>;

/// Collectives by kind. Example: {"all_reduce": 1}.
KindCounts comm_counts(const CommTrace& trace);
/// Number of collectives.
int64_t total_counts(const CommTrace& trace);
/// Counts per module and phase; every ancestor of a record's module in the
/// module tree (Global included) receives its count, as in PyTorch. Global is
/// always present (with both phases); other modules only when they count
/// something.
ModuleCounts comm_module_counts(const CommTrace& trace);
/// The same aggregation over CollectiveRecord::bytes.
ModuleCounts comm_module_bytes(const CommTrace& trace);

/// Differences between two module-count tables, one line each:
/// "<fqn> <phase> <kind>: <actual> (<expected_label>: <expected>)"; empty when equal.
std::vector<std::string> diff_module_counts(const ModuleCounts& expected, const ModuleCounts& actual,
                                            const std::string& expected_label);

/// [Global, ..., fqn]: the path from the root to `fqn` in the module tree.
/// An fqn not in the tree gives [Global, fqn].
std::vector<std::string> module_path(const CommTrace& trace, const std::string& fqn);
/// Depth in the tree: 0 for Global, 1 for top-level modules.
int module_depth(const CommTrace& trace, const std::string& fqn);
/// Children of `fqn` in first-entry order.
std::vector<std::string> module_children(const CommTrace& trace, const std::string& fqn);
/// The record of `fqn`, or nullptr (also for Global).
const ModuleRecord* find_module(const CommTrace& trace, const std::string& fqn);

/// True for PyTorch's trivial ops (hidden below noise level 3): aten::detach,
/// aten::t, aten::view, aten::_to_copy, aten::as_strided, aten::transpose.int.
bool is_trivial_op(const std::string& name);

/// What a noise level shows (PyTorch's levels):
/// 0: module collective counts; 1: + module type, parameters, non-trivial
/// DTensor ops; 2: + non-trivial local (non-DTensor) ops; 3: + trivial ops.
struct NoiseFilter {
  bool module_data = false;
  bool dtensor_ops = false;
  bool local_ops = false;
  bool trivial_ops = false;
  explicit NoiseFilter(int noise_level);
  bool shows(const OpRecord& op) const;
};

/// Only `rank`'s records (module tree and mesh kept; merged-only fields cleared).
CommTrace rank_view(const CommTrace& trace, int64_t rank);
/// Ranks that have records or per-rank counts, ascending.
std::vector<int64_t> ranks_in(const CommTrace& trace);

}  // namespace dtensor::trace
