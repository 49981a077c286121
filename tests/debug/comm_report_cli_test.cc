// The comm_report command line: a passing golden run, a failing one with a
// readable diff, the update flag, and usage errors.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

namespace {

using Json = nlohmann::json;

const char* kBinary = "examples/report/comm_report";  // runfiles-relative (data dependency)
const char* kGolden = "tests/debug/testdata/mlp_fake4.golden.json";

struct Result {
  int status = -1;
  std::string out;
  std::string err;
};

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

Result run(const std::string& args) {
  const std::string dir = ::testing::TempDir();
  const std::string out = dir + "/cli_stdout.txt";
  const std::string err = dir + "/cli_stderr.txt";
  const std::string cmd = std::string(kBinary) + " " + args + " >" + out + " 2>" + err;
  int raw = std::system(cmd.c_str());
  Result r;
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

TEST(CommReportCliTest, PassingRunMatchesGolden) {
  Result r = run(std::string("--program mlp --world-size 4 --expect ") + kGolden);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("matches"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("# Comm report: mlp"), std::string::npos) << r.out;
}

TEST(CommReportCliTest, FailingRunPrintsADiff) {
  Json golden = Json::parse(slurp(kGolden));
  golden["counts"]["all_reduce"] = 3;
  golden["module_counts"]["MLPModule.net2"]["forward"]["all_reduce"] = 3;
  const std::string path = ::testing::TempDir() + "/wrong_golden.json";
  write(path, golden.dump(2));
  Result r = run("--program mlp --world-size 4 --expect " + path);
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_NE(r.err.find("counts[\"all_reduce\"]: expected 3, got 1"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("module_counts[\"MLPModule.net2\"][\"forward\"][\"all_reduce\"]: expected 3, got 1"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("rerun with --update"), std::string::npos) << r.err;
}

TEST(CommReportCliTest, UpdateRewritesTheGolden) {
  const std::string path = ::testing::TempDir() + "/updated_golden.json";
  write(path, "{\"dtensor_report_version\": 1, \"counts\": {}}\n");
  Result r = run("--program mlp --world-size 4 --expect " + path + " --update");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("updated"), std::string::npos) << r.err;
  EXPECT_EQ(Json::parse(slurp(path))["counts"], Json::parse(R"({"all_reduce": 1})"));
  EXPECT_EQ(run("--program mlp --world-size 4 --expect " + path).status, 0);
}

// --diff compares two runs' report JSONs without running anything, and
// says what changed and why (issue #21).
TEST(CommReportCliTest, DiffOfTwoRunsNamesTheOrigin) {
  const std::string before = ::testing::TempDir() + "/before.json";
  ASSERT_EQ(run("--program mlp --world-size 4 --json " + before).status, 0);
  Json after_json = Json::parse(slurp(before));
  ASSERT_EQ(after_json["origins"].size(), 1u) << after_json.dump(2);
  EXPECT_EQ(after_json["origins"][0]["origin"],
            "parallel_style (RowwiseParallel on torch::nn::LinearImpl (output)), P(sum) -> R");
  Json added = after_json["origins"][0];
  added["explicit"] = false;
  added["origin"] = "aten::addmm input 1, S(0) -> R";
  added["kind"] = "all_gather_into_tensor";
  added["module"] = "MLPModule.net1";
  after_json["origins"].push_back(added);
  after_json["counts"]["all_gather_into_tensor"] = 1;
  const std::string after = ::testing::TempDir() + "/after.json";
  write(after, after_json.dump(2));
  Result r = run("--diff " + before + " " + after);
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("new implicit all_gather_into_tensor in MLPModule.net1 from aten::addmm input 1, S(0) -> R "
                       "(forward, 0 -> 1)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("counts[\"all_gather_into_tensor\"]: expected (missing), got 1"), std::string::npos) << r.out;
  Result same = run("--diff " + before + " " + before);
  EXPECT_EQ(same.status, 0) << same.out << same.err;
  EXPECT_NE(same.out.find("agree"), std::string::npos) << same.out;
}

// Solo mode, and every output file at once.
TEST(CommReportCliTest, SoloRunWritesEveryOutput) {
  const std::string dir = ::testing::TempDir();
  Result r = run("--program mlp --solo --world-size 4096 --rank 9 --arg hidden=16384 --latency-us 7 "
                 "--bandwidth-gbps 100 --step-latency-us 2 --markdown " + dir +
                 "/r.md --json " + dir + "/r.json --trace-json " + dir + "/t.json --chrome-trace " + dir +
                 "/c.json");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(r.out.empty());
  EXPECT_NE(slurp(dir + "/r.md").find("simulated rank 9"), std::string::npos);
  Json report = Json::parse(slurp(dir + "/r.json"));
  EXPECT_EQ(report["world_size"], 4096);
  EXPECT_EQ(report["counts"], Json::parse(R"({"all_reduce": 1})"));
  EXPECT_EQ(report["cost_model"], Json::parse(R"({"latency_us": 7.0, "bandwidth_gbytes_per_s": 100.0,
                                                  "step_latency_us": 2.0})"));
  // One all_reduce over 4,096 ranks: 7 us to start and 2 * 4095 ring steps of 2 us, plus its bytes.
  EXPECT_GT(report["estimated_us"]["total"].get<double>(), 7.0 + 2 * 4095 * 2.0);
  EXPECT_EQ(Json::parse(slurp(dir + "/t.json"))["events"].size(), 1u);
  EXPECT_TRUE(Json::parse(slurp(dir + "/c.json"))["traceEvents"].is_array());
}

// Every run loads LibTorch (~2 s): usage checks are few.
TEST(CommReportCliTest, UsageErrors) {
  Result bogus = run("--bogus");
  EXPECT_EQ(bogus.status, 2);
  EXPECT_NE(bogus.err.find("unknown flag --bogus"), std::string::npos) << bogus.err;
  Result unknown = run("--program nope");
  EXPECT_EQ(unknown.status, 2);
  EXPECT_NE(unknown.err.find("unknown program 'nope'"), std::string::npos) << unknown.err;
  Result list = run("--list");
  EXPECT_EQ(list.status, 0);
  EXPECT_EQ(list.out.rfind("mlp\t", 0), 0u) << list.out;
}

}  // namespace
