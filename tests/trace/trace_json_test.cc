// The comm trace JSON: key names, round trips, schema validation, and reading
// PyTorch's comm_mode_log.json.
#include "trace/trace_json.h"

#include <gtest/gtest.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "tests/trace/trace_fixture.h"

namespace dtensor::trace {
namespace {

using Json = nlohmann::json;
using testing::mlp_like_trace;

const Json& child(const Json& node, const std::string& fqn) {
  for (const Json& c : node["children"]) {
    if (c["fqn"] == fqn) return c;
  }
  ADD_FAILURE() << "no child " << fqn;
  static const Json kNone;
  return kNone;
}

TEST(TraceJsonTest, TreeHasPyTorchKeyNames) {
  Json root = Json::parse(comm_trace_to_json(mlp_like_trace(), /*noise_level=*/3));
  for (const char* key : {"fqn", "module_type", "parameters", "children", "collectives_forward",
                          "collectives_backward", "operations_forward", "operations_backward"}) {
    EXPECT_TRUE(root.contains(key)) << key;
  }
  EXPECT_EQ(root["fqn"], "Global");
  EXPECT_EQ(root["collectives_forward"], Json::parse(R"([["all_reduce", 1]])"));
  EXPECT_EQ(root["collectives_backward"], Json::parse(R"([["all_gather_into_tensor", 1]])"));
  const Json& mlp = child(root, "MLPModule");
  const Json& net1 = child(mlp, "MLPModule.net1");
  EXPECT_EQ(net1["module_type"], "torch::nn::Linear");
  EXPECT_EQ(net1["parameters"], Json::parse(R"([["weight", "[S(0)]"], ["bias", "[S(0)]"]])"));
  ASSERT_EQ(net1["operations_forward"].size(), 2u);  // aten::t shows at level 3
  const Json addmm = Json::parse(
      R"js({"name": "aten::addmm", "input_shape": [[8, 10], [16, 10]], "input_sharding": ["[R]", "[S(0)]"],
            "device_mesh": "DeviceMesh(cpu, (tp=4))"})js");
  EXPECT_EQ(net1["operations_forward"][1], addmm);
  EXPECT_EQ(net1["operations_backward"].size(), 1u);
  const Json& net2 = child(mlp, "MLPModule.net2");
  EXPECT_EQ(net2["collectives_forward"], Json::parse(R"([["all_reduce", 1]])"));
  EXPECT_EQ(net2["bytes_forward"], Json::parse(R"([["all_reduce", 320]])"));
  EXPECT_EQ(root["dtensor_schema_version"], kCommTraceSchemaVersion);
  EXPECT_EQ(root["mesh"]["dim_names"], Json::parse(R"(["tp"])"));
  ASSERT_EQ(root["events"].size(), 2u);
  EXPECT_EQ(root["events"][0]["module"], "MLPModule.net2");
  EXPECT_EQ(root["events"][0]["mesh_dim"], 0);
  EXPECT_EQ(root["events"][0]["shape"], Json::parse("[8, 10]"));
}

TEST(TraceJsonTest, NoiseLevelZeroHasCountsOnly) {
  Json root = Json::parse(comm_trace_to_json(mlp_like_trace(), /*noise_level=*/0));
  const Json& net1 = child(child(root, "MLPModule"), "MLPModule.net1");
  EXPECT_EQ(net1["module_type"], "");
  EXPECT_TRUE(net1["parameters"].empty());
  EXPECT_TRUE(net1["operations_forward"].empty());
  EXPECT_EQ(root["events"].size(), 2u) << "events are written at every level";
}

TEST(TraceJsonTest, LevelTwoAddsLocalOpsLevelThreeTrivialOps) {
  auto ops = [](int level, const char* fqn) {
    Json root = Json::parse(comm_trace_to_json(mlp_like_trace(), level));
    return child(child(root, "MLPModule"), fqn)["operations_forward"].size();
  };
  EXPECT_EQ(ops(1, "MLPModule.net2"), 0u);
  EXPECT_EQ(ops(2, "MLPModule.net2"), 1u);
  EXPECT_EQ(ops(2, "MLPModule.net1"), 1u);
  EXPECT_EQ(ops(3, "MLPModule.net1"), 2u);
}

TEST(TraceJsonTest, RoundTripIsStable) {
  for (int level : {0, 1, 2, 3}) {
    SCOPED_TRACE("noise level " + std::to_string(level));
    const std::string text = comm_trace_to_json(mlp_like_trace(/*rank=*/2), level);
    EXPECT_TRUE(validate_comm_trace_json(text).empty());
    CommTrace back = comm_trace_from_json(text);
    EXPECT_EQ(back.rank, 2);
    EXPECT_EQ(back.collectives.size(), 2u);
    EXPECT_EQ(comm_module_counts(back), comm_module_counts(mlp_like_trace(2)));
    EXPECT_EQ(comm_trace_to_json(back, level), text);
  }
}

TEST(TraceJsonTest, RoundTripKeepsEventFields) {
  CommTrace back = comm_trace_from_json(comm_trace_to_json(mlp_like_trace()));
  const CollectiveRecord& ag = back.collectives[1];
  EXPECT_EQ(ag.kind, "all_gather_into_tensor");
  EXPECT_EQ(ag.phase, Phase::kBackward);
  EXPECT_EQ(ag.bytes, 64);
  EXPECT_EQ(ag.output_bytes, 256);
  EXPECT_EQ(ag.group, (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(ag.mesh_dim_name, "tp");
  EXPECT_EQ(ag.output_shapes, (std::vector<std::vector<int64_t>>{{8, 8}}));
  EXPECT_DOUBLE_EQ(ag.ts_us, 30.0);
  EXPECT_EQ(back.collectives[0].reduce_op, "sum");
  ASSERT_TRUE(back.mesh.has_value());
  EXPECT_EQ(back.mesh->shape, (std::vector<int64_t>{4}));
}

TEST(TraceJsonTest, RoundTripKeepsOrigins) {
  const CommTrace trace = mlp_like_trace();
  const std::string text = comm_trace_to_json(trace);
  Json root = Json::parse(text);
  EXPECT_EQ(root["events"][0]["origin"]["explicit"], true);
  EXPECT_EQ(root["events"][0]["origin"]["cause"], "parallel_style");
  EXPECT_EQ(root["events"][1]["origin"]["op"], "aten::mm");
  EXPECT_EQ(root["events"][1]["origin"]["input_index"], 1);
  EXPECT_EQ(root["events"][1]["origin"]["from"], "[S(0)]");
  EXPECT_EQ(root["events"][1]["origin"]["rejected_cost"], 250320.0);
  CommTrace back = comm_trace_from_json(text);
  ASSERT_TRUE(back.collectives[0].origin && back.collectives[1].origin);
  EXPECT_EQ(*back.collectives[0].origin, *trace.collectives[0].origin);
  EXPECT_EQ(*back.collectives[1].origin, *trace.collectives[1].origin);
  EXPECT_EQ(origin_summary(*back.collectives[1].origin), "implicit aten::mm input 1, S(0) -> R");
  EXPECT_EQ(origin_summary(*back.collectives[0].origin),
            "explicit parallel_style (RowwiseParallel output), P(sum) -> R");
  // A lenient read (the viewer's) sees the same origin.
  TraceRead lenient = read_comm_trace_json(text);
  ASSERT_TRUE(lenient.trace.collectives.size() > 1 && lenient.trace.collectives[1].origin);
  EXPECT_EQ(lenient.trace.collectives[1].origin->strategy, "S(0), R -> S(0)");
}

TEST(TraceJsonTest, BadOriginIsNamed) {
  Json root = Json::parse(comm_trace_to_json(mlp_like_trace()));
  root["events"][1]["origin"]["explicit"] = "no";
  root["events"][1]["origin"]["input_index"] = -5;
  std::vector<std::string> errors = validate_comm_trace_json(root.dump());
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_EQ(errors[0], "$.events[1].origin.explicit: expected a boolean, got string");
  EXPECT_EQ(errors[1], "$.events[1].origin.input_index: expected >= -1, got -5");
  root["events"][1]["origin"] = Json::parse(R"({"explicit": true, "cause": ""})");
  try {
    read_comm_trace_json(root.dump());
    FAIL() << "expected an error";
  } catch (const TraceJsonError& e) {
    EXPECT_EQ(e.kind(), TraceJsonError::Kind::kSchema);
    EXPECT_NE(std::string(e.what()).find("$.events[1].origin.cause"), std::string::npos) << e.what();
  }
}

// Origins are typed (Placements, OriginStep); a placement text this reader
// cannot parse (a newer kind) is named by validation and left unknown, with a
// warning, by a lenient read that keeps the rest of the origin.
TEST(TraceJsonTest, OriginPlacementsAreTypedAndUnknownKindsDoNotFailALenientRead) {
  const CommTrace trace = mlp_like_trace();
  CommTrace back = comm_trace_from_json(comm_trace_to_json(trace));
  ASSERT_TRUE(back.collectives[1].origin && back.collectives[1].origin->step);
  EXPECT_EQ(back.collectives[1].origin->from_placements, (Placements{Shard(0)}));
  EXPECT_EQ(*back.collectives[1].origin->step, (OriginStep{Shard(0), Replicate()}));

  Json root = Json::parse(comm_trace_to_json(trace));
  root["events"][1]["origin"]["from"] = "[_NormPartial(norm_type=2)]";  // a PyTorch kind we lack
  root["events"][1]["origin"]["step"] = "S(0) => R";
  const std::vector<std::string> errors = validate_comm_trace_json(root.dump());
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_EQ(errors[0].rfind("$.events[1].origin.from: ", 0), 0u) << errors[0];
  EXPECT_EQ(errors[1].rfind("$.events[1].origin.step: ", 0), 0u) << errors[1];
  TraceRead lenient = read_comm_trace_json(root.dump());
  ASSERT_TRUE(lenient.trace.collectives.size() > 1 && lenient.trace.collectives[1].origin);
  const CollectiveOrigin& o = *lenient.trace.collectives[1].origin;
  EXPECT_TRUE(o.from_placements.empty());
  EXPECT_FALSE(o.step.has_value());
  EXPECT_EQ(o.to_placements, (Placements{Replicate()}));
  EXPECT_EQ(o.op, "aten::mm");
  EXPECT_EQ(lenient.warnings.size(), 2u);
}

// A version-1 trace (written before origins existed, testdata/trace_v1.json)
// still loads: its events have no origin.
TEST(TraceJsonTest, SchemaVersionOneStillLoads) {
  const std::string text = read_text_file("tests/trace/testdata/trace_v1.json");
  ASSERT_EQ(Json::parse(text)["dtensor_schema_version"], 1);
  EXPECT_TRUE(validate_comm_trace_json(text).empty());
  CommTrace back = comm_trace_from_json(text);
  ASSERT_EQ(back.collectives.size(), 2u);
  EXPECT_EQ(back.collectives[0].kind, "all_reduce");
  EXPECT_EQ(back.collectives[0].module, "MLPModule.net2");
  EXPECT_FALSE(back.collectives[0].origin.has_value());
  EXPECT_FALSE(back.collectives[1].origin.has_value());
  EXPECT_EQ(read_comm_trace_json(text).schema_version, 1);
  EXPECT_EQ(read_comm_trace_json(text, SchemaCheck::kStrict).schema_version, 1);
}

TEST(TraceJsonTest, MergedTraceCarriesPerRankData) {
  CommTrace merged = mlp_like_trace(0);
  merged.rank = -1;
  CommTrace r1 = mlp_like_trace(1);
  merged.collectives.insert(merged.collectives.end(), r1.collectives.begin(), r1.collectives.end());
  merged.per_rank_counts = {{0, comm_counts(mlp_like_trace(0))}, {1, comm_counts(r1)}};
  merged.differing_ranks = {};
  const std::string text = comm_trace_to_json(merged);
  EXPECT_TRUE(validate_comm_trace_json(text).empty());
  Json root = Json::parse(text);
  EXPECT_EQ(root["rank"], -1);
  EXPECT_EQ(root["reference_rank"], 0);
  EXPECT_EQ(root["events"].size(), 4u);
  EXPECT_EQ(root["collectives_forward"], Json::parse(R"([["all_reduce", 1]])"))
      << "the tree is one rank's view";
  EXPECT_EQ(root["per_rank_counts"]["1"]["all_reduce"], 1);
  CommTrace back = comm_trace_from_json(text);
  EXPECT_EQ(back.per_rank_counts.size(), 2u);
  EXPECT_EQ(comm_trace_to_json(back), text);
}

TEST(TraceJsonTest, ValidationNamesThePath) {
  Json root = Json::parse(comm_trace_to_json(mlp_like_trace()));
  root["children"][0]["collectives_forward"] = Json::parse(R"([["all_reduce", "one"]])");
  root["events"][1]["phase"] = "sideways";
  root.erase("operations_forward");
  std::vector<std::string> errors = validate_comm_trace_json(root.dump());
  ASSERT_EQ(errors.size(), 3u);
  EXPECT_EQ(errors[0], "$.operations_forward: missing");
  EXPECT_EQ(errors[1], "$.children[0].collectives_forward[0][1]: expected an integer, got string");
  EXPECT_EQ(errors[2], "$.events[1].phase: expected \"forward\" or \"backward\"");
  EXPECT_EQ(validate_comm_trace_json("{not json"), (std::vector<std::string>{"$: not valid JSON"}));
  try {
    comm_trace_from_json(root.dump());
    FAIL() << "expected an error";
  } catch (const TraceJsonError& e) {
    EXPECT_NE(std::string(e.what()).find("$.operations_forward: missing (and 2 more)"), std::string::npos)
        << e.what();
  }
}

// One walk reads and validates: what a lenient read takes on trust (object
// forms, missing keys, an unknown phase), a strict read and the validator
// refuse, naming every problem.
TEST(TraceJsonTest, LenientReadAcceptsWhatValidationNames) {
  const std::string text = R"({"collectives_forward": {"all_reduce": 2},
      "events": [{"rank": 0, "seq": 0, "kind": "all_reduce", "phase": "fwd"}]})";
  TraceRead lenient = read_comm_trace_json(text);
  ASSERT_EQ(lenient.trace.collectives.size(), 1u);
  EXPECT_EQ(lenient.trace.collectives[0].phase, Phase::kForward);
  ASSERT_EQ(lenient.warnings.size(), 1u);
  EXPECT_NE(lenient.warnings[0].find("\"fwd\""), std::string::npos);
  const std::vector<std::string> errors = validate_comm_trace_json(text);
  EXPECT_EQ(errors.front(), "$.fqn: missing");
  const auto has = [&](const std::string& e) { return std::find(errors.begin(), errors.end(), e) != errors.end(); };
  EXPECT_TRUE(has("$.collectives_forward: expected [[name, count], ...], got object"));
  EXPECT_TRUE(has("$.events[0].group: missing"));
  EXPECT_TRUE(has("$.events[0].phase: expected \"forward\" or \"backward\""));
  EXPECT_THROW(read_comm_trace_json(text, SchemaCheck::kStrict), TraceJsonError);
}

TEST(TraceJsonTest, NewerSchemaVersionIsRejected) {
  Json root = Json::parse(comm_trace_to_json(mlp_like_trace()));
  root["dtensor_schema_version"] = kCommTraceSchemaVersion + 1;
  std::vector<std::string> errors = validate_comm_trace_json(root.dump());
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].find("newer dtensor"), std::string::npos);
}

// A dump as PyTorch writes it: string shapes, placements as Python tuples,
// no events; collectives are rebuilt from each node's own counts.
TEST(TraceJsonTest, ReadsPyTorchCommModeLog) {
  const std::string pytorch = R"js({
    "fqn": "Global", "module_type": "", "parameters": [], "children": [
      {"fqn": "MLPModule", "module_type": "class 'MLPModule'", "parameters": [],
       "children": [
         {"fqn": "MLPModule.net2", "module_type": "class 'torch.nn.modules.linear.Linear'",
          "parameters": [["weight", "(Shard(dim=1),)"]], "children": [],
          "collectives_forward": [["c10d_functional.all_reduce", 1]], "collectives_backward": [],
          "operations_forward": [{"name": "aten.addmm.default", "input_shape": ["torch.Size([10])"],
                                  "input_sharding": ["(Replicate(),)"], "device_mesh": "DeviceMesh([0, 1])"}],
          "operations_backward": [], "operations_checkpointing": []}],
       "collectives_forward": [["c10d_functional.all_reduce", 1]], "collectives_backward": [],
       "operations_forward": [], "operations_backward": [], "operations_checkpointing": []}],
    "collectives_forward": [["c10d_functional.all_reduce", 2]], "collectives_backward": [],
    "operations_forward": [], "operations_backward": [], "operations_checkpointing": []})js";
  EXPECT_TRUE(validate_comm_trace_json(pytorch).empty());
  CommTrace t = comm_trace_from_json(pytorch);
  ASSERT_EQ(t.modules.size(), 2u);
  EXPECT_EQ(t.modules[1].parent, "MLPModule");
  ModuleCounts counts = comm_module_counts(t);
  EXPECT_EQ(counts["Global"]["forward"]["c10d_functional.all_reduce"], 2);
  EXPECT_EQ(counts["MLPModule.net2"]["forward"]["c10d_functional.all_reduce"], 1);
  ASSERT_EQ(t.collectives.size(), 2u);
  EXPECT_EQ(t.collectives[0].module, "Global") << "one all_reduce outside MLPModule";
  ASSERT_EQ(t.operations.size(), 1u);
  EXPECT_TRUE(t.operations[0].input_shapes.empty()) << "string shapes are not ours to parse";
}

TEST(TraceJsonTest, FilesRoundTrip) {
  const std::string path = ::testing::TempDir() + "/trace_json_test.json";
  write_text_file(path, "{\"a\": 1}\n");
  EXPECT_EQ(read_text_file(path), "{\"a\": 1}\n");
  EXPECT_THROW(read_text_file(path + ".missing"), TraceJsonError);
}

}  // namespace
}  // namespace dtensor::trace
