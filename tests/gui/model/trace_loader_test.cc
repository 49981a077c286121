// Tests of comm trace loading: the fixtures in tests/gui/testdata (valid,
// PyTorch-style, malformed), clear error strings, and a mutation loop that
// checks no malformed input crashes or throws.
#include "gui/model/trace_loader.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>

#include "trace/collective_name.h"
#include "tests/gui/model/testdata_files.h"

namespace dtensor::gui {
namespace {

const trace::ModuleNode* find(const trace::ModuleNode& node, const std::string& fqn) {
  if (node.fqn == fqn) return &node;
  for (const trace::ModuleNode& child : node.children) {
    if (const trace::ModuleNode* hit = find(child, fqn)) return hit;
  }
  return nullptr;
}

TEST(TraceLoaderTest, LoadsTheTpMlpFixture) {
  TraceLoadResult loaded = load_trace_file(testdata("tp_mlp_trace.json"));
  ASSERT_TRUE(loaded.trace) << loaded.error;
  const trace::CommTrace& t = loaded.trace->trace;
  const trace::ModuleNode& root = loaded.trace->tree;
  EXPECT_EQ(loaded.trace->schema_version, 1);
  EXPECT_EQ(t.world_size, 4);
  EXPECT_EQ(t.rank, -1);
  ASSERT_TRUE(t.mesh);
  EXPECT_EQ(t.mesh->shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(t.mesh->dim_names, (std::vector<std::string>{"dp", "tp"}));
  EXPECT_EQ(root.fqn, "Global");
  EXPECT_EQ(trace::module_count(root), 5);
  EXPECT_EQ(root.forward_counts.at("all_reduce"), 1);
  EXPECT_EQ(root.backward_counts.at("all_reduce"), 3);
  const trace::ModuleNode* net1 = find(root, "MLP.net1");
  ASSERT_NE(net1, nullptr);
  EXPECT_EQ(net1->module_type, "torch::nn::Linear");
  EXPECT_EQ(net1->short_name(), "net1");
  ASSERT_EQ(net1->parameters.size(), 2u);
  EXPECT_EQ(net1->parameters[0], (std::pair<std::string, std::string>{"weight", "[R, S(0)]"}));
  EXPECT_EQ(net1->backward_bytes.at("all_reduce"), 512);
  ASSERT_EQ(net1->forward_operations.size(), 1u);
  EXPECT_EQ(net1->forward_operations[0].name, "aten::addmm");
  ASSERT_EQ(t.collectives.size(), 16u);
  EXPECT_TRUE(loaded.trace->calls_recorded);
  EXPECT_EQ(t.collectives[0].rank, 0);
  EXPECT_EQ(t.collectives[0].seq, 0);
  EXPECT_EQ(t.collectives[0].module, "MLP.net2");
  EXPECT_EQ(t.collectives[5].group, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(t.per_rank_counts.size(), 4u);
  EXPECT_TRUE(t.differing_ranks.empty());
  EXPECT_TRUE(loaded.trace->warnings.empty());
}

TEST(TraceLoaderTest, LoadsPyTorchStyleWithoutVersionOrEvents) {
  TraceLoadResult loaded = load_trace_file(testdata("pytorch_comm_mode_log.json"));
  ASSERT_TRUE(loaded.trace) << loaded.error;
  EXPECT_EQ(loaded.trace->schema_version, 0);
  EXPECT_FALSE(loaded.trace->calls_recorded) << "no events: collectives rebuilt from the counts";
  EXPECT_TRUE(loaded.trace->trace.per_rank_counts.empty());
  EXPECT_EQ(loaded.trace->trace.world_size, 1);
  EXPECT_EQ(loaded.trace->tree.children[0].children[0].parameters[0].second, "(Shard(dim=0),)");
}

// A dump PyTorch 2.11 wrote (testdata/make_pytorch_dump.py: a TP MLP with a
// row-wise sharded embedding, CommDebugMode.generate_json_dump): it passes the
// strict schema, loads with PyTorch's own collective names kept as written,
// and those names still read as the kinds they stand for.
TEST(TraceLoaderTest, LoadsARealPyTorchDump) {
  const std::string text = read_all(testdata("pytorch_tp_embedding_dump.json"));
  EXPECT_EQ(trace::validate_comm_trace_json(text), std::vector<std::string>{});
  TraceLoadResult loaded = parse_trace_json(text, "pytorch");
  ASSERT_TRUE(loaded.trace) << loaded.error;
  EXPECT_EQ(loaded.trace->schema_version, 0);
  EXPECT_FALSE(loaded.trace->calls_recorded);
  const trace::ModuleNode& root = loaded.trace->tree;
  EXPECT_EQ(trace::module_count(root), 5);
  EXPECT_EQ(root.forward_counts, (trace::KindCounts{{"c10d_functional.all_gather_into_tensor", 1},
                                                    {"c10d_functional.all_reduce", 2}}));
  EXPECT_EQ(root.backward_counts, (trace::KindCounts{{"c10d_functional.all_reduce", 1}}));
  const trace::ModuleNode* tok = find(root, "Model.tok");
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->module_type, "class 'torch.nn.modules.sparse.Embedding'");
  EXPECT_EQ(tok->parameters.at(0), (std::pair<std::string, std::string>{"weight", "(Shard(dim=0),)"}));
  EXPECT_FALSE(tok->forward_operations.empty());
  EXPECT_EQ(tok->forward_operations[0].input_sharding.at(0), "(Shard(dim=0),)");
  for (const trace::CollectiveRecord& r : loaded.trace->trace.collectives) {
    EXPECT_TRUE(trace::kind_of_collective(r.kind).has_value()) << r.kind;
  }
}

TEST(TraceLoaderTest, DivergentFixtureNamesTheOddRank) {
  TraceLoadResult loaded = load_trace_file(testdata("transformer_divergent_trace.json"));
  ASSERT_TRUE(loaded.trace) << loaded.error;
  const trace::CommTrace& t = loaded.trace->trace;
  EXPECT_EQ(t.differing_ranks, std::vector<int64_t>{3});
  EXPECT_EQ(t.per_rank_counts.at(3).at("all_reduce"), t.per_rank_counts.at(0).at("all_reduce") + 1);
}

TEST(TraceLoaderTest, MalformedFilesGiveClearErrors) {
  const std::pair<const char*, const char*> table[] = {
      {"malformed_truncated.json", "is not valid JSON: parse error at line"},
      {"malformed_empty.json", "is empty"},
      {"malformed_not_object.json", "$: expected a JSON object (a comm trace), got array"},
      {"malformed_bad_counts.json",
       "$.children[0].collectives_forward: expected [[name, count], ...], got string"},
      {"malformed_bad_event.json", "$.events[1].rank: expected an integer, got string"},
      {"malformed_future_version.json",
       "dtensor_schema_version is 7 but this viewer reads version 2"},
      {"malformed_rank_outside_world.json", "rank 5 appears but world_size is 2"},
  };
  for (auto [file, want] : table) {
    SCOPED_TRACE(file);
    TraceLoadResult loaded = load_trace_file(testdata(file));
    EXPECT_FALSE(loaded.trace);
    EXPECT_NE(loaded.error.find(want), std::string::npos) << loaded.error;
    EXPECT_NE(loaded.error.find(file), std::string::npos) << "names the file: " << loaded.error;
  }
}

TEST(TraceLoaderTest, MissingFileAndDirectory) {
  TraceLoadResult missing = load_trace_file("/no/such/trace.json");
  EXPECT_EQ(missing.error, "cannot open '/no/such/trace.json': No such file or directory");
  TraceLoadResult directory = load_trace_file("/");
  EXPECT_FALSE(directory.trace);
  EXPECT_FALSE(directory.error.empty());
}

TEST(TraceLoaderTest, InlineEdgeCases) {
  const std::pair<const char*, const char*> table[] = {
      {R"({"fqn": 3})", "$.fqn: expected a string, got number"},
      {R"({"children": [{"fqn": ""}]})", "a module needs a non-empty fqn"},
      {R"({"collectives_forward": [["all_reduce", -1]]})", "expected >= 0, got -1"},
      {R"({"collectives_forward": [["all_reduce"]]})", "expected a [name, count] pair"},
      {R"({"events": [{"rank": 0, "seq": 0}]})", "an event needs \"rank\", \"seq\" and \"kind\""},
      {R"({"per_rank_counts": {"x": {}}})", "the key must be a rank number"},
      {R"({"world_size": 18446744073709551615})", "integer too large"},
      {R"({"mesh": [2, 2]})", "$.mesh: expected"},
  };
  for (auto [text, want] : table) {
    SCOPED_TRACE(text);
    TraceLoadResult loaded = parse_trace_json(text, "inline");
    EXPECT_FALSE(loaded.trace);
    EXPECT_NE(loaded.error.find(want), std::string::npos) << loaded.error;
  }
}

TEST(TraceLoaderTest, ObjectFormsAndDerivedTotals) {
  TraceLoadResult loaded = parse_trace_json(
      R"({"collectives_forward": {"all_reduce": 2}, "parameters": {"w": "[R]"},
          "events": [{"rank": 1, "seq": 0, "kind": "all_reduce", "phase": "fwd"},
                     {"rank": 0, "seq": 0, "kind": "all_reduce", "phase": "forward"},
                     {"rank": 1, "seq": 1, "kind": "broadcast", "phase": "forward"}]})",
      "inline");
  ASSERT_TRUE(loaded.trace) << loaded.error;
  const trace::CommTrace& t = loaded.trace->trace;
  EXPECT_EQ(loaded.trace->tree.forward_counts.at("all_reduce"), 1) << "rank 0's events";
  EXPECT_EQ(t.world_size, 2);
  EXPECT_EQ(t.collectives[0].rank, 0) << "sorted by (rank, seq)";
  EXPECT_EQ(t.per_rank_counts.at(1).at("broadcast"), 1);
  EXPECT_EQ(t.differing_ranks, std::vector<int64_t>{1});
  ASSERT_EQ(loaded.trace->warnings.size(), 1u);
  EXPECT_NE(loaded.trace->warnings[0].find("\"fwd\""), std::string::npos);
  // Without events the tree's counts are the file's, in either form.
  TraceLoadResult counts_only = parse_trace_json(
      R"({"collectives_forward": {"all_reduce": 2}, "children": [{"fqn": "m", "parameters": {"w": "[R]"}}]})",
      "inline");
  ASSERT_TRUE(counts_only.trace) << counts_only.error;
  EXPECT_EQ(counts_only.trace->tree.forward_counts.at("all_reduce"), 2);
  EXPECT_EQ(counts_only.trace->tree.children.at(0).parameters[0].second, "[R]");
}

TEST(TraceLoaderTest, PerRankMemoryIsLoadedWhenTheFileHasIt) {
  TraceLoadResult loaded = parse_trace_json(
      R"({"dtensor_schema_version": 2, "world_size": 2,
          "memory": {"0": {"peak_bytes": 4096, "current_bytes": 128, "cap_bytes": 0,
                           "peak_location": "Transformer.layers.0 backward"},
                     "1": {"peak_bytes": 2048, "current_bytes": 0, "cap_bytes": 8192,
                           "peak_location": "Transformer forward"}}})",
      "inline");
  ASSERT_TRUE(loaded.trace) << loaded.error;
  const trace::CommTrace& t = loaded.trace->trace;
  ASSERT_EQ(t.memory.size(), 2u);
  EXPECT_EQ(t.memory.at(0).peak_bytes, 4096);
  EXPECT_EQ(t.memory.at(0).current_bytes, 128);
  EXPECT_EQ(t.memory.at(0).peak_location, "Transformer.layers.0 backward");
  EXPECT_EQ(t.memory.at(1).cap_bytes, 8192);
  EXPECT_TRUE(parse_trace_json(R"({"dtensor_schema_version": 2})", "none").trace->trace.memory.empty());
}

TEST(TraceLoaderTest, DeepNestingIsRefused) {
  std::string text;
  for (int i = 0; i < 200; ++i) text += R"({"fqn": "m", "children": [)";
  text += "{}";
  for (int i = 0; i < 200; ++i) text += "]}";
  TraceLoadResult loaded = parse_trace_json(text, "deep");
  EXPECT_FALSE(loaded.trace);
  EXPECT_NE(loaded.error.find("deeper than"), std::string::npos) << loaded.error;
}

// Truncations and random byte edits of a valid file: every result is either
// a trace or an error string; nothing throws or crashes.
TEST(TraceLoaderTest, MutatedInputNeverThrows) {
  std::string valid = read_all(testdata("tp_mlp_trace.json"));
  ASSERT_FALSE(valid.empty());
  unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  for (size_t cut = 0; cut < valid.size(); cut += 7) {
    TraceLoadResult loaded;
    ASSERT_NO_THROW(loaded = parse_trace_json(valid.substr(0, cut), "cut"));
    EXPECT_NE(loaded.trace.has_value(), !loaded.error.empty());
  }
  const char noise[] = "{}[],:\"0-9eatrufnl \\x";
  for (int round = 0; round < 500; ++round) {
    std::string text = valid;
    for (int edits = 0; edits < 3; ++edits) {
      text[rng() % text.size()] = noise[rng() % (sizeof(noise) - 1)];
    }
    TraceLoadResult loaded;
    ASSERT_NO_THROW(loaded = parse_trace_json(text, "mutated"));
    EXPECT_NE(loaded.trace.has_value(), !loaded.error.empty());
  }
}

}  // namespace
}  // namespace dtensor::gui
