// PyTorch programs in dtensor's tools: traces that tools/pytorch_trace's
// dtensor_trace writes (a checked-in one, and one written now by running
// PyTorch's TP MLP on 4 Gloo processes with $DTENSOR_PYTHON) pass the strict
// schema check, load in the viewer's model with every rank's calls and their
// origins, and `comm_report --diff` of the PyTorch MLP's trace and dtensor's
// `--program mlp` trace agrees.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "gui/model/trace_loader.h"
#include "testing/run_command.h"
#include "testing/scratch_dir.h"
#include "trace/trace_json.h"

namespace dtensor::gui {
namespace {

std::string runfile(const std::string& rel) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  return std::string(srcdir ? srcdir : ".") + "/dtensor/" + rel;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// Rank `rank`'s calls by origin cause ("implicit", "redistribute", or "none").
std::map<std::string, int> causes(const LoadedTrace& loaded, int64_t rank) {
  std::map<std::string, int> out;
  for (const auto& call : loaded.trace.collectives) {
    if (call.rank == rank) ++out[call.origin ? call.origin->cause : "none"];
  }
  return out;
}

TEST(PyTorchTraceTest, CheckedInTraceLoadsWithEveryRanksCallsAndOrigins) {
  const std::string path = runfile("tests/gui/testdata/pytorch_trace.json");
  const std::string text = read_all(path);
  EXPECT_TRUE(trace::validate_comm_trace_json(text).empty());
  TraceLoadResult result = load_trace_file(path);
  ASSERT_TRUE(result.trace) << result.error;
  const LoadedTrace& loaded = *result.trace;
  EXPECT_TRUE(loaded.calls_recorded);
  EXPECT_EQ(loaded.trace.world_size, 4);
  EXPECT_EQ(loaded.trace.collectives.size(), 20u);  // 5 per rank
  // The row-wise output and full_tensor() are explicit, the matmul's operands implicit.
  EXPECT_EQ(causes(loaded, 0), (std::map<std::string, int>{{"implicit", 2}, {"redistribute", 3}}));
  ASSERT_TRUE(loaded.trace.mesh);
  EXPECT_EQ(loaded.trace.mesh->dim_names, (std::vector<std::string>{"dp", "tp"}));
  EXPECT_TRUE(loaded.trace.differing_ranks.empty());
}

TEST(PyTorchTraceTest, PyTorchsTpMlpTraceEqualsDtensorsByCommReportDiff) {
  const char* python = std::getenv("DTENSOR_PYTHON");
  if (python == nullptr) GTEST_SKIP() << "DTENSOR_PYTHON not set (tools/test.sh sets it)";
  const std::string dir = testing::scratch_dir("pytorch_trace");
  const std::string theirs = dir + "/pytorch_mlp.json";
  const std::string ours = dir + "/dtensor_mlp.json";
  const testing::CommandRun traced =
      testing::run_command(std::string(python) + " " + runfile("tools/pytorch_trace/tp_mlp.py") + " " + theirs + " 4");
  if (traced.status != 0 && traced.output.find("No module named") != std::string::npos) {
    GTEST_SKIP() << "the Python lacks torch: " << traced.output;
  }
  ASSERT_EQ(traced.status, 0) << traced.output;
  const std::string text = read_all(theirs);
  const std::vector<std::string> errors = trace::validate_comm_trace_json(text);
  EXPECT_TRUE(errors.empty()) << errors.front();
  TraceLoadResult result = load_trace_file(theirs);
  ASSERT_TRUE(result.trace) << result.error;
  EXPECT_TRUE(result.trace->calls_recorded);
  EXPECT_EQ(causes(*result.trace, 3), (std::map<std::string, int>{{"redistribute", 1}}));
  const std::string comm_report = runfile("examples/report/comm_report");
  const testing::CommandRun mine = testing::run_command(comm_report + " --program mlp --trace-json " + ours);
  ASSERT_EQ(mine.status, 0) << mine.output;
  const testing::CommandRun diff = testing::run_command(comm_report + " --diff " + theirs + " " + ours);
  EXPECT_EQ(diff.status, 0) << diff.output;
  EXPECT_NE(diff.output.find("agree"), std::string::npos) << diff.output;
}

}  // namespace
}  // namespace dtensor::gui
