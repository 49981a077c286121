// The capacity planner against published training runs (issue #37):
// planner/published/runs.txt lists real runs (torchtitan, llm-foundry,
// Megatron-LM) with their configuration, topology, calibration and measured
// tokens per second per GPU; this test estimates each and prints published
// against estimated. It checks: every run of a model the planner has
// exactly fits its memory estimate; each estimate equals the one pinned in
// runs.txt within 1% (so a change of the model shows up as a change of this
// table); each is within the 15% of the published throughput,
// but for the runs kKnownMisses names, with why; and where a run publishes
// its memory (torchtitan: torch.cuda.max_memory_reserved()), the estimate's
// reserved bytes (Note [Device memory]) are within the 10% of it,
// but for the runs kKnownMemoryMisses names.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "layout/text.h"
#include "planner/estimate.h"
#include "planner/llama_step.h"

namespace dtensor::planner {
namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  return std::string(std::istreambuf_iterator<char>(in), {});
}

struct PublishedRun {
  std::string id, model;
  bool exact = true;  // the model is the run's (not an approximation of another architecture)
  std::string mesh, plan, topology, calibration;
  double published = 0, published_gib = 0, pinned = 0;
};

std::vector<PublishedRun> read_runs() {
  std::vector<PublishedRun> runs;
  std::istringstream in(read_text("planner/published/runs.txt"));
  std::string line;
  while (std::getline(in, line)) {
    const std::string text = trim_space(line);
    if (text.empty() || text[0] == '#') continue;
    std::vector<std::string> f;
    std::istringstream fields(line);
    for (std::string field; std::getline(fields, field, '|');) f.push_back(trim_space(field));
    EXPECT_EQ(f.size(), 10u) << line;
    if (f.size() != 10) continue;
    EXPECT_TRUE(f[2] == "exact" || f[2] == "approx") << line;
    runs.push_back(PublishedRun{f[0], f[1], f[2] == "exact", f[3], f[4], f[5], f[6], std::stod(f[7]),
                                f[8] == "-" ? 0 : std::stod(f[8]), std::stod(f[9])});
  }
  return runs;
}

// Runs the estimate misses by more than 15%, and why.
const std::map<std::string, std::string> kKnownMisses = {
    {"torchtitan-h100-llama3-8b-fsdp8", "+45%: 500 W power-capped 96 GB H100s, not the SXM part calibrated"},
    {"torchtitan-h100-llama3-8b-fsdp128", "+51%: 500 W power-capped 96 GB H100s, not the SXM part calibrated"},
};

// Runs whose memory the estimate misses by more than 10%, and why.
const std::map<std::string, std::string> kKnownMemoryMisses = {};

TEST(PublishedRunsTest, EstimatesAgainstPublishedThroughput) {
  const std::vector<PublishedRun> runs = read_runs();
  ASSERT_GE(runs.size(), 8u);
  std::printf("%-38s %10s %10s %8s %9s %9s %9s %8s\n", "run", "published", "estimate", "error", "GiB live",
              "GiB rsvd", "GiB pub", "error");
  for (const PublishedRun& r : runs) {
    SCOPED_TRACE(r.id);
    const ModelConfig model = parse_model(r.model);
    const PlanConfig plan = parse_plan(parse_mesh(r.mesh), r.plan);
    Topology topology = parse_topology(read_text("planner/topologies/" + r.topology + ".topo"));
    topology.calibration = std::make_shared<const Calibration>(
        parse_calibration(read_text("planner/calibration/" + r.calibration + ".calib")));
    const PlanEstimate e = estimate_plan(llama_step_program(), model, plan, topology);
    const double tokens_per_gpu = static_cast<double>(model.batch * model.seq) / static_cast<double>(plan.mesh.world_size());
    const double estimate = tokens_per_gpu / (e.step_us_overlap / 1e6);
    const double error = estimate / r.published - 1;
    const double gib = static_cast<double>(e.total_bytes) / (1ull << 30);
    ASSERT_TRUE(e.device.has_value()) << "solo traces count memory";
    const double reserved_gib = static_cast<double>(e.device->reserved) / (1ull << 30);
    const double memory_error = r.published_gib > 0 ? reserved_gib / r.published_gib - 1 : 0;
    std::printf("%-38s %10.1f %10.1f %+7.1f%% %9.1f %9.1f %9s %s\n", r.id.c_str(), r.published, estimate, 100 * error,
                gib, reserved_gib, r.published_gib > 0 ? std::to_string(r.published_gib).substr(0, 4).c_str() : "-",
                r.published_gib > 0 ? (std::to_string(100 * memory_error).substr(0, 5) + "%").c_str() : "");
    if (r.exact) {
      EXPECT_TRUE(e.fits()) << "the run was trained, but the planner says it needs "
                            << static_cast<double>(e.needed_bytes()) / (1ull << 30) << " GiB";
    }
    if (r.published_gib > 0) {
      const auto memory_miss = kKnownMemoryMisses.find(r.id);
      if (memory_miss == kKnownMemoryMisses.end()) {
        EXPECT_LT(std::fabs(memory_error), 0.10) << "reserved " << reserved_gib << " GiB, outside issue #37's 10% of the published "
                                                 << r.published_gib << " GiB";
      } else {
        EXPECT_GE(std::fabs(memory_error), 0.10) << "within 10% now: drop it from kKnownMemoryMisses (" << memory_miss->second << ")";
      }
    }
    EXPECT_NEAR(estimate, r.pinned, 0.01 * r.pinned)
        << "the estimate moved from the pinned " << r.pinned << " tokens/s/GPU; if on purpose, update runs.txt";
    const auto miss = kKnownMisses.find(r.id);
    if (miss == kKnownMisses.end()) {
      EXPECT_LT(std::fabs(error), 0.15) << "outside issue #37's 15% of the published " << r.published;
    } else {
      EXPECT_GE(std::fabs(error), 0.15) << "within 15% now: drop it from kKnownMisses (" << miss->second << ")";
    }
  }
}

}  // namespace
}  // namespace dtensor::planner
