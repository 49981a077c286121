// The upgrade report: two PyTorch versions' recordings of the same programs,
// compared step by step (debug/report/upgrade_report.h).
#include "debug/report/upgrade_report.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace dtensor::debug {
namespace {

using nlohmann::json;

json recording(const char* producer, json records) {
  return {{"format", "dtensor-diff/1"}, {"producer", producer}, {"records", std::move(records)}};
}

json step(json comms, json placements) {
  return {{"raised", false}, {"comms", std::move(comms)}, {"outputs", {{{"placements", std::move(placements)}}}}};
}

// g18_00576: trunc of a P(max) [4] on a 2x2x2 mesh, as PyTorch 2.11 and 2.15 ran it.
const json kPrograms = {
    {"format", "dtensor-diff/1"},
    {"programs",
     {{{"id", "g18_00576"},
       {"inputs", {{{"shape", {4}}, {"placements", {"P(max)", "R", "R"}}}}},
       {"steps", {{{"kind", "op"}, {"op", "aten::trunc"}, {"args", {{{"t", 0}}}}}}}},
      {{"id", "same"}, {"inputs", json::array()}, {"steps", {{{"kind", "full_tensor"}, {"t", 0}}}}},
      {{"id", "refused"}, {"inputs", json::array()}, {"steps", {{{"kind", "redistribute"}, {"t", 0}}}}}}}};

TEST(UpgradeReportTest, ListsEachChangedFieldWithItsOpAndInputs) {
  const json v211 = recording(
      "pytorch 2.11.0",
      {{{"id", "g18_00576"}, {"steps", {step({{"all_reduce", 1}}, {"R", "R", "R"})}}},
       {{"id", "same"}, {"steps", {step({{"shard_dim_alltoall", 1}}, nullptr)}}},
       {{"id", "refused"}, {"steps", {{{"raised", true}, {"error", "RuntimeError: no"}}}}}});
  const json v215 = recording(
      "pytorch 2.15.0",
      {{{"id", "g18_00576"}, {"steps", {step(json::object(), {"P(max)", "R", "R"})}}},
       {{"id", "same"}, {"steps", {step({{"all_to_all_single", 1}}, nullptr)}}},
       {{"id", "refused"}, {"steps", {step(json::object(), {"P(sum)"})}}}});
  const UpgradeReport r = compare_reference_records(v211, v215, &kPrograms);
  EXPECT_EQ(r.programs, 3u);
  EXPECT_EQ(r.programs_changed, 2u);  // the all_to_all's two names are one collective
  ASSERT_EQ(r.changes.size(), 3u);
  EXPECT_EQ(r.changes[0].id, "g18_00576");
  EXPECT_EQ(r.changes[0].label, "aten::trunc");
  EXPECT_EQ(r.changes[0].inputs, "t0 [4] [P(max), R, R]");
  EXPECT_EQ(r.changes[0].field, "comms");
  EXPECT_EQ(r.changes[0].before, "{\"all_reduce\":1}");
  EXPECT_EQ(r.changes[0].after, "none");
  EXPECT_EQ(r.changes[1].field, "placements");
  EXPECT_EQ(r.changes[1].before, "[R, R, R]");
  EXPECT_EQ(r.changes[1].after, "[P(max), R, R]");
  EXPECT_EQ(r.changes[2].field, "raised");
  EXPECT_EQ(r.changes[2].before, "RuntimeError: no");
  EXPECT_EQ(r.changes[2].after, "ran");
  EXPECT_EQ(r.counts.at("aten::trunc").at("comms"), 1u);
  EXPECT_EQ(r.counts.at("redistribute").at("raised"), 1u);

  const std::string text = upgrade_report_text(r, "pytorch 2.11.0", "pytorch 2.15.0");
  EXPECT_NE(text.find("2 of 3 programs change: 3 fields"), std::string::npos) << text;
  EXPECT_NE(text.find("| aten::trunc | 1 | 1 | - | - |"), std::string::npos) << text;
  EXPECT_NE(text.find("- g18_00576 step 0 aten::trunc(t0 [4] [P(max), R, R]) placements: [R, R, R] -> "
                      "[P(max), R, R]"),
            std::string::npos)
      << text;
}

TEST(UpgradeReportTest, WithoutProgramsStepsAreNumbered) {
  const json a = recording("a", {{{"id", "p"}, {"steps", {step(json::object(), {"R"}), step({}, {"R"})}}}});
  const json b = recording("b", {{{"id", "p"}, {"steps", {step({{"all_reduce", 2}}, {"R"})}}}});
  const UpgradeReport r = compare_reference_records(a, b);
  ASSERT_EQ(r.changes.size(), 2u);
  EXPECT_EQ(r.changes[0].field, "steps run");  // b stopped after one step
  EXPECT_EQ(r.changes[0].before, "2");
  EXPECT_EQ(r.changes[1].label, "step");
  EXPECT_EQ(r.changes[1].inputs, "");
}

TEST(UpgradeReportTest, AReportJsonIsNotARecording) {
  const json report = {{"dtensor_report_version", 1}, {"counts", json::object()}};
  EXPECT_FALSE(is_reference_records(report));
  EXPECT_THROW(compare_reference_records(report, report), std::invalid_argument);
}

}  // namespace
}  // namespace dtensor::debug
