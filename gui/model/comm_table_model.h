// Comm table model: the module tree of a trace filtered by text and sorted by
// a column (siblings only, so the tree shape stays), plus per-module per-rank
// differences computed from the trace's events. No ImGui.
//   CommTableOptions options;
//   options.filter = "attention";
//   options.column = CommSortColumn::kBytes;
//   std::optional<TableNode> tree = build_comm_tree(loaded.tree, options);
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "trace/module_tree.h"
#include "trace/trace_model.h"

namespace dtensor::gui {

// The columns the comm table sorts by.
enum class CommSortColumn { kTree, kName, kForward, kBackward, kBytes };

// Filter and sort chosen in the panel.
struct CommTableOptions {
  // Case-insensitive substring matched against fqn, module type, collective
  // names and parameter names; empty keeps everything.
  std::string filter;
  // kTree keeps the file's order.
  CommSortColumn column = CommSortColumn::kTree;
  bool descending = false;
};

// A module kept by the filter, with its kept children in display order.
struct TableNode {
  const trace::ModuleNode* module = nullptr;
  // True when this module itself matches the filter (not only a descendant).
  bool matches = false;
  std::vector<TableNode> children;
};

// The filtered, sorted tree: a module stays when it or a descendant matches;
// nullopt when nothing matches. `root` must outlive the result.
std::optional<TableNode> build_comm_tree(const trace::ModuleNode& root,
                                         const CommTableOptions& options);

// Per-rank collective counts of one module (including descendants), from events.
struct ModuleRankCounts {
  // rank -> "kind (forward)" / "kind (backward)" -> count.
  std::map<int64_t, trace::KindCounts> by_rank;
  // Ranks whose counts differ from the most common counts of this module.
  std::vector<int64_t> differing_ranks;
};

// For every module fqn of `tree` (the trace's module tree): the per-rank
// counts of the collectives issued inside it or its descendants (a
// collective's module is its innermost module; those naming no module of the
// tree count for Global only). Ranks with no collective in a module count as
// empty. Empty when the trace has no collectives.
std::map<std::string, ModuleRankCounts> module_rank_counts(const trace::CommTrace& trace,
                                                           const trace::ModuleNode& tree);

// Short label of a collective for narrow cells: "AR" all_reduce, "AG"
// all_gather_into_tensor, "RS" reduce_scatter_tensor, "A2A" all_to_all_single,
// "BC" broadcast, "SC" scatter, "BAR" barrier, also for other spellings of
// these (trace::kind_of_collective: "c10d_functional.all_reduce" -> "AR");
// other names are returned as is.
std::string collective_abbreviation(const std::string& kind);

// Per column (collective kind) of the per-rank totals, the ranks whose count
// differs from the most common count of that kind.
std::map<std::string, std::vector<int64_t>> per_rank_outliers(const trace::CommTrace& trace);

// Kinds present in the per-rank totals, sorted, for the table's columns.
std::vector<std::string> per_rank_kinds(const trace::CommTrace& trace);

// The rank whose calls the comm table lists by default: the trace's own rank,
// else the lowest rank with collectives; -1 when there are none.
// Precondition: trace.collectives sorted by (rank, seq) (as loaded).
int64_t default_calls_rank(const trace::CommTrace& trace);

// Indices into trace.collectives of `rank`'s calls in issue order; with
// `implicit_only`, only those whose origin says implicit; with a `filter`,
// only those whose module, kind, origin op or cause contains it (ignoring case).
std::vector<size_t> calls_of_rank(const trace::CommTrace& trace, int64_t rank, bool implicit_only,
                                  const std::string& filter = "");

// Collectives with an origin, and how many of them are implicit.
struct OriginCounts {
  int64_t with_origin = 0;
  int64_t implicit = 0;
};
OriginCounts origin_counts(const trace::CommTrace& trace);

}  // namespace dtensor::gui
