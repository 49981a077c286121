// The rows of the deviation table. Keep in step with tests/diff/README.md
// ("Deviations"); each predicate checks the row's claim, not just its shape.
#include "tests/diff/deviations.h"

#include <algorithm>

#include "layout/comm_cost.h"
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

// The sum over steps 0..step of a record of one per-collective field:
// "comms" (collectives issued) or "bytes" (their input bytes).
int64_t sum_through(const json& record, int step, const char* field) {
  int64_t n = 0;
  const json& steps = record.at("steps");
  for (int s = 0; s <= step && s < static_cast<int>(steps.size()); ++s) {
    const json& rec = steps[static_cast<size_t>(s)];
    if (rec.contains(field)) n += total(rec.at(field));
  }
  return n;
}

int64_t total_through(const json& record, int step) { return sum_through(record, step, "comms"); }
int64_t bytes_through(const json& record, int step) { return sum_through(record, step, "bytes"); }

// Both records ran every step of the program.
bool both_completed(const DiffContext& c) {
  const json& ours = c.ours_record.at("steps");
  const json& theirs = c.theirs_record.at("steps");
  const size_t n = c.program.steps.size();
  if (ours.size() != n || theirs.size() != n) return false;
  for (size_t s = 0; s < n; ++s) {
    if (ours[s].value("raised", false) || theirs[s].value("raised", false)) return false;
  }
  return true;
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

// Output `output` of this step: ours equals the single-device run, PyTorch's does not.
bool pytorch_wrong_at(const DiffContext& c, int output) {
  DiffContext at{c.program, c.step, c.field, c.ours, c.theirs, c.ours_record, c.theirs_record,
                 c.reference_record, output};
  const json* ref = reference_output(at);
  if (ref == nullptr) return false;
  const json& ours = c.ours.at("outputs")[static_cast<size_t>(output)];
  const json& theirs = c.theirs.at("outputs")[static_cast<size_t>(output)];
  if (ours.is_null() || theirs.is_null()) return false;
  // A wrong shape (PyTorch's t_ leaves a DTensor's shape as it was) is a wrong value too.
  if (ours.at("shape") == ref->at("shape") && theirs.at("shape") != ref->at("shape")) {
    return values_agree(ours.at("values"), ref->at("values"));
  }
  return values_agree(ours.at("values"), ref->at("values")) &&
         !values_agree(theirs.at("values"), ref->at("values"));
}

// pytorch-wrong-value: ours equals the single-device run, PyTorch's does not;
// the collectives and placements of such a step differ with it (PyTorch's
// cheaper plan is the wrong one), so they are excused on that step too.
bool pytorch_wrong_value(const DiffContext& c) {
  if (c.field == "values" || c.field == "shape") return pytorch_wrong_at(c, c.output);
  if ((c.field != "comms" && c.field != "placements") || c.step < 0) return false;
  if (!c.ours.contains("outputs") || !c.theirs.contains("outputs")) return false;
  const size_t n = std::min(c.ours.at("outputs").size(), c.theirs.at("outputs").size());
  for (size_t i = 0; i < n; ++i) {
    if (pytorch_wrong_at(c, static_cast<int>(i))) return true;
  }
  return false;
}

// Appends the env index of every tensor reference ({"t": i}) anywhere in
// the JSON arguments `v` of a step.
void collect_refs(const json& v, std::vector<int64_t>& out) {
  if (v.is_object() && v.contains("t") && v.size() == 1) {
    out.push_back(v.at("t").get<int64_t>());
  } else if (v.is_array() || v.is_object()) {
    for (const json& x : v) collect_refs(x, out);
  }
}

// pytorch-writes-a-copy: at this op step PyTorch redistributed a tensor the
// op writes in place and wrote the copy, so the tensor kept its old value
// (PyTorch 2.15's _fused_adam_ moves an S(1) exp_avg_sq to its parameter's
// S(0) and leaves the original unchanged; BatchNorm's channel sharding of
// replicated running statistics, Note [Batch norm keeps its running
// statistics where they are]). Ours either refuses the call ("... in place")
// or runs a plan that writes the tensor itself. Claim: a later full_tensor
// step of a tensor this step reads shows PyTorch's value differing from the
// single-device run, and ours (when we ran) equal to it.
bool pytorch_writes_a_copy(const DiffContext& c) {
  if (c.step < 0 || c.reference_record.is_null()) return false;
  const json& step = c.program.steps[static_cast<size_t>(c.step)].json;
  if (step.value("kind", std::string()) != "op") return false;
  const bool ours_refused = c.ours.value("raised", false);
  if (ours_refused && c.ours.value("error", std::string()).find("in place") == std::string::npos) return false;
  if (c.theirs.value("raised", false)) return false;
  std::vector<int64_t> reads;
  collect_refs(step.value("args", json::array()), reads);
  collect_refs(step.value("kwargs", json::object()), reads);
  const json& theirs = c.theirs_record.at("steps");
  const json& ours = c.ours_record.at("steps");
  const json& ref = c.reference_record.at("steps");
  for (size_t k = static_cast<size_t>(c.step) + 1; k < c.program.steps.size(); ++k) {
    const json& later = c.program.steps[k].json;
    if (later.value("kind", std::string()) != "full_tensor") continue;
    if (std::find(reads.begin(), reads.end(), later.value("t", int64_t{-1})) == reads.end()) continue;
    if (k >= theirs.size() || k >= ref.size() || theirs[k].value("raised", false) || ref[k].value("raised", false)) {
      continue;
    }
    const json& ref_values = ref[k].at("outputs")[0].at("values");
    if (values_agree(theirs[k].at("outputs")[0].at("values"), ref_values)) continue;
    if (ours_refused) return true;
    if (k < ours.size() && !ours[k].value("raised", false) &&
        values_agree(ours[k].at("outputs")[0].at("values"), ref_values)) {
      return true;
    }
  }
  return false;
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

// norm-partial: a p-norm over sharded dims. PyTorch keeps a _NormPartial
// (sum of |x|^p; recorded as "P(normP)") and reduces it later; ours reduces
// at once (Note [Norms of sharded dims] in core/ops/math_rules.cc) with at
// most one all_reduce per mesh dim and nothing else. _foreach_norm likewise
// (Note [Foreach norms]: elements sharded alike share their all_reduces):
// only all_reduces, at most one per mesh dim for each output PyTorch left
// P(norm), beyond the collectives PyTorch issued at this step itself.
bool norm_partial(const DiffContext& c) {
  if ((c.field != "comms" && c.field != "placements") || c.step < 0) return false;
  const Step& step = c.program.steps[static_cast<size_t>(c.step)];
  if (step.kind != "op") return false;
  const std::string op = step.json.at("op").get<std::string>();
  const bool foreach = op.rfind("aten::_foreach_norm", 0) == 0;
  if (op.rfind("aten::linalg_vector_norm", 0) != 0 && op.rfind("aten::norm", 0) != 0 && !foreach) return false;
  int64_t norm_outputs = 0;
  for (const json& o : c.theirs.at("outputs")) {
    if (o.is_null() || !o.at("placements").is_array()) continue;
    bool norm = false;
    for (const json& p : o.at("placements")) norm = norm || p.get<std::string>().rfind("P(norm", 0) == 0;
    norm_outputs += norm ? 1 : 0;
  }
  int64_t theirs_count = 0;
  const json theirs = normalized_comms(c.theirs.at("comms"));  // kept: items() does not own it
  for (const auto& [k, v] : theirs.items()) theirs_count += v.get<int64_t>();
  const int64_t mesh_dims = static_cast<int64_t>(placement_mesh_shape(c.program).size());
  const int64_t bound = foreach ? mesh_dims * norm_outputs + theirs_count : mesh_dims;
  const json ours = normalized_comms(c.ours.at("comms"));
  for (const auto& [k, v] : ours.items()) {
    if (k != "all_reduce" || v.get<int64_t>() > bound) return false;
  }
  return norm_outputs > 0;
}

// whole-program: ahead of PyTorch at this step but no more collectives over
// the whole program, both having run every step (a cheaper choice earlier
// makes a later step pay, and the total is still no worse).
bool whole_program(const DiffContext& c) {
  if ((c.field != "comms" && c.field != "placements") || c.step < 0) return false;
  if (!both_completed(c)) return false;
  const int last = static_cast<int>(c.program.steps.size()) - 1;
  return total_through(c.ours_record, last) <= total_through(c.theirs_record, last);
}

// fewer-bytes: the same collectives as PyTorch at this step, moving fewer
// input bytes in all (Note [Bytes per collective] in compare.cc).
bool fewer_bytes(const DiffContext& c) {
  if (c.field != "bytes" || c.step < 0) return false;
  return total(c.ours.at("bytes")) < total(c.theirs.at("bytes"));
}

// bytes-overall: the same collectives as PyTorch at this step moving more
// input bytes, while over the program so far (or over the whole program,
// both having run every step) ours issue no more collectives AND move no
// more input bytes: the step pays for an earlier (or is repaid by a later)
// choice that moved less, e.g. a tensor laid out differently by an earlier
// `strategy` difference, or PyTorch leaving an output sharded that a later
// step gathers (README, "Deviations").
bool bytes_overall(const DiffContext& c) {
  if (c.field != "bytes" || c.step < 0) return false;
  auto no_more_through = [&](int step) {
    return total_through(c.ours_record, step) <= total_through(c.theirs_record, step) &&
           bytes_through(c.ours_record, step) <= bytes_through(c.theirs_record, step);
  };
  if (no_more_through(c.step)) return true;
  return both_completed(c) && no_more_through(static_cast<int>(c.program.steps.size()) - 1);
}

// fewer-collectives-overall: the same collectives as PyTorch at this step
// moving more input bytes, while over the program so far (or over the whole
// program, both having run every step) ours issue fewer collectives and the
// extra bytes are worth less than the starts of the collectives saved (one
// latency, 250,000 bytes at the model's 50 GB/s, per collective; Note [Comm
// cost model]): the strategy choice that saved a collective left a layout
// whose later gather moves a padded uneven piece (g18_00601: atan2 of
// [1, 3, 4] S(1) by [3, 3, 4] P(sum) on 4 ranks, one reduce_scatter where
// PyTorch issues two; 5 collectives and 1,536 bytes over the program,
// PyTorch 8 and 1,320).
bool fewer_collectives_overall(const DiffContext& c) {
  if (c.field != "bytes" || c.step < 0) return false;
  const double one_latency = CommCostModel{}.latency_bytes(/*ring_steps=*/0);
  auto cheaper_through = [&](int step) {
    const int64_t saved = total_through(c.theirs_record, step) - total_through(c.ours_record, step);
    const int64_t extra = bytes_through(c.ours_record, step) - bytes_through(c.theirs_record, step);
    return saved > 0 && static_cast<double>(extra) < static_cast<double>(saved) * one_latency;
  };
  if (cheaper_through(c.step)) return true;
  return both_completed(c) && cheaper_through(static_cast<int>(c.program.steps.size()) - 1);
}

// A "bytes" difference at a step (so the same collectives on both sides)
// whose extra input bytes are fewer than one collective's latency is worth,
// with as many outputs on both sides: any collective an output leaves
// pending costs at least its start latency once it runs (250,000 bytes'
// worth: 5 us at 50 GB/s, Note [Comm cost model]).
bool bytes_within_a_latency(const DiffContext& c) {
  if (c.field != "bytes" || c.step < 0) return false;
  const double one_latency = CommCostModel{}.latency_bytes(/*ring_steps=*/0);
  if (static_cast<double>(total(c.ours.at("bytes")) - total(c.theirs.at("bytes"))) >= one_latency) return false;
  return c.ours.at("outputs").size() == c.theirs.at("outputs").size();
}

// outputs-whole: the same collectives as PyTorch at this step moving more
// input bytes, because PyTorch first split a mesh dim on which the operands
// were Replicate (free) so that a collective on another mesh dim moved a
// smaller piece, and left the output sharded or Partial on that mesh dim.
// Claim: wherever an output's placement differs, ours is Replicate and
// PyTorch's is not (each such mesh dim is a collective PyTorch still owes
// when the value is needed whole), and the extra bytes are fewer than one
// collective's latency is worth.
bool outputs_whole(const DiffContext& c) {
  if (!bytes_within_a_latency(c)) return false;
  const json& ours = c.ours.at("outputs");
  const json& theirs = c.theirs.at("outputs");
  int pending = 0;
  for (size_t i = 0; i < ours.size(); ++i) {
    if (ours[i].is_null() || theirs[i].is_null()) continue;
    const json& a = ours[i].at("placements");
    const json& b = theirs[i].at("placements");
    if (!a.is_array() || !b.is_array() || a.size() != b.size()) return false;
    for (size_t d = 0; d < a.size(); ++d) {
      if (a[d] == b[d]) continue;
      if (a[d] != "R" || b[d] == "R") return false;
      ++pending;
    }
  }
  return pending > 0;
}

// outputs-cheaper-to-gather: the same collectives as PyTorch at this step
// moving more input bytes (fewer than one collective's latency is worth),
// where our outputs take fewer collectives to gather whole: Note [Whole-mesh
// ties keep outputs cheap to gather] in core/dispatch/sharding_registry.cc
// breaks such near ties by what gathering the outputs costs. Claim: the
// outputs' non-Replicate mesh dims (one collective each to gather; merges
// over flattened meshes not counted, as in the tie-break) are fewer in all
// than PyTorch's (g18_00178: addmm's [S(1), P(sum), R] output, two, where
// PyTorch's [S(0), P(sum), S(0)] needs three; 32 bytes more now).
bool outputs_cheaper_to_gather(const DiffContext& c) {
  if (!bytes_within_a_latency(c)) return false;
  const json& ours = c.ours.at("outputs");
  const json& theirs = c.theirs.at("outputs");
  auto pending = [](const json& outputs) {
    int n = 0;
    for (const json& o : outputs) {
      if (o.is_null() || !o.at("placements").is_array()) continue;
      for (const json& p : o.at("placements")) n += p != "R";
    }
    return n;
  };
  return pending(ours) < pending(theirs);
}

}  // namespace

const std::vector<Deviation>& deviations() {
  static const std::vector<Deviation> rows = {
      {"pytorch-wrong-value", "PyTorch's value differs from the single-device run; ours equals it",
       pytorch_wrong_value},
      {"pytorch-refuses", "PyTorch raises (no strategy, or a layout it will not reshard); ours runs and "
                          "equals the single-device run",
       pytorch_refuses},
      {"pytorch-writes-a-copy", "PyTorch redistributes a tensor the op writes in place and updates the copy (the "
                                "tensor keeps its old value); ours refuses the call or writes the tensor itself",
       pytorch_writes_a_copy},
      {"norm-partial", "a p-norm over sharded dims: PyTorch keeps a _NormPartial, ours reduces at once "
                       "(at most one all_reduce per mesh dim)",
       norm_partial},
      {"mixed-partial", "ours accepts mixed Partial reduce ops across mesh dims; PyTorch's from_local refuses",
       mixed_partial},
      {"strategy", "another sharding strategy / redistribute plan, with no more collectives than PyTorch's "
                   "over the program so far",
       other_strategy},
      {"whole-program", "more collectives than PyTorch's so far at this step, no more over the whole program",
       whole_program},
      {"fewer-bytes", "the same collectives as PyTorch's at this step, moving fewer bytes", fewer_bytes},
      {"bytes-overall", "the same collectives as PyTorch's at this step, more bytes; no more collectives and "
                        "no more bytes over the program so far, or over the whole program",
       bytes_overall},
      {"outputs-whole", "the same collectives as PyTorch's at this step, more bytes (fewer than one latency's "
                        "worth); our outputs are Replicate where PyTorch's are sharded or Partial",
       outputs_whole},
      {"fewer-collectives-overall", "the same collectives as PyTorch's at this step, more bytes; fewer "
                                    "collectives over the program so far, or over the whole program, and the "
                                    "extra bytes worth less than their latency",
       fewer_collectives_overall},
      {"outputs-cheaper-to-gather", "the same collectives as PyTorch's at this step, more bytes (fewer than one "
                                    "latency's worth); our outputs take fewer collectives to gather whole",
       outputs_cheaper_to_gather},
  };
  return rows;
}

}  // namespace dtensor::diff
