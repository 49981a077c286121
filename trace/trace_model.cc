// Aggregations over comm traces: counts by kind, module and phase.
#include "trace/trace_model.h"

#include <algorithm>
#include <set>
#include <unordered_map>

namespace dtensor::trace {

const char* phase_name(Phase phase) { return phase == Phase::kForward ? "forward" : "backward"; }

std::optional<Phase> parse_phase(std::string_view name) {
  if (name == "forward") return Phase::kForward;
  if (name == "backward") return Phase::kBackward;
  return std::nullopt;
}

KindCounts comm_counts(const CommTrace& trace) {
  KindCounts counts;
  for (const CollectiveRecord& r : trace.collectives) ++counts[r.kind];
  return counts;
}

int64_t total_counts(const CommTrace& trace) { return static_cast<int64_t>(trace.collectives.size()); }

const ModuleRecord* find_module(const CommTrace& trace, const std::string& fqn) {
  for (const ModuleRecord& m : trace.modules) {
    if (m.fqn == fqn) return &m;
  }
  return nullptr;
}

std::vector<std::string> module_path(const CommTrace& trace, const std::string& fqn) {
  std::unordered_map<std::string, const ModuleRecord*> by_fqn;
  for (const ModuleRecord& m : trace.modules) by_fqn.emplace(m.fqn, &m);
  std::vector<std::string> path;
  std::set<std::string> seen;  // a malformed (cyclic) tree must not loop
  std::string at = fqn;
  while (at != kGlobalFqn && seen.insert(at).second) {
    path.push_back(at);
    auto it = by_fqn.find(at);
    at = it == by_fqn.end() ? std::string(kGlobalFqn) : it->second->parent;
  }
  path.push_back(kGlobalFqn);
  std::reverse(path.begin(), path.end());
  return path;
}

int module_depth(const CommTrace& trace, const std::string& fqn) {
  return static_cast<int>(module_path(trace, fqn).size()) - 1;
}

std::vector<std::string> module_children(const CommTrace& trace, const std::string& fqn) {
  std::vector<std::string> children;
  for (const ModuleRecord& m : trace.modules) {
    if (m.parent == fqn && m.fqn != fqn) children.push_back(m.fqn);
  }
  return children;
}

namespace {

template <typename Value>
ModuleCounts aggregate(const CommTrace& trace, Value value) {
  ModuleCounts out;
  out[kGlobalFqn]["forward"];
  out[kGlobalFqn]["backward"];
  std::unordered_map<std::string, std::vector<std::string>> paths;  // cache per module
  for (const CollectiveRecord& r : trace.collectives) {
    auto it = paths.find(r.module);
    if (it == paths.end()) it = paths.emplace(r.module, module_path(trace, r.module)).first;
    for (const std::string& fqn : it->second) {
      auto& phases = out[fqn];
      phases["forward"];
      phases["backward"];
      phases[phase_name(r.phase)][r.kind] += value(r);
    }
  }
  return out;
}

}  // namespace

ModuleCounts comm_module_counts(const CommTrace& trace) {
  return aggregate(trace, [](const CollectiveRecord&) { return int64_t{1}; });
}

ModuleCounts comm_module_bytes(const CommTrace& trace) {
  return aggregate(trace, [](const CollectiveRecord& r) { return r.bytes; });
}

bool is_trivial_op(const std::string& name) {
  static const std::set<std::string> kTrivial = {"aten::detach",   "aten::t",          "aten::view",
                                                 "aten::_to_copy", "aten::as_strided", "aten::transpose.int"};
  return kTrivial.count(name) > 0;
}

NoiseFilter::NoiseFilter(int noise_level)
    : module_data(noise_level >= 1),
      dtensor_ops(noise_level >= 1),
      local_ops(noise_level >= 2),
      trivial_ops(noise_level >= 3) {}

bool NoiseFilter::shows(const OpRecord& op) const {
  if (op.dtensor ? !dtensor_ops : !local_ops) return false;
  return trivial_ops || !is_trivial_op(op.name);
}

CommTrace rank_view(const CommTrace& trace, int64_t rank) {
  CommTrace out;
  out.rank = rank;
  out.world_size = trace.world_size;
  out.epoch_us = trace.epoch_us;
  out.mesh = trace.mesh;
  out.modules = trace.modules;
  for (const CollectiveRecord& r : trace.collectives) {
    if (r.rank == rank) out.collectives.push_back(r);
  }
  for (const OpRecord& o : trace.operations) {
    if (o.rank == rank) out.operations.push_back(o);
  }
  if (auto it = trace.memory.find(rank); it != trace.memory.end()) out.memory[rank] = it->second;
  return out;
}

std::vector<int64_t> ranks_in(const CommTrace& trace) {
  std::set<int64_t> ranks;
  for (const CollectiveRecord& r : trace.collectives) ranks.insert(r.rank);
  for (const OpRecord& o : trace.operations) ranks.insert(o.rank);
  for (const auto& entry : trace.per_rank_counts) ranks.insert(entry.first);
  if (ranks.empty() && trace.rank >= 0) ranks.insert(trace.rank);
  return {ranks.begin(), ranks.end()};
}

// Phases and kinds of both tables, so that a count missing on one side shows as 0.
std::vector<std::string> diff_module_counts(const ModuleCounts& expected, const ModuleCounts& actual,
                                            const std::string& expected_label) {
  std::set<std::string> fqns;
  for (const auto& e : expected) fqns.insert(e.first);
  for (const auto& a : actual) fqns.insert(a.first);
  std::vector<std::string> out;
  for (const std::string& fqn : fqns) {
    for (const char* phase : {"forward", "backward"}) {
      auto lookup = [&](const ModuleCounts& table) {
        KindCounts k;
        if (auto it = table.find(fqn); it != table.end()) {
          if (auto p = it->second.find(phase); p != it->second.end()) k = p->second;
        }
        return k;
      };
      KindCounts e = lookup(expected);
      KindCounts a = lookup(actual);
      std::set<std::string> kinds;
      for (const auto& x : e) kinds.insert(x.first);
      for (const auto& x : a) kinds.insert(x.first);
      for (const std::string& kind : kinds) {
        const int64_t ev = e.count(kind) ? e.at(kind) : 0;
        const int64_t av = a.count(kind) ? a.at(kind) : 0;
        if (ev != av) {
          out.push_back(fqn + " " + phase + " " + kind + ": " + std::to_string(av) + " (" + expected_label +
                        ": " + std::to_string(ev) + ")");
        }
      }
    }
  }
  return out;
}

}  // namespace dtensor::trace
