// The rows of the deviation table. Keep in step with tests/diff/README.md
// ("Deviations"); each predicate checks the row's claim, not just its shape.
#include "tests/diff/deviations.h"

#include "tests/diff/compare.h"

namespace dtensor::diff {
namespace {

using nlohmann::json;

int64_t total(const json& counts) {
  int64_t n = 0;
  const json normalized = normalized_comms(counts);  // named: items() of a temporary would dangle
  for (const auto& [k, v] : normalized.items()) n += v.get<int64_t>();
  return n;
}

// Collectives issued by steps 0..step of a record.
int64_t total_through(const json& record, int step) {
  int64_t n = 0;
  const json& steps = record.at("steps");
  for (int s = 0; s <= step && s < static_cast<int>(steps.size()); ++s) {
    if (steps[static_cast<size_t>(s)].contains("comms")) n += total(steps[static_cast<size_t>(s)].at("comms"));
  }
  return n;
}

const json* reference_output(const DiffContext& c) {
  if (c.reference_record.is_null() || c.step < 0 || c.output < 0) return nullptr;
  const json& steps = c.reference_record.at("steps");
  if (c.step >= static_cast<int>(steps.size())) return nullptr;
  const json& s = steps[static_cast<size_t>(c.step)];
  if (s.value("raised", false) || c.output >= static_cast<int>(s.at("outputs").size())) return nullptr;
  const json& o = s.at("outputs")[static_cast<size_t>(c.output)];
  return o.is_null() ? nullptr : &o;
}

// pytorch-wrong-value: ours equals the single-device run, PyTorch's does not.
bool pytorch_wrong_value(const DiffContext& c) {
  if (c.field != "values") return false;
  const json* ref = reference_output(c);
  if (ref == nullptr) return false;
  const json& ours = c.ours.at("outputs")[static_cast<size_t>(c.output)];
  const json& theirs = c.theirs.at("outputs")[static_cast<size_t>(c.output)];
  return values_agree(ours.at("values"), ref->at("values")) &&
         !values_agree(theirs.at("values"), ref->at("values"));
}

// pytorch-refuses: PyTorch raised, ours ran; our values are then checked
// against the single-device run (the comparer's "reference" field), so the
// row needs a reference that completed this step.
bool pytorch_refuses(const DiffContext& c) {
  if (c.field != "raised" || c.step < 0) return false;
  if (!c.theirs.value("raised", false) || c.ours.value("raised", false)) return false;
  if (c.reference_record.is_null()) return false;
  const json& steps = c.reference_record.at("steps");
  return c.step < static_cast<int>(steps.size()) && !steps[static_cast<size_t>(c.step)].value("raised", false);
}

// strategy: another sharding strategy or redistribute plan, with no more
// collectives than PyTorch's over the program so far.
bool other_strategy(const DiffContext& c) {
  if (c.field != "comms" && c.field != "placements") return false;
  if (c.step < 0) return false;
  return total_through(c.ours_record, c.step) <= total_through(c.theirs_record, c.step);
}

// mixed-partial: an input with different Partial reduce ops on different
// mesh dims ([P(sum), P(max)]): PyTorch 2.11's from_local refuses it, ours
// accepts it (the planner reduces mesh dims in order).
bool mixed_partial(const DiffContext& c) {
  if (c.field != "raised" || c.step != -1) return false;
  if (!c.theirs.value("inputs_raised", false) || c.ours.value("inputs_raised", false)) return false;
  return c.theirs.value("error", std::string()).find("Mixed Partial") != std::string::npos;
}

}  // namespace

const std::vector<Deviation>& deviations() {
  static const std::vector<Deviation> rows = {
      {"pytorch-wrong-value", "PyTorch's value differs from the single-device run; ours equals it",
       pytorch_wrong_value},
      {"pytorch-refuses", "PyTorch raises (no strategy, or a layout it will not reshard); ours runs and "
                          "equals the single-device run",
       pytorch_refuses},
      {"mixed-partial", "ours accepts mixed Partial reduce ops across mesh dims; PyTorch's from_local refuses",
       mixed_partial},
      {"strategy", "another sharding strategy / redistribute plan, with no more collectives than PyTorch's "
                   "over the program so far",
       other_strategy},
  };
  return rows;
}

}  // namespace dtensor::diff
