// examples/quickstart as a user runs it (report, comm table, JSON trace), and
// unchanged on two engines: a fake world (4 rank threads) and Gloo (4
// processes on loopback, launched like torchrun). Both print each rank's
// losses and step 1's collectives (--raw); they must agree rank by rank, and
// the losses must match one device. --check-against-fake (what
// tools/gpu_check.sh runs on NCCL with world size 1) on Gloo with world sizes 1 and 2.
#include <gtest/gtest.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "backends/launch/launcher.h"

namespace {

// The runfiles path of //examples:quickstart.
std::string quickstart_path() {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  return std::string(srcdir ? srcdir : ".") + "/" + (workspace ? workspace : "dtensor") +
         "/examples/quickstart";
}

const std::vector<std::string> kArgs = {"--raw", "--dtype", "double", "--steps", "3", "--mesh", "2,2"};

// rank -> its QUICKSTART_RESULT line without "rank=N ".
std::map<int, std::string> parse_results(const std::string& output) {
  std::map<int, std::string> out;
  static const std::regex line(R"(QUICKSTART_RESULT rank=(\d+) (.*))");
  std::istringstream in(output);
  for (std::string l; std::getline(in, l);) {
    std::smatch m;
    if (std::regex_search(l, m, line)) out[std::stoi(m[1])] = m[2];
  }
  return out;
}

std::vector<double> losses_of(const std::string& result) {
  std::smatch m;
  static const std::regex losses(R"(losses=([^ ]*))");
  std::vector<double> out;
  if (!std::regex_search(result, m, losses)) return out;
  std::stringstream in(m[1].str());
  for (std::string v; std::getline(in, v, ',');) out.push_back(std::stod(v));
  return out;
}

std::string run_fake_world(const std::vector<std::string>& args = kArgs) {
  std::string cmd = quickstart_path();
  for (const auto& a : args) cmd += " " + a;
  std::string output;
  FILE* pipe = popen((cmd + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return "";
  char buffer[4096];
  while (fgets(buffer, sizeof(buffer), pipe) != nullptr) output += buffer;
  EXPECT_EQ(pclose(pipe), 0) << output;
  return output;
}

dtensor::launch::LaunchResult run_gloo(int nproc = 4, const std::vector<std::string>& args = kArgs) {
  dtensor::launch::LaunchSpec spec;
  spec.nproc = nproc;
  spec.argv = {quickstart_path()};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.timeout = std::chrono::seconds(180);
  spec.unset_env = {
      "XML_OUTPUT_FILE",    "GTEST_OUTPUT",           "TEST_PREMATURE_EXIT_FILE", "GTEST_SHARD_INDEX",
      "GTEST_TOTAL_SHARDS", "TEST_SHARD_STATUS_FILE", "GTEST_SHARD_STATUS_FILE",  "TEST_WARNINGS_OUTPUT_FILE"};
  dtensor::launch::LaunchResult result;
  for (int attempt = 0; attempt < 3; ++attempt) {  // a free port may be taken before the ranks bind it
    result = dtensor::launch::launch_local(spec);
    if (result.ok() || result.report().find("ddress already in use") == std::string::npos) break;
  }
  return result;
}

TEST(QuickstartTest, PrintsLossesCommTableAndWritesTrace) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string json = std::string(tmp ? tmp : "/tmp") + "/quickstart_trace.json";
  std::remove(json.c_str());
  const std::string output = run_fake_world({"--steps", "2", "--json", json});
  for (const char* part :
       {"loss (4 ranks)", "loss (1 device)", "forward {all_gather_into_tensor: 6, reduce_scatter_tensor: 6}",
        "CommDebugMode table", "Transformer.layers.0.attention.wo", "Wrote every rank's trace"}) {
    EXPECT_NE(output.find(part), std::string::npos) << "'" << part << "' not in:\n" << output;
  }
  FILE* f = std::fopen(json.c_str(), "r");
  ASSERT_NE(f, nullptr) << json;
  char first = 0;
  EXPECT_EQ(std::fread(&first, 1, 1, f), 1u);
  EXPECT_EQ(first, '{');
  std::fclose(f);
}

// --ac op: torchtitan's selective op checkpointing of every block under FSDP;
// the losses equal the one-device run's (the table's |diff| column).
TEST(QuickstartTest, SelectiveOpCheckpointingUnderFsdp) {
  const std::string output = run_fake_world({"--fsdp", "--ac", "op", "--dtype", "double", "--steps", "2"});
  for (const char* part : {"fully sharded data parallel (fully_shard) on \"dp\", selective op activation checkpointing",
                           "backward {all_gather_into_tensor: 2, reduce_scatter_tensor: 3}"}) {
    EXPECT_NE(output.find(part), std::string::npos) << "'" << part << "' not in:\n" << output;
  }
  EXPECT_EQ(output.find("e-0"), std::string::npos) << "a loss differs from one device's by more than 1e-10:\n" << output;
}

TEST(QuickstartTest, GlooRunMatchesFakeWorldRankByRank) {
  const std::string fake_output = run_fake_world();
  const std::map<int, std::string> fake = parse_results(fake_output);
  ASSERT_EQ(fake.size(), 4u) << fake_output;
  // The fake world against one device (float64).
  const std::vector<double> single =
      losses_of(fake_output.substr(fake_output.find("QUICKSTART_SINGLE_DEVICE")));
  ASSERT_EQ(single.size(), 3u) << fake_output;
  for (size_t i = 0; i < single.size(); ++i) EXPECT_NEAR(losses_of(fake.at(0))[i], single[i], 1e-10);
  const dtensor::launch::LaunchResult gloo_run = run_gloo();
  ASSERT_TRUE(gloo_run.ok()) << gloo_run.report();
  std::map<int, std::string> gloo;
  for (const auto& rank : gloo_run.ranks) {
    for (const auto& [r, text] : parse_results(rank.output)) gloo[r] = text;
  }
  ASSERT_EQ(gloo.size(), 4u) << gloo_run.report();
  for (int r = 0; r < 4; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    // The counts part is text: it must be identical.
    const std::string fake_counts = fake.at(r).substr(fake.at(r).find(" forward="));
    const std::string gloo_counts = gloo.at(r).substr(gloo.at(r).find(" forward="));
    EXPECT_EQ(gloo_counts, fake_counts);
    // Groups have 2 ranks (mesh 2x2), so every reduction is a + b on both
    // engines: the losses agree to the last bit (up to printing, 17 digits).
    const std::vector<double> a = losses_of(fake.at(r)), b = losses_of(gloo.at(r));
    ASSERT_EQ(a.size(), 3u);
    ASSERT_EQ(b.size(), 3u);
    for (size_t i = 0; i < a.size(); ++i) EXPECT_DOUBLE_EQ(a[i], b[i]) << "step " << i + 1;
  }
}

// What tools/gpu_check.sh runs on NCCL: one process, and the same program on
// a fake world in that process; the collectives per phase must be equal.
TEST(QuickstartTest, WorldSizeOneCheckAgainstTheFakeWorldPasses) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--backend", "gloo", "--mesh", "1,1", "--dtype", "double", "--steps", "2", "--raw",
                                 "--check-against-fake"},
        std::vector<std::string>{"--mesh", "1", "--no-sp", "--dtype", "float", "--steps", "2", "--raw",
                                 "--check-against-fake"}}) {
    SCOPED_TRACE(args[1] + " " + args[3]);
    const dtensor::launch::LaunchResult run = run_gloo(/*nproc=*/1, args);
    ASSERT_TRUE(run.ok()) << run.report();
    ASSERT_EQ(run.ranks.size(), 1u);
    const std::string& out = run.ranks[0].output;
    EXPECT_NE(out.find("QUICKSTART_CHECK rank=0 backend=gloo PASSED: collectives per phase equal to the fake "
                       "world's"),
              std::string::npos)
        << out;
    EXPECT_EQ(parse_results(out).size(), 1u) << out;
  }
}

// Every rank of a Gloo run with --check-against-fake passed the check, and
// its one QUICKSTART_RESULT line contains `expected` (real collectives).
void expect_every_rank_equals_the_fake_world(const dtensor::launch::LaunchResult& run,
                                             const std::string& expected) {
  ASSERT_TRUE(run.ok()) << run.report();
  for (const auto& rank : run.ranks) {
    EXPECT_NE(rank.output.find("backend=gloo PASSED: collectives per phase equal"), std::string::npos)
        << rank.output;
    const std::map<int, std::string> results = parse_results(rank.output);
    ASSERT_EQ(results.size(), 1u) << rank.output;
    EXPECT_NE(results.begin()->second.find(expected), std::string::npos) << results.begin()->second;
  }
}

// The same comparison where there are collectives to compare: 2 Gloo ranks
// (tp=2 with sequence parallelism), each against its rank of a fake world.
TEST(QuickstartTest, TwoRankCheckAgainstTheFakeWorldComparesRealCollectives) {
  expect_every_rank_equals_the_fake_world(
      run_gloo(/*nproc=*/2, {"--backend", "gloo", "--mesh", "2", "--dtype", "double", "--steps", "2", "--raw",
                             "--check-against-fake"}),
      "forward={all_gather_into_tensor: ");
}

// fully_shard on 4 Gloo processes: each rank's collectives per phase and its
// losses equal its rank's of a fake world (and the losses one device's).
TEST(QuickstartTest, FsdpOnGlooEqualsTheFakeWorld) {
  expect_every_rank_equals_the_fake_world(
      run_gloo(/*nproc=*/4, {"--backend", "gloo", "--fsdp", "--mesh", "4", "--dtype", "double", "--steps", "2",
                             "--raw", "--check-against-fake"}),
      "backward={all_gather_into_tensor: 2, reduce_scatter_tensor: 3}");
}

// FSDP + TP + SP on a (dp=2, tp=2) mesh of 4 Gloo processes: each rank's
// collectives per phase and its losses equal its rank's of a fake world.
TEST(QuickstartTest, FsdpOverTensorParallelOnGlooEqualsTheFakeWorld) {
  expect_every_rank_equals_the_fake_world(
      run_gloo(/*nproc=*/4, {"--backend", "gloo", "--fsdp", "--mesh", "2,2", "--dtype", "double", "--steps",
                             "2", "--raw", "--check-against-fake"}),
      "reduce_scatter_tensor: ");
}

// Without a GPU or an NCCL build, --backend nccl fails with init_world_from_env's
// message instead of running on another backend.
TEST(QuickstartTest, NcclBackendWithoutAGpuIsAClearError) {
  const dtensor::launch::LaunchResult run =
      run_gloo(/*nproc=*/1, {"--backend", "nccl", "--mesh", "1", "--steps", "1", "--raw"});
  if (run.ok()) GTEST_SKIP() << "this host ran NCCL";
  std::string out = run.ranks[0].output;
  EXPECT_NE(out.find("quickstart: "), std::string::npos) << run.report();
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  EXPECT_NE(out.find("nccl"), std::string::npos) << run.report();
}

}  // namespace
