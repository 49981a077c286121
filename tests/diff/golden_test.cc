// Runs the checked-in corpus (tests/diff/testdata) on the fake world once and
// compares it with the records of each PyTorch version (2.11 and 2.15),
// without Python: values must agree with PyTorch (or PyTorch must be the one
// that is wrong, by the single-device run) and with the single-device run,
// and every other difference must be a deviation row, a change the newest
// version made (dtensor follows it), or listed in that version's
// known_divergences-<version>.txt.
// Regenerate the goldens: tests/diff/regenerate_goldens.sh (README.md).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/diff/compare.h"
#include "tests/diff/data_files.h"
#include "tests/diff/runner.h"

namespace dtensor::diff {
namespace {

using nlohmann::json;

// 8 of op programs, then one each of structured programs, out=/in-place
// overloads, PyTorch 2.15's other pointwise ops, convolution / pooling /
// normalization, indexing / scatters / linear algebra and uneven views, 4
// validating overloads from schema-built samples, one of flattened-mesh
// redistributions, one validating overloads from recipes, one validating
// random-valued overloads, their values not compared, one of recipes with
// float8 or uint8 tensors (generate_programs.py).
constexpr int kShards = 22;

std::string testdata(const std::string& name) { return data_file("tests/diff/testdata/" + name); }

json read_json(const std::string& name) { return read_json_file("tests/diff/testdata/" + name); }

std::string shard_name(const char* stem, int shard) {
  std::ostringstream out;
  out << stem << (shard < 10 ? "_0" : "_") << shard << ".json";
  return out.str();
}

// The PyTorch versions the corpus is recorded with (files
// pytorch-<version>_NN.json, known_divergences-<version>.txt), oldest first.
// dtensor follows the last: against the others, a difference where that one
// changed is expected (mark_followed in compare.h).
const std::vector<std::string>& reference_versions() {
  static const std::vector<std::string> versions = {"2.11", "2.15"};
  return versions;
}

using Records = std::map<std::string, json>;

Records read_records(const std::string& version, int shard) {
  const json doc = read_json(shard_name(("pytorch-" + version).c_str(), shard));
  EXPECT_EQ(doc.value("format", ""), kFormat);
  EXPECT_EQ(doc.value("producer", "").rfind("pytorch " + version, 0), 0u) << doc.value("producer", "");
  Records out;
  for (const json& r : doc.at("records")) out[r.at("id").get<std::string>()] = r;
  return out;
}

std::set<std::string> known_divergences(const std::string& version) {
  std::ifstream in(testdata("known_divergences-" + version + ".txt"));
  std::set<std::string> out;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line[0] != '#') out.insert(line);
  }
  return out;
}

struct Ours {
  json record;
  json reference;
};

// Our records and the single-device runs of one shard, by program id.
std::map<std::string, Ours> run_shard(const std::vector<Program>& programs) {
  std::map<std::string, Ours> out;
  for (const Program& p : programs) out[p.id] = Ours{run_program(p), run_reference(p)};
  return out;
}

// `newest`: the followed version's records, or null when `version` is it.
void check_against(const std::string& version, int shard, const std::vector<Program>& programs,
                   const std::map<std::string, Ours>& ours, const Records* newest) {
  SCOPED_TRACE("PyTorch " + version);
  Records theirs = read_records(version, shard);
  const std::set<std::string> known = known_divergences(version);
  std::set<std::string> expected, found;
  std::vector<ProgramComparison> comparisons;
  for (const Program& p : programs) {
    SCOPED_TRACE(p.id);
    ASSERT_TRUE(theirs.count(p.id)) << "no PyTorch " << version << " record; regenerate the goldens";
    const Ours& o = ours.at(p.id);
    comparisons.push_back(compare_records(p, o.record, theirs[p.id], o.reference));
    if (newest) {
      ASSERT_TRUE(newest->count(p.id)) << "no record of the newest PyTorch; regenerate the goldens";
      mark_followed(comparisons.back(), changed_steps(p, newest->at(p.id), theirs[p.id]),
                    reference_versions().back());
    }
    for (const FieldDiff& d : comparisons.back().diffs) {
      if (d.deviation.empty() && (d.field == "values" || d.field == "reference")) {
        ADD_FAILURE() << p.id << " step " << d.step << " " << d.step_label << " " << d.field << ": " << d.detail;
      }
    }
    for (const std::string& k : unexplained_keys(comparisons.back())) found.insert(k);
    for (auto it = known.lower_bound(p.id + " "); it != known.end() && it->rfind(p.id + " ", 0) == 0; ++it) {
      expected.insert(*it);
    }
  }
  std::ostringstream extra, fixed;
  for (const std::string& k : found) {
    if (!expected.count(k)) extra << "  " << k << "\n";
  }
  for (const std::string& k : expected) {
    if (!found.count(k)) fixed << "  " << k << "\n";
  }
  EXPECT_TRUE(extra.str().empty()) << "new differences from PyTorch " << version
                                   << " (fix them, or add a deviation row):\n"
                                   << extra.str() << comparison_report(comparisons);
  EXPECT_TRUE(fixed.str().empty()) << "listed divergences that no longer occur (remove them from "
                                      "known_divergences-" << version << ".txt):\n" << fixed.str();
}

class GoldenShard : public ::testing::TestWithParam<int> {};

TEST_P(GoldenShard, AgreesWithPyTorch) {
  const int shard = GetParam();
  const std::vector<Program> programs = parse_programs(read_json(shard_name("programs", shard)));
  ASSERT_FALSE(programs.empty());
  const std::map<std::string, Ours> ours = run_shard(programs);
  const std::vector<std::string>& versions = reference_versions();
  const Records newest = read_records(versions.back(), shard);
  for (const std::string& version : versions) {
    check_against(version, shard, programs, ours, version == versions.back() ? nullptr : &newest);
  }
}

INSTANTIATE_TEST_SUITE_P(Corpus, GoldenShard, ::testing::Range(0, kShards));

}  // namespace
}  // namespace dtensor::diff
