// The deviation table: every known, deliberate difference from PyTorch's
// DTensor, each with its reason (tests/diff/README.md, "Deviations") and a
// predicate that both recognises the difference and checks the claim made
// about it (e.g. "fewer collectives" holds only when ours are fewer).
//   for (const Deviation& d : deviations()) if (d.explains(ctx)) ...
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/diff/program.h"

namespace dtensor::diff {

/// What a deviation predicate sees of one differing field.
struct DiffContext {
  const Program& program;
  int step;                          // index into program.steps, -1 for inputs
  const std::string& field;          // "raised", "comms", "placements", ...
  const nlohmann::json& ours;        // our step record (or whole record for inputs)
  const nlohmann::json& theirs;      // PyTorch's
  const nlohmann::json& ours_record;       // whole records (ours, PyTorch's, single-device)
  const nlohmann::json& theirs_record;
  const nlohmann::json& reference_record;  // null when there is none
  int output = -1;                   // output index for per-output fields
};

struct Deviation {
  std::string id;      // stable name, used in the README table
  std::string reason;  // one line
  /// True when this row explains the difference AND its claim holds.
  std::function<bool(const DiffContext&)> explains;
};

/// Every row of the table.
const std::vector<Deviation>& deviations();

}  // namespace dtensor::diff
