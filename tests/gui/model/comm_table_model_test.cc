// Tests of the comm table model: filtering keeps ancestors, sorting keeps the
// tree, per-module per-rank differences, and the timeline lanes.
#include "gui/model/comm_table_model.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "gui/model/timeline_model.h"
#include "gui/model/trace_loader.h"

namespace dtensor::gui {
namespace {

// Global > A (fwd AR 1) > {A.x (fwd AR 1, bwd AG 2), A.y (param "bias")}; B (fwd RS 3).
// The tree of counts, and the events of three ranks (the tree is not rank 0's
// view of them: small_tree() reads the tree alone, small_trace() the events).
constexpr const char* kSmallTrace = R"({
    "fqn": "Global", "collectives_forward": [["all_reduce", 1], ["reduce_scatter_tensor", 3]],
    "children": [
      {"fqn": "A", "module_type": "Block", "collectives_forward": [["all_reduce", 1]],
       "children": [
         {"fqn": "A.x", "module_type": "torch::nn::Linear", "collectives_forward": [["all_reduce", 1]],
          "collectives_backward": [["all_gather_into_tensor", 2]], "bytes_backward": [["all_gather_into_tensor", 64]]},
         {"fqn": "A.y", "parameters": [["bias", "[R]"]]}]},
      {"fqn": "B", "collectives_forward": [["reduce_scatter_tensor", 3]], "bytes_forward": [["reduce_scatter_tensor", 128]]}],
    "events": [
      {"rank": 0, "seq": 0, "kind": "all_reduce", "module": "A.x", "phase": "forward", "bytes": 4},
      {"rank": 1, "seq": 0, "kind": "all_reduce", "module": "A.x", "phase": "forward", "bytes": 4},
      {"rank": 2, "seq": 0, "kind": "all_reduce", "module": "A.x", "phase": "forward", "bytes": 4},
      {"rank": 2, "seq": 1, "kind": "broadcast", "module": "B", "phase": "backward", "bytes": 4},
      {"rank": 0, "seq": 1, "kind": "all_reduce", "module": "not.in.tree", "phase": "forward", "bytes": 8},
      {"rank": 1, "seq": 1, "kind": "all_reduce", "module": "", "phase": "forward", "bytes": 4}
    ]})";

LoadedTrace small_trace() {
  TraceLoadResult loaded = parse_trace_json(kSmallTrace, "small");
  EXPECT_TRUE(loaded.trace) << loaded.error;
  return loaded.trace.value_or(LoadedTrace{});
}

// kSmallTrace without its events: the tree's counts as the file states them
// (a PyTorch-style dump; collectives rebuilt from the counts).
LoadedTrace small_tree() {
  nlohmann::json doc = nlohmann::json::parse(kSmallTrace);
  doc.erase("events");
  TraceLoadResult loaded = parse_trace_json(doc.dump(), "small tree");
  EXPECT_TRUE(loaded.trace) << loaded.error;
  return loaded.trace.value_or(LoadedTrace{});
}

std::vector<std::string> child_names(const TableNode& node) {
  std::vector<std::string> names;
  for (const TableNode& child : node.children) names.push_back(child.module->fqn);
  return names;
}

TEST(CommTableModelTest, NoFilterKeepsEverythingInFileOrder) {
  LoadedTrace trace = small_tree();
  std::optional<TableNode> tree = build_comm_tree(trace.tree, {});
  ASSERT_TRUE(tree);
  EXPECT_EQ(child_names(*tree), (std::vector<std::string>{"A", "B"}));
  EXPECT_EQ(child_names(tree->children[0]), (std::vector<std::string>{"A.x", "A.y"}));
}

TEST(CommTableModelTest, FilterKeepsMatchesAndTheirAncestors) {
  LoadedTrace trace = small_tree();
  const std::pair<const char*, std::vector<std::string>> table[] = {
      {"LINEAR", {"A"}},          // module type, case-insensitive
      {"all_gather", {"A"}},      // collective name
      {"bias", {"A"}},            // parameter name
      {"reduce_scatter", {"B"}},  // Global matches too, so both children are checked
  };
  for (const auto& [filter, top] : table) {
    SCOPED_TRACE(filter);
    CommTableOptions options;
    options.filter = filter;
    std::optional<TableNode> tree = build_comm_tree(trace.tree, options);
    ASSERT_TRUE(tree);
    EXPECT_EQ(child_names(*tree), top);
  }
  CommTableOptions none;
  none.filter = "nothing like this";
  EXPECT_FALSE(build_comm_tree(trace.tree, none));
}

TEST(CommTableModelTest, SortsSiblingsByColumn) {
  LoadedTrace trace = small_tree();
  CommTableOptions options;
  options.column = CommSortColumn::kForward;
  options.descending = true;
  EXPECT_EQ(child_names(*build_comm_tree(trace.tree, options)),
            (std::vector<std::string>{"B", "A"}));
  options.column = CommSortColumn::kName;
  EXPECT_EQ(child_names(*build_comm_tree(trace.tree, options)),
            (std::vector<std::string>{"B", "A"}));
  options.descending = false;
  EXPECT_EQ(child_names(*build_comm_tree(trace.tree, options)),
            (std::vector<std::string>{"A", "B"}));
  options.column = CommSortColumn::kBytes;  // A 64 (its child A.x's), B 128
  EXPECT_EQ(child_names(*build_comm_tree(trace.tree, options)),
            (std::vector<std::string>{"A", "B"}));
  options.column = CommSortColumn::kTree;
  options.descending = true;
  EXPECT_EQ(child_names(*build_comm_tree(trace.tree, options)),
            (std::vector<std::string>{"A", "B"}));
}

TEST(CommTableModelTest, PerModuleRankDifferencesFromEvents) {
  LoadedTrace loaded = small_trace();
  std::map<std::string, ModuleRankCounts> counts = module_rank_counts(loaded.trace, loaded.tree);
  EXPECT_TRUE(counts.at("A.x").differing_ranks.empty());
  EXPECT_TRUE(counts.at("A").differing_ranks.empty());
  EXPECT_EQ(counts.at("B").differing_ranks, std::vector<int64_t>{2});
  EXPECT_EQ(counts.at("B").by_rank.at(2).at("broadcast (backward)"), 1);
  // Global: every rank has 2 events, but rank 2's second one is a broadcast.
  EXPECT_EQ(counts.at("Global").differing_ranks, std::vector<int64_t>{2});
  EXPECT_EQ(counts.at("Global").by_rank.at(0).at("all_reduce (forward)"), 2);
  EXPECT_TRUE(counts.at("A.y").by_rank.at(1).empty());
}

TEST(CommTableModelTest, PerRankOutliersAndAbbreviations) {
  const trace::CommTrace trace = small_trace().trace;
  std::map<std::string, std::vector<int64_t>> outliers = per_rank_outliers(trace);
  EXPECT_EQ(outliers.at("broadcast"), std::vector<int64_t>{2});
  EXPECT_EQ(outliers.at("all_reduce"), std::vector<int64_t>{2});
  EXPECT_EQ(per_rank_kinds(trace), (std::vector<std::string>{"all_reduce", "broadcast"}));
  EXPECT_EQ(collective_abbreviation("all_gather_into_tensor"), "AG");
  EXPECT_EQ(collective_abbreviation("my_op"), "my_op");
  EXPECT_EQ(collective_abbreviation("c10d_functional.all_reduce"), "AR") << "PyTorch's name";
}

TEST(TimelineModelTest, OneLanePerRankSortedBySeq) {
  const trace::CommTrace trace = small_trace().trace;
  TimelineModel timeline = build_timeline(trace);
  ASSERT_EQ(timeline.lanes.size(), 3u);
  EXPECT_EQ(timeline.max_seq, 1);
  EXPECT_EQ(timeline.kinds, (std::vector<std::string>{"all_reduce", "broadcast"}));
  for (const TimelineLane& lane : timeline.lanes) {
    ASSERT_EQ(lane.events.size(), 2u);
    EXPECT_EQ(trace.collectives[lane.events[0]].seq, 0);
    EXPECT_EQ(trace.collectives[lane.events[1]].rank, lane.rank);
  }
  // seq 1: rank 2 broadcasts, rank 0 sends 8 bytes, rank 1 sends 4.
  EXPECT_EQ(timeline.mismatched_seqs, (std::set<int64_t>{1}));
}

TEST(TimelineModelTest, MissingCallIsAMismatchAndEmptyTraceHasNoLanes) {
  TraceLoadResult loaded = parse_trace_json(R"({"world_size": 3, "events": [
      {"rank": 0, "seq": 0, "kind": "all_reduce"}, {"rank": 1, "seq": 0, "kind": "all_reduce"},
      {"rank": 0, "seq": 1, "kind": "all_reduce"}]})",
                                            "x");
  ASSERT_TRUE(loaded.trace) << loaded.error;
  TimelineModel timeline = build_timeline(loaded.trace->trace);
  EXPECT_EQ(timeline.lanes.size(), 3u);
  EXPECT_TRUE(timeline.lanes[2].events.empty());
  EXPECT_EQ(timeline.mismatched_seqs, (std::set<int64_t>{1}));
  EXPECT_TRUE(build_timeline(trace::CommTrace{}).lanes.empty());
}

TEST(TimelineModelTest, BigWorldsShowOnlyRanksWithEvents) {
  TraceLoadResult loaded = parse_trace_json(R"({"world_size": 4096, "events": [
      {"rank": 7, "seq": 0, "kind": "all_reduce"}, {"rank": 4000, "seq": 0, "kind": "all_reduce"}]})",
                                            "solo");
  ASSERT_TRUE(loaded.trace) << loaded.error;
  TimelineModel timeline = build_timeline(loaded.trace->trace);
  ASSERT_EQ(timeline.lanes.size(), 2u);
  EXPECT_EQ(timeline.lanes[0].rank, 7);
  EXPECT_EQ(timeline.lanes[1].rank, 4000);
  EXPECT_EQ(timeline.lanes[1].events.size(), 1u);
}

TEST(TimelineModelTest, DivergentFixtureMismatchesFromTheExtraCallOn) {
  TraceLoadResult loaded = load_trace_file("tests/gui/testdata/transformer_divergent_trace.json");
  ASSERT_TRUE(loaded.trace) << loaded.error;
  TimelineModel timeline = build_timeline(loaded.trace->trace);
  ASSERT_FALSE(timeline.mismatched_seqs.empty());
  EXPECT_EQ(*timeline.mismatched_seqs.begin(), 14);
  EXPECT_EQ(*timeline.mismatched_seqs.rbegin(), timeline.max_seq);
}

}  // namespace
}  // namespace dtensor::gui
