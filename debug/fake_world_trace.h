// FakeWorldTrace: the world-level view of a fake-world run. Create it outside
// run_fake_world, let every rank's CommDebugMode publish into it, and query
// the merged trace after run_fake_world returns.
//   debug::FakeWorldTrace world_trace;
//   run_fake_world(4, [&](World&) {
//     debug::CommDebugMode comm(&world_trace);     // publishes when its guard ends
//     { auto guard = comm.enter(*model); ... }
//   });
//   world_trace.differing_ranks();                  // {} for an SPMD program
//   world_trace.generate_json_dump("comm_mode_log.json");
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "layout/comm_cost.h"
#include "debug/chrome_trace.h"
#include "trace/trace_model.h"

namespace dtensor::debug {

/// Thread-safe collector of per-rank traces. Queries without a rank answer
/// for the reference rank (the lowest rank that published): in an SPMD
/// program every rank issues the same collectives, and differing_ranks()
/// names those that did not.
class FakeWorldTrace {
 public:
  FakeWorldTrace() = default;
  FakeWorldTrace(const FakeWorldTrace&) = delete;
  FakeWorldTrace& operator=(const FakeWorldTrace&) = delete;

  /// Stores `rank_trace` (rank >= 0) as that rank's trace, replacing what the
  /// rank published before (entering a mode again resets its counts).
  void add(const trace::CommTrace& rank_trace);
  /// Forgets every rank's trace.
  void clear();

  /// Ranks that published, ascending.
  std::vector<int64_t> ranks() const;
  /// The merged trace (rank -1): every rank's records, times on a common
  /// clock, the module tree of all ranks, per-rank counts and differences.
  trace::CommTrace trace() const;
  /// One rank's trace as published. Throws when `rank` did not publish.
  trace::CommTrace rank_trace(int64_t rank) const;

  trace::KindCounts get_comm_counts() const;
  trace::KindCounts get_comm_counts(int64_t rank) const;
  int64_t get_total_counts() const;
  trace::ModuleCounts get_comm_module_counts() const;
  trace::ModuleCounts get_comm_module_counts(int64_t rank) const;
  /// rank -> collective -> count.
  std::map<int64_t, trace::KindCounts> per_rank_counts() const;
  /// Ranks whose per-module counts differ from the reference rank's.
  std::vector<int64_t> differing_ranks() const;
  /// One line per difference: "rank 2: MLPModule.net2 forward all_reduce: 2 (rank 0: 1)".
  std::vector<std::string> rank_differences() const;

  /// The reference rank's table, then the differing ranks (see
  /// comm_debug_tracing_table); colour when stdout is a terminal.
  std::string generate_comm_debug_tracing_table(int noise_level = 3) const;
  void log_comm_debug_tracing_table_to_file(const std::string& path = "comm_mode_log.txt",
                                            int noise_level = 3) const;
  /// The merged JSON (schema: trace/comm_trace_schema.md).
  void generate_json_dump(const std::string& path = "comm_mode_log.json", int noise_level = 3) const;
  /// One track per rank (see chrome_trace.h).
  void generate_chrome_trace(const std::string& path, const ChromeTraceOptions& options = {}) const;

 private:
  int64_t reference_rank_locked() const;
  mutable std::mutex mutex_;
  std::map<int64_t, trace::CommTrace> ranks_;
};

}  // namespace dtensor::debug
