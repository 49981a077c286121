// Merging per-rank comm traces of a fake world.
#include "debug/fake_world_trace.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <set>

#include "trace/trace_json.h"
#include "debug/tracing_table.h"

namespace dtensor::debug {

void FakeWorldTrace::add(const trace::CommTrace& rank_trace) {
  TORCH_CHECK(rank_trace.rank >= 0, "FakeWorldTrace::add: expected one rank's trace, got a merged one (rank ",
              rank_trace.rank, ")");
  std::lock_guard<std::mutex> lock(mutex_);
  ranks_[rank_trace.rank] = rank_trace;
}

void FakeWorldTrace::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  ranks_.clear();
}

std::vector<int64_t> FakeWorldTrace::ranks() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<int64_t> out;
  for (const auto& entry : ranks_) out.push_back(entry.first);
  return out;
}

int64_t FakeWorldTrace::reference_rank_locked() const {
  TORCH_CHECK(!ranks_.empty(),
              "FakeWorldTrace: no rank published a trace; construct each rank's CommDebugMode "
              "with this FakeWorldTrace (CommDebugMode comm(&world_trace)) or call add(comm.trace())");
  return ranks_.begin()->first;
}

trace::CommTrace FakeWorldTrace::rank_trace(int64_t rank) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = ranks_.find(rank);
  TORCH_CHECK(it != ranks_.end(), "FakeWorldTrace: rank ", rank, " did not publish a trace");
  return it->second;
}

trace::CommTrace FakeWorldTrace::trace() const {
  std::lock_guard<std::mutex> lock(mutex_);
  trace::CommTrace merged;
  merged.rank = -1;
  if (ranks_.empty()) return merged;
  double epoch = ranks_.begin()->second.epoch_us;
  for (const auto& entry : ranks_) epoch = std::min(epoch, entry.second.epoch_us);
  merged.epoch_us = epoch;
  const int64_t reference = reference_rank_locked();
  const trace::CommTrace& ref = ranks_.at(reference);
  const trace::ModuleCounts ref_counts = comm_module_counts(ref);
  std::set<std::string> known;
  for (const auto& [rank, t] : ranks_) {
    merged.world_size = std::max(merged.world_size, t.world_size);
    if (!merged.mesh && t.mesh) merged.mesh = t.mesh;
    for (const trace::ModuleRecord& m : t.modules) {
      if (known.insert(m.fqn).second) merged.modules.push_back(m);
    }
    const double shift = t.epoch_us - epoch;
    for (trace::CollectiveRecord r : t.collectives) {
      r.ts_us += shift;
      merged.collectives.push_back(std::move(r));
    }
    merged.operations.insert(merged.operations.end(), t.operations.begin(), t.operations.end());
    merged.per_rank_counts[rank] = comm_counts(t);
    for (const auto& [r, m] : t.memory) merged.memory[r] = m;
    if (rank == reference) continue;
    std::vector<std::string> diffs =
        trace::diff_module_counts(ref_counts, comm_module_counts(t), "rank " + std::to_string(reference));
    if (diffs.empty()) continue;
    merged.differing_ranks.push_back(rank);
    for (const std::string& d : diffs)
      merged.rank_differences.push_back("rank " + std::to_string(rank) + ": " + d);
  }
  return merged;
}

trace::KindCounts FakeWorldTrace::get_comm_counts() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return comm_counts(ranks_.at(reference_rank_locked()));
}

trace::KindCounts FakeWorldTrace::get_comm_counts(int64_t rank) const { return comm_counts(rank_trace(rank)); }

int64_t FakeWorldTrace::get_total_counts() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return total_counts(ranks_.at(reference_rank_locked()));
}

trace::ModuleCounts FakeWorldTrace::get_comm_module_counts() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return comm_module_counts(ranks_.at(reference_rank_locked()));
}

trace::ModuleCounts FakeWorldTrace::get_comm_module_counts(int64_t rank) const {
  return comm_module_counts(rank_trace(rank));
}

std::map<int64_t, trace::KindCounts> FakeWorldTrace::per_rank_counts() const { return trace().per_rank_counts; }

std::vector<int64_t> FakeWorldTrace::differing_ranks() const { return trace().differing_ranks; }

std::vector<std::string> FakeWorldTrace::rank_differences() const { return trace().rank_differences; }

std::string FakeWorldTrace::generate_comm_debug_tracing_table(int noise_level) const {
  return comm_debug_tracing_table(trace(), noise_level, stdout_is_terminal());
}

void FakeWorldTrace::log_comm_debug_tracing_table_to_file(const std::string& path, int noise_level) const {
  trace::write_text_file(path, comm_debug_tracing_table(trace(), noise_level, /*color=*/false));
}

void FakeWorldTrace::generate_json_dump(const std::string& path, int noise_level) const {
  trace::write_text_file(path, comm_trace_to_json(trace(), noise_level));
}

void FakeWorldTrace::generate_chrome_trace(const std::string& path, const ChromeTraceOptions& options) const {
  write_chrome_trace(path, trace(), options);
}

}  // namespace dtensor::debug
