// What changes for a program when moving from one PyTorch version to another:
// two reference recordings of the same programs (the "dtensor-diff/1" records
// tests/diff/pytorch_runner.py writes, one file per version) compared step by
// step, with the op and the inputs of each changed step. `dtensor-comm-report
// --diff OLD.json NEW.json [--programs P.json]` prints it.
//   UpgradeReport r = compare_reference_records(old_doc, new_doc, &programs_doc);
//   std::cout << upgrade_report_text(r, "2.11", "2.15");
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace dtensor::debug {

/// One field of one step that differs between the two recordings.
struct StepChange {
  std::string id;      // program id, e.g. "g18_00576"
  int step = 0;
  std::string label;   // "aten::trunc", "redistribute", "backward", ...
  std::string inputs;  // the step's tensor arguments, e.g. "t0 [4] [P(max), R, R]"
  std::string field;   // "comms", "placements", "raised", "steps run"
  std::string before;  // the older recording's: `{"all_reduce":1}`, "[R, S(0)]", an error, "ran"
  std::string after;
};

struct UpgradeReport {
  size_t programs = 0;           // programs present in both recordings
  size_t programs_changed = 0;
  std::vector<StepChange> changes;
  /// Changed steps per label and field: counts["aten::trunc"]["placements"].
  std::map<std::string, std::map<std::string, size_t>> counts;
};

/// True when `doc` is a recording of reference runs ("format": "dtensor-diff/1"
/// with "records"), not a comm report JSON.
bool is_reference_records(const nlohmann::json& doc);

/// Compares two recordings by program id and step: raised, collective counts
/// (PyTorch 2.11's shard_dim_alltoall counted as all_to_all_single) and output
/// placements; bytes and values are left out (a report of behaviour, not of
/// numerics). `programs` (the programs file, optional) names each step's op
/// inputs. Throws std::invalid_argument when a document is not a recording.
UpgradeReport compare_reference_records(const nlohmann::json& before, const nlohmann::json& after,
                                        const nlohmann::json* programs = nullptr);

/// Markdown: totals, a table of changed steps per op and field, then up to
/// `max_listed` changes with their inputs, before -> after.
std::string upgrade_report_text(const UpgradeReport& report, const std::string& before_name,
                                const std::string& after_name, size_t max_listed = 50);

/// Collective counts without zero entries, PyTorch 2.11's `shard_dim_alltoall`
/// counted as `all_to_all_single` (its op around one; Note [Collective names]).
nlohmann::json normalized_collective_counts(const nlohmann::json& counts);

}  // namespace dtensor::debug
