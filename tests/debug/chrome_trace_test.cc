// Chrome trace / Perfetto export: Trace Event Format structure and timelines.
#include "debug/chrome_trace.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "trace/comm_estimate.h"
#include "tests/trace/trace_fixture.h"

namespace dtensor::debug {
namespace {

using Json = nlohmann::json;
using trace::testing::mlp_like_trace;

trace::CommTrace two_ranks() {
  trace::CommTrace merged = mlp_like_trace(0);
  merged.rank = -1;
  trace::CommTrace r1 = mlp_like_trace(1);
  for (trace::CollectiveRecord& r : r1.collectives) r.ts_us += 2.0;
  merged.collectives.insert(merged.collectives.end(), r1.collectives.begin(), r1.collectives.end());
  return merged;
}

std::vector<Json> slices(const Json& root) {
  std::vector<Json> out;
  for (const Json& e : root["traceEvents"]) {
    if (e["ph"] == "X") out.push_back(e);
  }
  return out;
}

TEST(ChromeTraceTest, OneTrackPerRankOneSlicePerCollective) {
  Json root = Json::parse(chrome_trace_json(two_ranks()));
  ASSERT_TRUE(root["traceEvents"].is_array());
  std::vector<std::string> thread_names;
  for (const Json& e : root["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name") thread_names.push_back(e["args"]["name"]);
  }
  EXPECT_EQ(thread_names, (std::vector<std::string>{"rank 0", "rank 1"}));
  std::vector<Json> xs = slices(root);
  ASSERT_EQ(xs.size(), 4u);
  for (const Json& x : xs) {
    for (const char* key : {"name", "cat", "ph", "ts", "dur", "pid", "tid", "args"})
      EXPECT_TRUE(x.contains(key)) << key;
    EXPECT_GE(x["dur"].get<double>(), 0.0);
  }
  EXPECT_EQ(xs[0]["name"], "all_reduce");
  EXPECT_EQ(xs[0]["tid"], 0);
  EXPECT_EQ(xs[0]["cat"], "collective,forward");
  EXPECT_EQ(xs[0]["args"]["bytes"], 320);
  EXPECT_EQ(xs[0]["args"]["module"], "MLPModule.net2");
  EXPECT_EQ(xs[0]["args"]["group"], Json::parse("[0, 1, 2, 3]"));
  EXPECT_EQ(xs[0]["args"]["mesh_dim_name"], "tp");
  EXPECT_EQ(xs[2]["tid"], 1);
  EXPECT_DOUBLE_EQ(xs[2]["ts"].get<double>(), 12.5);
}

TEST(ChromeTraceTest, RecordedSlicesLastTheirEstimate) {
  trace::CommTrace t = mlp_like_trace();
  std::vector<Json> xs = slices(Json::parse(chrome_trace_json(t)));
  ASSERT_EQ(xs.size(), 2u);
  // all_reduce of 320 B over 4 ranks: 5 us + 6 ring steps * 0.5 us + 2*3/4*320 B / 50 GB/s.
  EXPECT_NEAR(xs[0]["dur"].get<double>(), 5.0 + 6 * 0.5 + 480.0 / 50e3, 1e-9);
  EXPECT_DOUBLE_EQ(xs[0]["ts"].get<double>(), 10.5);
  t.collectives[1].ts_us = 12.0;  // the next collective starts 1.5 us later: cut short
  xs = slices(Json::parse(chrome_trace_json(t)));
  EXPECT_DOUBLE_EQ(xs[0]["dur"].get<double>(), 1.5);
}

TEST(ChromeTraceTest, EstimatedTimelineIsBackToBack) {
  ChromeTraceOptions options;
  options.timeline = ChromeTimeline::kEstimated;
  options.cost_model = CommCostModel{/*latency_us=*/10.0, /*bandwidth_gbytes_per_s=*/1.0, /*step_latency_us=*/1.0};
  std::vector<Json> xs = slices(Json::parse(chrome_trace_json(mlp_like_trace(), options)));
  ASSERT_EQ(xs.size(), 2u);
  EXPECT_DOUBLE_EQ(xs[0]["ts"].get<double>(), 0.0);
  const double ar = 10.0 + 6.0 + 480.0 / 1e3;  // 6 ring steps of 1 us
  EXPECT_DOUBLE_EQ(xs[0]["dur"].get<double>(), ar);
  EXPECT_DOUBLE_EQ(xs[1]["ts"].get<double>(), ar);
  EXPECT_DOUBLE_EQ(xs[1]["dur"].get<double>(), 10.0 + 3.0 + 192.0 / 1e3);  // all_gather: 3 steps, 3/4 * 256 B out
}

TEST(ChromeTraceTest, RingBytesFollowTheCostModel) {
  trace::CollectiveRecord r;
  r.group = {0, 1, 2, 3};
  r.bytes = 32;
  r.output_bytes = 128;
  const std::vector<std::pair<std::string, int64_t>> cases = {{"all_reduce", 48},
                                                              {"all_gather_into_tensor", 96},
                                                              {"reduce_scatter_tensor", 24},
                                                              {"all_to_all_single", 24},
                                                              {"broadcast", 32},
                                                              {"barrier", 0}};
  for (const auto& [kind, bytes] : cases) {
    r.kind = kind;
    EXPECT_EQ(ring_bytes_per_rank(r), bytes) << kind;
  }
  r.group = {3};
  r.kind = "all_reduce";
  EXPECT_EQ(estimate_collective_us(r, CommCostModel{}), 0.0) << "a group of one rank moves nothing";
}

TEST(ChromeTraceTest, WritesAFile) {
  const std::string path = ::testing::TempDir() + "/chrome_trace_test.json";
  write_chrome_trace(path, mlp_like_trace());
  std::ifstream in(path);
  Json root = Json::parse(in);
  EXPECT_EQ(slices(root).size(), 2u);
}

}  // namespace
}  // namespace dtensor::debug
