// The comparer: our record of a program against PyTorch's, field by field
// (raised, comms, output placements, shapes, values to 1e-10), with each
// difference either unexplained or matched to a row of the deviation table
// (tests/diff/deviations.h).
//   ProgramComparison c = compare_records(program, ours, theirs);
//   c.agrees();  // no unexplained difference
#pragma once

#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "tests/diff/program.h"

namespace dtensor::diff {

/// Absolute tolerance, relative for values above 1: |a - b| <= kTolerance * max(1, |b|).
inline constexpr double kTolerance = 1e-10;

/// One differing field of one step ("inputs" for input creation).
struct FieldDiff {
  int step = -1;             // -1: input creation
  std::string step_label;    // "aten::mul.Tensor", "redistribute", ...
  std::string field;         // "raised", "comms", "outputs", "placements", "shape", "values",
                             // "reference" (ours differs from the single-device run)
  std::string detail;        // "ours ... pytorch ..."
  std::string deviation;     // id of the deviation-table row that explains it, or empty
};

struct ProgramComparison {
  std::string id;
  std::vector<FieldDiff> diffs;
  /// True when every difference is explained by a deviation row.
  bool agrees() const;
  /// True when nothing differs at all.
  bool identical() const { return diffs.empty(); }
};

/// Compares the records of one program. `reference` is run_reference's
/// single-device record (or null): our values must also match it (field
/// "reference", never explained by a deviation), and deviation rows use it to
/// tell which side is right. Precondition: the records have program.id.
ProgramComparison compare_records(const Program& program, const nlohmann::json& ours,
                                  const nlohmann::json& theirs, const nlohmann::json& reference);

/// True when two value lists agree to kTolerance ("nan" equals "nan").
bool values_agree(const nlohmann::json& a, const nlohmann::json& b);

/// Collective counts without zero entries, PyTorch's names mapped to ours
/// (See Note [Collective names] in compare.cc).
nlohmann::json normalized_comms(const nlohmann::json& counts);

/// One line per unexplained difference, "id step label field" (no values:
/// stable across reruns), as tests/diff/testdata/known_divergences-<version>.txt list
/// them.
std::vector<std::string> unexplained_keys(const ProgramComparison& comparison);

/// One word for a whole program's comparison, for the per-overload
/// validation report (issue #33): "identical"; "open" (an unexplained
/// difference); "pytorch-wrong" (PyTorch's value is wrong or it refuses what
/// we run correctly); else "row" (another plan, cheaper or no dearer, by a
/// tested deviation row).
std::string program_verdict(const ProgramComparison& comparison);

/// The "id step label" keys of every step where two PyTorch records of one
/// program differ in any field, deviation rows aside: what changed from one
/// PyTorch version to a newer one. Example: {"g18_00576 0 aten::trunc", ...}.
std::set<std::string> changed_steps(const Program& program, const nlohmann::json& newer,
                                    const nlohmann::json& older);

/// dtensor follows the newest PyTorch it is recorded with (tests/diff/README.md):
/// against an older version, an unexplained difference at a step that the
/// newer version changed is expected (a new strategy there changes comms,
/// bytes and placements together; the newer version's own check still holds
/// dtensor to it). Values, differences from the single-device run and
/// internal failures are never marked. Marks those with the deviation
/// "follows-pytorch-<newer_version>" so unexplained_keys skips them.
void mark_followed(ProgramComparison& comparison, const std::set<std::string>& changed,
                   const std::string& newer_version);

/// A readable report of many comparisons: totals, differences by field and by
/// op, deviation rows used, and the first `max_listed` unexplained differences.
std::string comparison_report(const std::vector<ProgramComparison>& comparisons, size_t max_listed = 40);

}  // namespace dtensor::diff
