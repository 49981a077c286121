// The comparer and the deviation rows: each row explains a difference only
// when its claim holds.
#include "tests/diff/compare.h"

#include <gtest/gtest.h>

namespace dtensor::diff {
namespace {

using nlohmann::json;

Program program_with_steps(int n) {
  Program p;
  p.id = "t";
  p.world_size = 4;
  p.mesh_shape = {4};
  for (int i = 0; i < n; ++i) p.steps.push_back(Step{"op", json{{"kind", "op"}, {"op", "aten::mm"}}});
  return p;
}

json out(std::vector<std::string> placements, std::vector<double> values) {
  return json{{"placements", placements}, {"shape", {values.size()}}, {"values", values}};
}

json step(json comms, std::vector<json> outputs) {
  return json{{"raised", false}, {"comms", comms}, {"outputs", outputs}};
}

json record(std::vector<json> steps) { return json{{"id", "t"}, {"steps", steps}}; }

std::string only_deviation(const ProgramComparison& c) {
  EXPECT_EQ(c.diffs.size(), 1u);
  return c.diffs.empty() ? "?" : c.diffs[0].deviation;
}

TEST(CompareTest, IdenticalRecordsAgree) {
  json r = record({step({{"all_reduce", 1}}, {out({"R"}, {1.0, 2.0})})});
  EXPECT_TRUE(compare_records(program_with_steps(1), r, r, nullptr).identical());
}

TEST(CompareTest, ValuesUseTheTolerance) {
  EXPECT_TRUE(values_agree(json{1.0, 100.0}, json{1.0 + 5e-11, 100.0 + 5e-9}));
  EXPECT_FALSE(values_agree(json{1.0}, json{1.0 + 5e-10}));
  EXPECT_TRUE(values_agree(json{"nan", "inf"}, json{"nan", "inf"}));
  EXPECT_FALSE(values_agree(json{"nan"}, json{0.0}));
}

TEST(CompareTest, ShardDimAllToAllIsOurAllToAllSingle) {
  EXPECT_EQ(normalized_comms(json{{"shard_dim_alltoall", 2}, {"all_reduce", 0}}),
            (json{{"all_to_all_single", 2}}));
  json ours = record({step({{"all_to_all_single", 1}}, {out({"S(1)"}, {1.0})})});
  json theirs = record({step({{"shard_dim_alltoall", 1}}, {out({"S(1)"}, {1.0})})});
  EXPECT_TRUE(compare_records(program_with_steps(1), ours, theirs, nullptr).identical());
}

TEST(CompareTest, BytesAreComparedWhereTheCollectivesAgree) {
  json ours = record({step({{"all_reduce", 1}}, {out({"R"}, {1.0})})});
  json theirs = ours;
  ours["steps"][0]["bytes"] = {{"all_reduce", 64}};
  theirs["steps"][0]["bytes"] = {{"all_reduce", 64}};
  EXPECT_TRUE(compare_records(program_with_steps(1), ours, theirs, nullptr).identical());
  ours["steps"][0]["bytes"] = {{"all_reduce", 128}};
  ProgramComparison more = compare_records(program_with_steps(1), ours, theirs, nullptr);
  ASSERT_EQ(more.diffs.size(), 1u);
  EXPECT_EQ(more.diffs[0].field, "bytes");
  EXPECT_FALSE(more.agrees());
}

// Note [Internal failures] (runner.cc): "both raised" agrees only for
// refusals; a failure of ours is a difference no deviation row explains.
TEST(CompareTest, OurInternalFailureNeverAgreesEvenWhenPyTorchRaisedToo) {
  const json raised = json{{"raised", true}, {"error", "KeyError: 1"}};
  json theirs = record({raised});
  json refusal = record({json{{"raised", true}, {"error", "aten::mm: no strategy"}}});
  EXPECT_TRUE(compare_records(program_with_steps(1), refusal, theirs, nullptr).agrees());

  json internal = record({json{{"raised", true},
                               {"error", "INTERNAL ASSERT FAILED"},
                               {"internal", true},
                               {"internal_error", "INTERNAL ASSERT FAILED"}}});
  ProgramComparison c = compare_records(program_with_steps(1), internal, theirs, nullptr);
  EXPECT_FALSE(c.agrees());
  ASSERT_EQ(c.diffs.size(), 1u);
  EXPECT_EQ(c.diffs[0].field, "internal");

  json disagree = refusal;
  disagree["internal_error"] = "ranks disagree at step 0: rank 0 'x', rank 1 'ok'";
  c = compare_records(program_with_steps(1), disagree, theirs, nullptr);
  EXPECT_FALSE(c.agrees());
  ASSERT_FALSE(c.diffs.empty());
  EXPECT_EQ(c.diffs[0].field, "internal");
  EXPECT_EQ(c.diffs[0].deviation, "");
}

// Note [A local op failing on some ranks] (runner.cc): such a raise agrees
// with a raise only where one device raised at that step too.
TEST(CompareTest, LocalOpFailingOnSomeRanksAgreesOnlyWhereOneDeviceRaised) {
  const json raised = json{{"raised", true}, {"error", "RuntimeError: no valid sharding strategy"}};
  json ours = record({json{{"raised", true},
                           {"error", "aten::embedding, rank 0: the local op failed on this rank's shards: index out "
                                     "of range in self"},
                           {"some_ranks", true}}});
  json one_device_raised = record({json{{"raised", true}, {"error", "index out of range in self"}, {"comms", json::object()}}});
  EXPECT_TRUE(compare_records(program_with_steps(1), ours, record({raised}), one_device_raised).agrees());
  json one_device_ran = record({step(json::object(), {out({}, {1.0})})});
  ProgramComparison c = compare_records(program_with_steps(1), ours, record({raised}), one_device_ran);
  EXPECT_FALSE(c.agrees());
  ASSERT_EQ(c.diffs.size(), 1u);
  EXPECT_EQ(c.diffs[0].field, "internal");
}

// Note [Random values] (compare.cc): a step marked "random" compares
// everything but values, against PyTorch and against one device.
TEST(CompareTest, RandomStepsCompareEverythingButValues) {
  Program p = program_with_steps(1);
  json ours = record({step({{"all_reduce", 1}}, {out({"R"}, {0.25, 0.5})})});
  json theirs = record({step({{"all_reduce", 1}}, {out({"R"}, {0.75, 0.125})})});
  json one_device = record({step(json::object(), {out({}, {0.5, 0.5})})});
  EXPECT_FALSE(compare_records(p, ours, theirs, one_device).agrees());
  p.steps[0].json["random"] = true;
  EXPECT_TRUE(compare_records(p, ours, theirs, one_device).identical());
  theirs["steps"][0]["outputs"][0]["placements"] = {"S(0)"};
  ProgramComparison c = compare_records(p, ours, theirs, one_device);
  ASSERT_EQ(c.diffs.size(), 1u);
  EXPECT_EQ(c.diffs[0].field, "placements");
}

TEST(DeviationTest, FewerBytesRowOnlyWhenOursAreFewer) {
  json ours = record({step({{"all_to_all_single", 1}}, {out({"S(1)"}, {1.0})})});
  json theirs = record({step({{"shard_dim_alltoall", 1}}, {out({"S(1)"}, {1.0})})});
  ours["steps"][0]["bytes"] = {{"all_to_all_single", 48}};
  theirs["steps"][0]["bytes"] = {{"shard_dim_alltoall", 64}};
  EXPECT_EQ(only_deviation(compare_records(program_with_steps(1), ours, theirs, nullptr)), "fewer-bytes");
  ours["steps"][0]["bytes"] = {{"all_to_all_single", 64}};
  theirs["steps"][0]["bytes"] = {{"shard_dim_alltoall", 48}};
  EXPECT_EQ(only_deviation(compare_records(program_with_steps(1), ours, theirs, nullptr)), "");
}

TEST(DeviationTest, BytesOverallRowNeedsNoMoreCollectivesAndBytesInAll) {
  // Step 1 moves 64 bytes where PyTorch moves 32, but step 0 issued one
  // collective of 64 bytes where PyTorch issued two of 64 and 32 (g18_01451).
  json ours = record({step({{"all_reduce", 1}}, {out({"S(1)", "R"}, {1.0})}),
                      step({{"all_gather_into_tensor", 1}}, {out({"R", "R"}, {1.0})})});
  json theirs = record({step({{"reduce_scatter_tensor", 1}, {"all_gather_into_tensor", 1}}, {out({"R", "S(0)"}, {1.0})}),
                        step({{"all_gather_into_tensor", 1}}, {out({"R", "R"}, {1.0})})});
  ours["steps"][0]["bytes"] = {{"all_reduce", 64}};
  theirs["steps"][0]["bytes"] = {{"reduce_scatter_tensor", 64}, {"all_gather_into_tensor", 32}};
  ours["steps"][1]["bytes"] = {{"all_gather_into_tensor", 64}};
  theirs["steps"][1]["bytes"] = {{"all_gather_into_tensor", 32}};
  auto deviation_of = [&](const std::string& field) {
    ProgramComparison c = compare_records(program_with_steps(2), ours, theirs, nullptr);
    for (const FieldDiff& d : c.diffs) {
      if (d.field == field) return d.deviation;
    }
    return std::string("none");
  };
  EXPECT_EQ(deviation_of("bytes"), "bytes-overall");
  // 96 bytes at step 1: more than PyTorch's so far (160 > 128), so not this
  // row; one collective fewer so far is worth more than 32 bytes.
  ours["steps"][1]["bytes"] = {{"all_gather_into_tensor", 96}};
  EXPECT_EQ(deviation_of("bytes"), "fewer-collectives-overall");
  // Fewer bytes so far but more collectives so far: not explained either.
  ours["steps"][1]["bytes"] = {{"all_gather_into_tensor", 40}};
  ours["steps"][0]["comms"] = {{"all_reduce", 3}};
  EXPECT_EQ(deviation_of("bytes"), "");
  // A later step that repays it: over the whole program no more of either.
  ours["steps"][0] = step({{"all_reduce", 1}}, {out({"S(1)", "R"}, {1.0})});
  ours["steps"][0]["bytes"] = {{"all_reduce", 200}};
  ours["steps"][1]["bytes"] = {{"all_gather_into_tensor", 64}};
  json later = step({}, {});
  later["bytes"] = json::object();
  json theirs_later = step({{"all_reduce", 2}}, {});
  theirs_later["bytes"] = {{"all_reduce", 300}};
  ours["steps"].push_back(later);
  theirs["steps"].push_back(theirs_later);
  ProgramComparison repaid = compare_records(program_with_steps(3), ours, theirs, nullptr);
  bool found = false;
  for (const FieldDiff& d : repaid.diffs) {
    if (d.field == "bytes") {
      EXPECT_EQ(d.deviation, "bytes-overall");
      found = true;
    }
  }
  EXPECT_TRUE(found);
}

TEST(DeviationTest, OutputsWholeRowNeedsOursReplicateWherePlacementsDiffer) {
  // g18_00283: both reduce_scatter once; PyTorch first splits the batch on the
  // replicated mesh dim 0 (144 bytes, output [S(0), P(sum)]), ours does not
  // (288 bytes, [R, P(sum)]).
  json ours = record({step({{"reduce_scatter_tensor", 1}}, {out({"R", "P(sum)"}, {1.0})})});
  json theirs = record({step({{"reduce_scatter_tensor", 1}}, {out({"S(0)", "P(sum)"}, {1.0})})});
  ours["steps"][0]["bytes"] = {{"reduce_scatter_tensor", 288}};
  theirs["steps"][0]["bytes"] = {{"reduce_scatter_tensor", 144}};
  Program p = program_with_steps(1);
  p.mesh_shape = {2, 2};
  auto bytes_deviation = [&] {
    for (const FieldDiff& d : compare_records(p, ours, theirs, nullptr).diffs) {
      if (d.field == "bytes") return d.deviation;
    }
    return std::string("none");
  };
  EXPECT_EQ(bytes_deviation(), "outputs-whole");
  // PyTorch's output whole where ours is sharded: the claim fails.
  ours["steps"][0]["outputs"][0]["placements"] = {"S(1)", "P(sum)"};
  theirs["steps"][0]["outputs"][0]["placements"] = {"R", "P(sum)"};
  EXPECT_EQ(bytes_deviation(), "");
  // Same placements: nothing pending on PyTorch's side, more bytes unexplained.
  ours["steps"][0]["outputs"][0]["placements"] = {"R", "P(sum)"};
  EXPECT_EQ(bytes_deviation(), "");
  // Ours whole, but the extra bytes outweigh a collective's latency.
  theirs["steps"][0]["outputs"][0]["placements"] = {"S(0)", "P(sum)"};
  ours["steps"][0]["bytes"] = {{"reduce_scatter_tensor", 144 + 250'000}};
  EXPECT_EQ(bytes_deviation(), "");
}

TEST(DeviationTest, OutputsCheaperToGatherRowCountsPendingMeshDims) {
  // g18_00178: addmm with the same 4 all_gathers and 1 all_reduce as
  // PyTorch, 32 bytes more; our output [S(1), P(sum), R] gathers whole in
  // two collectives, PyTorch's [S(0), P(sum), S(0)] in three.
  json ours = record({step({{"all_gather_into_tensor", 4}, {"all_reduce", 1}}, {out({"S(1)", "P(sum)", "R"}, {1.0})})});
  json theirs =
      record({step({{"all_gather_into_tensor", 4}, {"all_reduce", 1}}, {out({"S(0)", "P(sum)", "S(0)"}, {1.0})})});
  ours["steps"][0]["bytes"] = {{"all_gather_into_tensor", 152}, {"all_reduce", 24}};
  theirs["steps"][0]["bytes"] = {{"all_gather_into_tensor", 96}, {"all_reduce", 48}};
  Program p = program_with_steps(1);
  p.mesh_shape = {2, 2, 2};
  auto bytes_deviation = [&] {
    for (const FieldDiff& d : compare_records(p, ours, theirs, nullptr).diffs) {
      if (d.field == "bytes") return d.deviation;
    }
    return std::string("none");
  };
  EXPECT_EQ(bytes_deviation(), "outputs-cheaper-to-gather");
  // As many pending mesh dims as PyTorch's: the claim fails.
  ours["steps"][0]["outputs"][0]["placements"] = {"S(1)", "P(sum)", "S(1)"};
  EXPECT_EQ(bytes_deviation(), "");
  // Fewer pending, but the extra bytes outweigh a collective's latency.
  ours["steps"][0]["outputs"][0]["placements"] = {"S(1)", "P(sum)", "R"};
  ours["steps"][0]["bytes"] = {{"all_gather_into_tensor", 152 + 250'000}, {"all_reduce", 24}};
  EXPECT_EQ(bytes_deviation(), "");
}

TEST(DeviationTest, FewerCollectivesOverallRowWeighsBytesAgainstLatency) {
  // g18_00601: one reduce_scatter where PyTorch issues two, then the same
  // all_gather moving 96 bytes where PyTorch's moves 72.
  json ours = record({step({{"reduce_scatter_tensor", 1}}, {out({"S(1)"}, {1.0})}),
                      step({{"all_gather_into_tensor", 1}}, {out({"R"}, {1.0})})});
  json theirs = record({step({{"reduce_scatter_tensor", 1}, {"all_to_all_single", 1}}, {out({"S(1)"}, {1.0})}),
                        step({{"all_gather_into_tensor", 1}}, {out({"R"}, {1.0})})});
  ours["steps"][0]["bytes"] = {{"reduce_scatter_tensor", 384}};
  theirs["steps"][0]["bytes"] = {{"reduce_scatter_tensor", 288}, {"all_to_all_single", 32}};
  ours["steps"][1]["bytes"] = {{"all_gather_into_tensor", 96}};
  theirs["steps"][1]["bytes"] = {{"all_gather_into_tensor", 72}};
  auto bytes_deviation = [&] {
    for (const FieldDiff& d : compare_records(program_with_steps(2), ours, theirs, nullptr).diffs) {
      if (d.field == "bytes") return d.deviation;
    }
    return std::string("none");
  };
  EXPECT_EQ(bytes_deviation(), "fewer-collectives-overall");
  // Extra bytes worth more than the one collective saved: not explained.
  ours["steps"][0]["bytes"] = {{"reduce_scatter_tensor", 384 + 250'000}};
  EXPECT_EQ(bytes_deviation(), "");
  // As many collectives as PyTorch's: not explained either.
  ours["steps"][0]["bytes"] = {{"reduce_scatter_tensor", 384}};
  ours["steps"][0]["comms"] = {{"reduce_scatter_tensor", 2}};
  EXPECT_EQ(bytes_deviation(), "");
}

TEST(DeviationTest, WholeProgramRowNeedsNoMoreCollectivesInAll) {
  // Ours pays 2 at step 0 where PyTorch pays 1, then 0 where PyTorch pays 1.
  json ours = record({step({{"all_gather_into_tensor", 2}}, {out({"R"}, {1.0})}), step({}, {})});
  json theirs = record({step({{"all_gather_into_tensor", 1}}, {out({"R"}, {1.0})}),
                        step({{"all_reduce", 1}}, {})});
  ProgramComparison c = compare_records(program_with_steps(2), ours, theirs, nullptr);
  ASSERT_FALSE(c.diffs.empty());
  EXPECT_EQ(c.diffs[0].deviation, "whole-program");
  // Two more at step 1: over the whole program ours are more.
  ours["steps"][1] = step({{"all_reduce", 2}}, {});
  EXPECT_EQ(compare_records(program_with_steps(2), ours, theirs, nullptr).diffs[0].deviation, "");
}

TEST(DeviationTest, StrategyRowNeedsNoMoreCollectivesSoFar) {
  json fewer = record({step({{"all_gather_into_tensor", 1}}, {out({"S(0)"}, {1.0})})});
  json more = record({step({{"all_reduce", 1}, {"all_gather_into_tensor", 1}}, {out({"R"}, {1.0})})});
  ProgramComparison ok = compare_records(program_with_steps(1), fewer, more, nullptr);
  EXPECT_TRUE(ok.agrees());
  ProgramComparison bad = compare_records(program_with_steps(1), more, fewer, nullptr);
  EXPECT_FALSE(bad.agrees());
}

TEST(DeviationTest, WrongValueRowNeedsOursToMatchTheSingleDeviceRun) {
  json ours = record({step({}, {out({"R"}, {1.0})})});
  json theirs = record({step({}, {out({"R"}, {2.0})})});
  json right = record({step({}, {out({}, {1.0})})});
  EXPECT_EQ(only_deviation(compare_records(program_with_steps(1), ours, theirs, right)), "pytorch-wrong-value");
  json wrong = record({step({}, {out({}, {2.0})})});
  ProgramComparison c = compare_records(program_with_steps(1), ours, theirs, wrong);
  EXPECT_FALSE(c.agrees());  // ours is the wrong one: a "values" and a "reference" difference
}

TEST(DeviationTest, WrongValueRowAlsoExcusesThatStepsCollectives) {
  json ours = record({step({{"all_reduce", 1}}, {out({"R"}, {1.0})})});
  json theirs = record({step({}, {out({"P(sum)"}, {2.0})})});
  json right = record({step({}, {out({}, {1.0})})});
  ProgramComparison c = compare_records(program_with_steps(1), ours, theirs, right);
  EXPECT_TRUE(c.agrees());
  for (const FieldDiff& d : c.diffs) EXPECT_EQ(d.deviation, "pytorch-wrong-value") << d.field;
  json theirs_right = record({step({}, {out({"P(sum)"}, {1.0})})});
  EXPECT_FALSE(compare_records(program_with_steps(1), ours, theirs_right, right).agrees());
}

TEST(DeviationTest, NormRowNeedsPyTorchsNormPartialAndOneAllReducePerMeshDim) {
  Program p = program_with_steps(1);
  p.steps[0].json["op"] = "aten::linalg_vector_norm";
  json ours = record({step({{"all_reduce", 1}}, {out({"R"}, {1.0})})});
  json theirs = record({step({}, {out({"P(norm2)"}, {1.0})})});
  ProgramComparison c = compare_records(p, ours, theirs, nullptr);
  ASSERT_EQ(c.diffs.size(), 2u);  // comms and placements
  for (const FieldDiff& d : c.diffs) EXPECT_EQ(d.deviation, "norm-partial") << d.field;
  json more = record({step({{"all_reduce", 2}}, {out({"R"}, {1.0})})});
  EXPECT_FALSE(compare_records(p, more, theirs, nullptr).agrees());  // 2 all_reduces on a 1-D mesh
}

TEST(DeviationTest, RefusesRowNeedsPyTorchToRaiseAndOursToRun) {
  json ours = record({step({}, {out({"R"}, {1.0})})});
  json theirs = record({json{{"raised", true}, {"error", "NotImplementedError: no strategy"}}});
  json ref = record({step({}, {out({}, {1.0})})});
  EXPECT_EQ(only_deviation(compare_records(program_with_steps(1), ours, theirs, ref)), "pytorch-refuses");
  EXPECT_FALSE(compare_records(program_with_steps(1), theirs, ours, ref).agrees());  // ours raising is never ok
}

TEST(DeviationTest, MixedPartialRowOnlyForPyTorchsMixedPartialError) {
  json ours = record({});
  json theirs = {{"id", "t"}, {"inputs_raised", true}, {"error", "ValueError: Mixed Partial reduce types"}, {"steps", json::array()}};
  EXPECT_EQ(only_deviation(compare_records(program_with_steps(0), ours, theirs, nullptr)), "mixed-partial");
  theirs["error"] = "ValueError: something else";
  EXPECT_FALSE(compare_records(program_with_steps(0), ours, theirs, nullptr).agrees());
}

}  // namespace
}  // namespace dtensor::diff
