// Call exchange and call preset models: bytes between ranks of one traced
// call, and the playground inputs replaying its transition (no window).
#include "gui/model/call_exchange.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "layout/collective_kind.h"
#include "layout/comm_cost.h"
#include "trace/trace_json.h"
#include "gui/model/call_preset.h"
#include "gui/model/trace_loader.h"
#include "gui/model/viewer_state.h"
#include "tests/gui/model/testdata_files.h"

namespace dtensor::gui {
namespace {

trace::CollectiveRecord event(int64_t rank, int64_t seq, const std::string& kind, int64_t bytes,
                              std::vector<int64_t> group, int mesh_dim) {
  trace::CollectiveRecord e;
  e.rank = rank, e.seq = seq, e.kind = kind, e.bytes = bytes, e.group = std::move(group);
  e.mesh_dim = mesh_dim;
  return e;
}

// Every rank's total equals comm_cost's ring bytes per rank.
TEST(CallExchangeTest, PerRankTotalsMatchTheRingFormulas) {
  const std::vector<int64_t> group = {0, 1, 2, 3};
  struct Case {
    const char* kind;
    CollectiveKind enum_kind;
    int64_t input, output;
  };
  for (Case c : {Case{"all_gather_into_tensor", CollectiveKind::kAllGatherIntoTensor, 64, 256},
                 Case{"reduce_scatter_tensor", CollectiveKind::kReduceScatterTensor, 256, 64},
                 Case{"all_reduce", CollectiveKind::kAllReduce, 256, 256},
                 Case{"all_to_all_single", CollectiveKind::kAllToAllSingle, 256, 256}}) {
    SCOPED_TRACE(c.kind);
    std::vector<RankExchange> edges = pairwise_bytes(c.kind, 2, c.input, group);
    ASSERT_EQ(edges.size(), 3u);
    int64_t total = 0;
    for (const RankExchange& e : edges) {
      EXPECT_EQ(e.from, 2);
      EXPECT_NE(e.to, 2);
      total += e.bytes;
    }
    EXPECT_EQ(total, ring_bytes_per_rank(c.enum_kind, c.input, c.output, 4));
  }
  EXPECT_TRUE(pairwise_bytes("broadcast", 1, 64, group).empty()) << "only the root sends";
  EXPECT_EQ(pairwise_bytes("broadcast", 0, 64, group).size(), 3u);
  EXPECT_TRUE(pairwise_bytes("barrier", 0, 0, group).empty());
  EXPECT_TRUE(pairwise_bytes("all_reduce", 0, 64, {0}).empty()) << "a group of one sends nothing";
}

// A 2x2x2 mesh, all_gather over mesh dim 1 on every rank: four groups of two.
TEST(CallExchangeTest, MergedTraceUsesEveryRanksGroup) {
  trace::CommTrace trace;
  trace.world_size = 8;
  MeshShape mesh = MeshShape::create({2, 2, 2});
  for (int64_t rank = 0; rank < 8; ++rank) {
    trace.collectives.push_back(event(rank, 0, "all_reduce", 32, mesh.group_ranks(rank, 0), 0));
    trace.collectives.push_back(
        event(rank, 1, "all_gather_into_tensor", 100 + rank, mesh.group_ranks(rank, 1), 1));
  }
  CallExchange x = call_exchange(trace, 3);  // rank 1, seq 1
  EXPECT_EQ(x.seq, 1);
  EXPECT_EQ(x.kind, "all_gather_into_tensor");
  EXPECT_EQ(x.mesh_dim, 1);
  EXPECT_EQ(x.groups, (std::vector<std::vector<int64_t>>{{0, 2}, {1, 3}, {4, 6}, {5, 7}}));
  ASSERT_EQ(x.edges.size(), 8u);
  EXPECT_EQ(x.edges[0].from, 0);
  EXPECT_EQ(x.edges[0].to, 2);
  EXPECT_EQ(x.edges[0].bytes, 100);
  EXPECT_EQ(x.sent_by_rank.at(7), 107) << "each rank's own bytes";
  EXPECT_EQ(x.max_edge_bytes, 107);
}

// A one-rank trace: the group's other members are assumed to do the same.
TEST(CallExchangeTest, OneRankTraceStandsInForItsPeers) {
  trace::CommTrace trace;
  trace.world_size = 4;
  trace.collectives.push_back(event(0, 0, "reduce_scatter_tensor", 400, {0, 1, 2, 3}, 0));
  CallExchange x = call_exchange(trace, 0);
  EXPECT_EQ(x.edges.size(), 12u);
  for (const auto& [rank, sent] : x.sent_by_rank) EXPECT_EQ(sent, 300) << rank;
}

// A solo-mode trace: one rank's all_gather over 4096 ranks would stand in
// for 4096 * 4095 pairs; the model stops at kMaxExchangeEdges.
TEST(CallExchangeTest, HugeGroupsAreCapped) {
  trace::CommTrace trace;
  trace.world_size = 4096;
  std::vector<int64_t> group(4096);
  for (int64_t r = 0; r < 4096; ++r) group[static_cast<size_t>(r)] = r;
  trace.collectives.push_back(event(0, 0, "all_gather_into_tensor", 8, group, 0));
  CallExchange x = call_exchange(trace, 0);
  EXPECT_TRUE(x.truncated);
  EXPECT_LE(x.edges.size(), kMaxExchangeEdges);
  EXPECT_EQ(x.sent_by_rank.at(0), 8 * 4095) << "the recorded rank is always complete";
}

trace::CommTrace origin_trace() {
  trace::CommTrace trace;
  trace.world_size = 4;
  trace.mesh = trace::MeshRecord{{2, 2}, {"dp", "tp"}, "cpu"};
  trace::CollectiveRecord e = event(0, 0, "all_gather_into_tensor", 96, {0, 1}, 1);
  e.input_shapes = {{4, 6}};
  CollectiveOrigin origin;
  origin.is_explicit = false;
  origin.cause = "implicit";
  origin.op = "aten::mm";
  origin.step = OriginStep{Shard(0), Replicate()};
  origin.input_index = 1;
  origin.from_placements = {Shard(0), Shard(0)};
  origin.to_placements = {Shard(0), Replicate()};
  origin.mesh_dim = 1;
  e.origin = origin;
  trace.collectives.push_back(e);
  trace.collectives.push_back(event(0, 1, "all_reduce", 32, {0, 2}, 0));  // no origin
  return trace;
}

TEST(CallPresetTest, OriginGivesMeshPlacementsAndGlobalShape) {
  trace::CommTrace trace = origin_trace();
  Parsed<CallPreset> preset = call_preset(trace, trace.collectives[0]);
  ASSERT_TRUE(preset.ok()) << preset.error;
  EXPECT_EQ(preset.value->mesh, "dp=2, tp=2");
  EXPECT_EQ(preset.value->tensor, "16, 6") << "dim 0 sharded over both mesh dims";
  EXPECT_EQ(preset.value->placements, "[S(0), S(0)]");
  EXPECT_EQ(preset.value->target, "[S(0), R]");
  // A TP style's redistribution on the tp sub-mesh: one placement.
  trace::CollectiveRecord sub = trace.collectives[0];
  sub.origin->from_placements = {Shard(0)};
  sub.origin->to_placements = {Replicate()};
  Parsed<CallPreset> on_tp = call_preset(trace, sub);
  ASSERT_TRUE(on_tp.ok()) << on_tp.error;
  EXPECT_EQ(on_tp.value->mesh, "tp=2");
  EXPECT_EQ(on_tp.value->tensor, "8, 6");
  Parsed<CallPreset> none = call_preset(trace, trace.collectives[1]);
  EXPECT_FALSE(none.ok());
  EXPECT_NE(none.error.find("no origin"), std::string::npos) << none.error;
  trace.mesh.reset();
  EXPECT_NE(call_preset(trace, trace.collectives[0]).error.find("names no mesh"), std::string::npos);
}

TEST(CallPresetTest, SelectingACallPresetsThePlaygroundAndTheExchange) {
  ViewerState state;
  state.loaded = LoadedTrace{};
  state.loaded->trace = origin_trace();
  ASSERT_TRUE(state.select_call(0)) << state.call_message;
  const PlaygroundInputs& in = state.playground.inputs();
  EXPECT_EQ(in.mesh, "dp=2, tp=2");
  EXPECT_EQ(in.tensor, "16, 6");
  EXPECT_EQ(in.placements, "[S(0), S(0)]");
  EXPECT_EQ(in.target, "[S(0), R]");
  ASSERT_TRUE(state.playground.plan()) << state.playground.plan_error();
  ASSERT_FALSE(state.playground.plan()->steps.empty());
  EXPECT_EQ(state.playground.plan()->steps[0].mesh_dim, 1) << "the transition on tp";
  EXPECT_EQ(state.exchange.edges.size(), 2u);  // ranks 0 and 1 (stand-in)
  // A call without origin stays selected (bytes still draw) with a message.
  EXPECT_FALSE(state.select_call(1));
  EXPECT_EQ(state.selected_event, std::optional<size_t>(1));
  EXPECT_NE(state.call_message.find("no origin"), std::string::npos);
  EXPECT_FALSE(state.select_call_seq(9));
  EXPECT_FALSE(state.select_call(99));
}

TEST(CallPresetTest, ImplicitFilterKeepsOnlyImplicitOrigins) {
  ViewerState state;
  trace::CommTrace trace = origin_trace();
  EXPECT_TRUE(state.shows_event(trace.collectives[0]));
  EXPECT_TRUE(state.shows_event(trace.collectives[1]));
  state.implicit_only = true;
  EXPECT_TRUE(state.shows_event(trace.collectives[0]));
  EXPECT_FALSE(state.shows_event(trace.collectives[1])) << "no origin: not known to be implicit";
  trace.collectives[0].origin->is_explicit = true;
  EXPECT_FALSE(state.shows_event(trace.collectives[0]));
}

// The screenshot tests' schema-2 trace (origins on a 2x2x2 mesh) passes
// debug's validator and loads with its origins, filters and presets.
TEST(OriginsTraceTest, ThreeDimTraceLoadsWithOrigins) {
  std::ifstream in(testdata("origins_3d_trace.json"));
  std::stringstream text;
  text << in.rdbuf();
  std::vector<std::string> problems = trace::validate_comm_trace_json(text.str());
  EXPECT_TRUE(problems.empty()) << problems.front();
  ViewerState state;
  ASSERT_TRUE(state.load_trace(testdata("origins_3d_trace.json"))) << state.trace_error;
  const trace::CommTrace& trace = state.loaded->trace;
  EXPECT_EQ(state.loaded->schema_version, 2);
  EXPECT_EQ(trace.collectives.size(), 48u);
  OriginCounts counts = origin_counts(trace);
  EXPECT_EQ(counts.with_origin, 48);
  EXPECT_EQ(counts.implicit, 24);
  EXPECT_EQ(state.calls_rank, 0);
  std::vector<size_t> implicit = calls_of_rank(trace, 0, /*implicit_only=*/true);
  ASSERT_EQ(implicit.size(), 3u);
  EXPECT_EQ(trace.collectives[implicit[0]].origin->op, "aten::mm");
  EXPECT_EQ(trace.collectives[implicit[0]].origin->input_index, 1);
  EXPECT_EQ(calls_of_rank(trace, 0, false).size(), 6u);
  EXPECT_EQ(calls_of_rank(trace, 0, false, "MLP").size(), 3u) << "filter by module";
  EXPECT_EQ(calls_of_rank(trace, 0, false, "aten::MM").size(), 1u) << "filter by op";
  EXPECT_EQ(calls_of_rank(trace, 0, true, "full_tensor").size(), 0u) << "explicit cause";
  // Call 3: implicit all_reduce over dp on every rank: 4 groups of 2.
  ASSERT_TRUE(state.select_call_seq(3)) << state.call_message;
  EXPECT_EQ(state.exchange.groups.size(), 4u);
  EXPECT_EQ(state.exchange.edges.size(), 8u);
  EXPECT_EQ(state.exchange.sent_by_rank.at(5), 64) << "2 * 64 / 2 bytes to its one peer";
  EXPECT_EQ(state.playground.inputs().mesh, "pp=2, dp=2, tp=2");
  EXPECT_EQ(state.playground.inputs().placements, "[R, P(sum), R]");
  EXPECT_EQ(state.playground.inputs().target, "[R, R, R]");
  ASSERT_TRUE(state.playground.plan()) << state.playground.plan_error();
  EXPECT_EQ(state.playground.plan()->num_collectives(), 1);
}

// debug's writer -> the viewer's loader: every origin field survives.
TEST(OriginsTraceTest, OriginsFromTheRealWriterLoad) {
  trace::CommTrace written;
  written.rank = 0;
  written.world_size = 2;
  written.mesh = trace::MeshRecord{{2}, {"tp"}, "cpu"};
  trace::CollectiveRecord record;
  record.kind = "all_gather_into_tensor";
  record.bytes = 64;
  record.output_bytes = 128;
  record.group = {0, 1};
  record.mesh_dim = 0;
  record.mesh_dim_name = "tp";
  record.input_shapes = {{4, 4}};
  record.output_shapes = {{8, 4}};
  record.dtype = "Float";
  CollectiveOrigin origin;
  origin.is_explicit = false;
  origin.cause = "implicit";
  origin.op = "aten::addmm";
  origin.input_index = 1;
  origin.from_placements = {Shard(0)};
  origin.to_placements = {Replicate()};
  origin.mesh_dim = 0;
  origin.step = OriginStep{Shard(0), Replicate()};
  origin.strategy = "[R], [S(0)] -> [S(0)]";
  origin.strategy_cost = 250064;
  origin.rejected_strategy = "[S(0)], [R] -> [P(sum)]";
  origin.rejected_cost = 250128;
  record.origin = origin;
  written.collectives.push_back(record);
  TraceLoadResult loaded = parse_trace_json(trace::comm_trace_to_json(written), "written.json");
  ASSERT_TRUE(loaded.trace) << loaded.error;
  ASSERT_EQ(loaded.trace->trace.collectives.size(), 1u);
  const trace::CollectiveRecord& e = loaded.trace->trace.collectives[0];
  ASSERT_TRUE(e.origin);
  EXPECT_EQ(*e.origin, origin);
  EXPECT_EQ(e.output_bytes, 128);
  Parsed<CallPreset> preset = call_preset(loaded.trace->trace, e);
  ASSERT_TRUE(preset.ok()) << preset.error;
  EXPECT_EQ(preset.value->mesh, "tp=2");
  EXPECT_EQ(preset.value->tensor, "8, 4");
}

}  // namespace
}  // namespace dtensor::gui
