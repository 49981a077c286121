// Comm table model: filtering, sibling sorting and per-rank differences. See
// comm_table_model.h.
#include "gui/model/comm_table_model.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <tuple>

#include "layout/collective_kind.h"
#include "trace/collective_name.h"

namespace dtensor::gui {
namespace {

std::string lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

bool contains(const std::string& haystack, const std::string& needle_lower) {
  return lower(haystack).find(needle_lower) != std::string::npos;
}

bool module_matches(const trace::ModuleNode& node, const std::string& needle) {
  if (needle.empty() || contains(node.fqn, needle) || contains(node.module_type, needle))
    return true;
  for (const trace::KindCounts* map : {&node.forward_counts, &node.backward_counts}) {
    for (const auto& [kind, count] : *map) {
      if (count > 0 && contains(kind, needle)) return true;
    }
  }
  for (const auto& [name, placements] : node.parameters) {
    if (contains(name, needle)) return true;
  }
  return false;
}

// Sort key for one column; names sort as strings, the rest as numbers.
bool less_by(const trace::ModuleNode& a, const trace::ModuleNode& b, CommSortColumn column) {
  switch (column) {
    case CommSortColumn::kName:
      return a.short_name() < b.short_name();
    case CommSortColumn::kForward:
      return a.total_forward() < b.total_forward();
    case CommSortColumn::kBackward:
      return a.total_backward() < b.total_backward();
    case CommSortColumn::kBytes:
      return a.total_bytes() < b.total_bytes();
    case CommSortColumn::kTree:
      break;
  }
  return false;
}

std::optional<TableNode> filter_node(const trace::ModuleNode& node, const std::string& needle,
                                     const CommTableOptions& options) {
  TableNode out;
  out.module = &node;
  out.matches = module_matches(node, needle);
  for (const trace::ModuleNode& child : node.children) {
    if (std::optional<TableNode> kept = filter_node(child, needle, options)) {
      out.children.push_back(std::move(*kept));
    }
  }
  if (!out.matches && out.children.empty()) return std::nullopt;
  if (options.column != CommSortColumn::kTree) {
    std::stable_sort(out.children.begin(), out.children.end(),
                     [&](const TableNode& a, const TableNode& b) {
                       return options.descending ? less_by(*b.module, *a.module, options.column)
                                                 : less_by(*a.module, *b.module, options.column);
                     });
  }
  return out;
}

// fqn -> parent fqn ("" for the root), from the tree.
void collect_parents(const trace::ModuleNode& node, const std::string& parent,
                     std::map<std::string, std::string>* parents) {
  parents->emplace(node.fqn, parent);
  for (const trace::ModuleNode& child : node.children) collect_parents(child, node.fqn, parents);
}

// Ranks whose counts differ from the most common counts among all ranks.
std::vector<int64_t> outlier_ranks(const std::map<int64_t, trace::KindCounts>& by_rank) {
  std::map<trace::KindCounts, int> votes;
  for (const auto& [rank, counts] : by_rank) ++votes[counts];
  if (votes.size() <= 1) return {};
  auto majority = std::max_element(
      votes.begin(), votes.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  std::vector<int64_t> out;
  for (const auto& [rank, counts] : by_rank) {
    if (counts != majority->first) out.push_back(rank);
  }
  return out;
}

}  // namespace

std::optional<TableNode> build_comm_tree(const trace::ModuleNode& root,
                                         const CommTableOptions& options) {
  return filter_node(root, lower(options.filter), options);
}

std::map<std::string, ModuleRankCounts> module_rank_counts(const trace::CommTrace& trace,
                                                           const trace::ModuleNode& tree) {
  std::map<std::string, ModuleRankCounts> out;
  if (trace.collectives.empty()) return out;
  std::map<std::string, std::string> parents;  // the tree's modules: only those get a row
  collect_parents(tree, "", &parents);
  std::set<int64_t> ranks;
  for (const trace::CollectiveRecord& e : trace.collectives) ranks.insert(e.rank);
  for (int64_t rank : ranks) {
    // trace::comm_module_counts does the aggregation over ancestors.
    const trace::ModuleCounts counts = trace::comm_module_counts(trace::rank_view(trace, rank));
    for (const auto& [fqn, parent] : parents) {
      trace::KindCounts& cell = out[fqn].by_rank[rank];
      const auto module = counts.find(fqn);
      if (module == counts.end()) continue;
      for (const auto& [phase, kinds] : module->second) {
        for (const auto& [kind, n] : kinds) {
          if (n > 0) cell[kind + " (" + phase + ")"] = n;
        }
      }
    }
  }
  for (auto& [fqn, counts] : out) counts.differing_ranks = outlier_ranks(counts.by_rank);
  return out;
}

std::string collective_abbreviation(const std::string& kind) {
  const std::optional<CollectiveKind> known = trace::kind_of_collective(kind);
  if (!known) return kind;
  switch (*known) {
    case CollectiveKind::kAllReduce:
      return "AR";
    case CollectiveKind::kAllGatherIntoTensor:
      return "AG";
    case CollectiveKind::kReduceScatterTensor:
      return "RS";
    case CollectiveKind::kAllToAllSingle:
      return "A2A";
    case CollectiveKind::kBroadcast:
      return "BC";
    case CollectiveKind::kScatter:
      return "SC";
    case CollectiveKind::kBarrier:
      return "BAR";
  }
  return kind;
}

std::map<std::string, std::vector<int64_t>> per_rank_outliers(const trace::CommTrace& trace) {
  std::map<std::string, std::vector<int64_t>> out;
  for (const std::string& kind : per_rank_kinds(trace)) {
    std::map<int64_t, int> votes;
    for (const auto& [rank, counts] : trace.per_rank_counts) {
      auto it = counts.find(kind);
      ++votes[it == counts.end() ? 0 : it->second];
    }
    if (votes.size() <= 1) continue;
    int64_t majority =
        std::max_element(votes.begin(), votes.end(), [](const auto& a, const auto& b) {
          return a.second < b.second;
        })->first;
    for (const auto& [rank, counts] : trace.per_rank_counts) {
      auto it = counts.find(kind);
      if ((it == counts.end() ? 0 : it->second) != majority) out[kind].push_back(rank);
    }
  }
  return out;
}

std::vector<std::string> per_rank_kinds(const trace::CommTrace& trace) {
  std::set<std::string> kinds;
  for (const auto& [rank, counts] : trace.per_rank_counts) {
    for (const auto& [kind, count] : counts) kinds.insert(kind);
  }
  return {kinds.begin(), kinds.end()};
}

int64_t default_calls_rank(const trace::CommTrace& trace) {
  if (trace.collectives.empty()) return -1;
  for (const trace::CollectiveRecord& e : trace.collectives) {
    if (e.rank == trace.rank) return e.rank;
  }
  return trace.collectives.front().rank;  // sorted by (rank, seq)
}

std::vector<size_t> calls_of_rank(const trace::CommTrace& trace, int64_t rank, bool implicit_only,
                                  const std::string& filter) {
  std::vector<size_t> out;
  const std::string needle = lower(filter);
  for (size_t i = 0; i < trace.collectives.size(); ++i) {
    const trace::CollectiveRecord& e = trace.collectives[i];
    if (e.rank != rank) continue;
    if (implicit_only && !(e.origin && !e.origin->is_explicit)) continue;
    if (!needle.empty()) {
      std::string haystack = e.module + "\n" + e.kind;
      if (e.origin) haystack += "\n" + e.origin->op + "\n" + e.origin->cause;
      if (!contains(haystack, needle)) continue;
    }
    out.push_back(i);
  }
  return out;
}

OriginCounts origin_counts(const trace::CommTrace& trace) {
  OriginCounts counts;
  for (const trace::CollectiveRecord& e : trace.collectives) {
    if (!e.origin) continue;
    ++counts.with_origin;
    if (!e.origin->is_explicit) ++counts.implicit;
  }
  return counts;
}

}  // namespace dtensor::gui
