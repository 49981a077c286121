// FakeWorldTrace: every rank's CommDebugMode publishes; merged queries, rank
// differences, merged JSON and Chrome trace.
#include "debug/fake_world_trace.h"

#include <gtest/gtest.h>
#include <torch/utils.h>

#include <nlohmann/json.hpp>

#include "backends/fake/fake_world.h"
#include "core/dtensor.h"
#include "debug/comm_debug_mode.h"
#include "testing/dtensor_test.h"
#include "trace/trace_json.h"
#include "tests/debug/mlp_test_util.h"

namespace dtensor::debug {
namespace {

using Json = nlohmann::json;
using testing::make_tp_mlp;
using testing::MLPModule;

void run_mlp(FakeWorldTrace& world_trace, int64_t world_size) {
  run_fake_world(world_size, [&](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {world_size});
    MLPModule model = make_tp_mlp(mesh);
    DTensor x = distribute_tensor(torch::rand({8, 10}), mesh, {Replicate()});
    CommDebugMode comm(&world_trace);
    auto guard = comm.enter(*model);
    nn::call(model, x).sum().backward();
  });
}

TEST(FakeWorldTraceTest, SpmdRanksAgree) {
  FakeWorldTrace world_trace;
  run_mlp(world_trace, 4);
  EXPECT_EQ(world_trace.ranks(), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_COMM_COUNTS(world_trace, {{"all_reduce", 1}});
  EXPECT_COMM_MODULE_COUNTS(world_trace, "MLPModule.net2", "forward", {{"all_reduce", 1}});
  EXPECT_EQ(world_trace.get_total_counts(), 1);
  EXPECT_EQ(world_trace.get_comm_counts(3), (trace::KindCounts{{"all_reduce", 1}}));
  EXPECT_EQ(world_trace.per_rank_counts().size(), 4u);
  EXPECT_TRUE(world_trace.differing_ranks().empty());
  trace::CommTrace merged = world_trace.trace();
  EXPECT_EQ(merged.rank, -1);
  EXPECT_EQ(merged.world_size, 4);
  EXPECT_EQ(merged.collectives.size(), 4u);
  EXPECT_EQ(merged.modules.size(), 4u);
  for (const trace::CollectiveRecord& r : merged.collectives) EXPECT_GE(r.ts_us, 0.0);
}

TEST(FakeWorldTraceTest, MergedJsonAndTable) {
  FakeWorldTrace world_trace;
  run_mlp(world_trace, 2);
  const std::string path = ::testing::TempDir() + "/fake_world_trace.json";
  world_trace.generate_json_dump(path, /*noise_level=*/1);
  const std::string text = trace::read_text_file(path);
  EXPECT_TRUE(trace::validate_comm_trace_json(text).empty());
  Json root = Json::parse(text);
  EXPECT_EQ(root["rank"], -1);
  EXPECT_EQ(root["events"].size(), 2u);
  EXPECT_EQ(root["per_rank_counts"], Json::parse(R"({"0": {"all_reduce": 1}, "1": {"all_reduce": 1}})"));
  EXPECT_EQ(root["differing_ranks"], Json::array());
  EXPECT_EQ(root["collectives_forward"], Json::parse(R"([["all_reduce", 1]])"));
  const std::string table_path = ::testing::TempDir() + "/fake_world_trace.txt";
  world_trace.log_comm_debug_tracing_table_to_file(table_path, 0);
  EXPECT_EQ(trace::read_text_file(table_path).rfind("(fake world: 2 ranks traced, showing rank 0)\nGlobal\n", 0),
            0u);
}

// Ranks 2 and 3 issue one more all_reduce (on their own group): not SPMD.
TEST(FakeWorldTraceTest, RanksThatDifferAreNamed) {
  FakeWorldTrace world_trace;
  run_fake_world(4, [&](World& world) {
    auto mesh = DeviceMesh::init(c10::kCPU, {4});
    DTensor x = distribute_tensor(torch::ones({4}), mesh, {Shard(0)});
    std::shared_ptr<Communicator> pair;
    if (world.rank() >= 2) pair = world.new_group({2, 3});
    CommDebugMode comm(&world_trace);
    auto guard = comm.enter();
    x.full_tensor();
    if (pair) {
      at::Tensor t = torch::ones({2});
      pair->all_reduce(t);
    }
  });
  EXPECT_EQ(world_trace.differing_ranks(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(world_trace.rank_differences(),
            (std::vector<std::string>{"rank 2: Global forward all_reduce: 1 (rank 0: 0)",
                                      "rank 3: Global forward all_reduce: 1 (rank 0: 0)"}));
  EXPECT_EQ(world_trace.get_comm_counts(2), (trace::KindCounts{{"all_gather_into_tensor", 1}, {"all_reduce", 1}}));
  EXPECT_NE(world_trace.generate_comm_debug_tracing_table(0).find("ranks differing from rank 0: 2 3"),
            std::string::npos);
}

TEST(FakeWorldTraceTest, ChromeTraceHasOneTrackPerRank) {
  FakeWorldTrace world_trace;
  run_mlp(world_trace, 4);
  const std::string path = ::testing::TempDir() + "/fake_world_chrome.json";
  world_trace.generate_chrome_trace(path);
  Json root = Json::parse(trace::read_text_file(path));
  std::set<int64_t> tids;
  int slices = 0;
  for (const Json& e : root["traceEvents"]) {
    if (e["ph"] == "X") {
      ++slices;
      tids.insert(e["tid"].get<int64_t>());
      EXPECT_EQ(e["args"]["module"], "MLPModule.net2");
    }
  }
  EXPECT_EQ(slices, 4);
  EXPECT_EQ(tids, (std::set<int64_t>{0, 1, 2, 3}));
}

TEST(FakeWorldTraceTest, MisuseIsExplained) {
  FakeWorldTrace world_trace;
  EXPECT_THROW(world_trace.get_comm_counts(), c10::Error);
  trace::CommTrace merged;
  merged.rank = -1;
  EXPECT_THROW(world_trace.add(merged), c10::Error);
  EXPECT_THROW(world_trace.rank_trace(5), c10::Error);
}

}  // namespace
}  // namespace dtensor::debug
