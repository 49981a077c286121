// Field-by-field comparison of two records and the text report.
#include "tests/diff/compare.h"

#include "debug/report/upgrade_report.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "tests/diff/deviations.h"

namespace dtensor::diff {
namespace {

using nlohmann::json;

// "id step label": the step a difference is at.
std::string step_key(const std::string& id, const FieldDiff& d) {
  return id + " " + std::to_string(d.step) + " " + d.step_label;
}

// "id step label field": a difference's key in known_divergences-<version>.txt.
std::string key_of(const std::string& id, const FieldDiff& d) { return step_key(id, d) + " " + d.field; }

std::string label_of(const Program& p, int step) {
  if (step < 0 || step >= static_cast<int>(p.steps.size())) return "inputs";
  const Step& s = p.steps[static_cast<size_t>(step)];
  return s.kind == "op" ? s.json.at("op").get<std::string>() : s.kind;
}

bool value_equal(const json& a, const json& b, double tolerance) {
  if (a.is_string() || b.is_string()) return a == b;  // "nan", "inf", "-inf"
  const double x = a.get<double>(), y = b.get<double>();
  return std::fabs(x - y) <= tolerance * std::max(1.0, std::fabs(y));
}

// The tolerance of an output record: kTolerance for float64 (and integers),
// wider for the rounding of float32 and bfloat16 results summed in another
// order (records name a dtype other than float64, int64 and bool).
double tolerance_of(const json& output) {
  const std::string dtype = output.is_object() ? output.value("dtype", std::string()) : std::string();
  return dtype == "float32" ? 1e-5 : dtype == "bfloat16" ? 2e-2 : kTolerance;
}

// Empty when equal, else the first differing element.
std::string values_diff(const json& a, const json& b, double tolerance = kTolerance) {
  if (a.size() != b.size()) return "ours " + std::to_string(a.size()) + " values, pytorch " + std::to_string(b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    if (!value_equal(a[i], b[i], tolerance)) {
      return "element " + std::to_string(i) + ": ours " + a[i].dump() + " pytorch " + b[i].dump();
    }
  }
  return "";
}

}  // namespace

// Note [Collective names]
// PyTorch 2.11 runs Shard(i) -> Shard(j) through its own op
// _dtensor.shard_dim_alltoall (an all_to_all_single underneath), and its
// CommDebugMode counts it under that name; ours counts the all_to_all_single.
// The comparer maps the name (deviation row "alltoall-name" documents it).
json normalized_comms(const json& counts) { return debug::normalized_collective_counts(counts); }

bool values_agree(const json& a, const json& b) { return values_diff(a, b).empty(); }

// Note [Bytes per collective]
// Both runners record, per step, the input bytes rank 0 contributed to each
// kind of collective (dtensor's CommDebugMode records them; the PyTorch
// runner's CommBytes mode reads the functional collectives' inputs, padding
// included on both sides). They are compared only where the collective
// counts agree (else the "comms" field already differs): same collectives,
// different bytes is a "bytes" difference, excused only when ours are fewer
// (row "fewer-bytes"). The names go through normalized_comms like counts.

// Note [Random values]
// A step marked "random" (the validation shard of random-valued overloads:
// bernoulli, the random fills, dropout, empty_like, ...) draws values that
// neither PyTorch's ranks nor one device can reproduce: PyTorch's DTensor
// and ours advance different generators. Its values are compared with
// nothing; its raising, collectives, bytes, output placements and shapes
// are compared as every step's. That replicas agree and that a draw does
// not depend on the placements is tested by tests/core/ops/nn_ops_test.cc.

namespace {

class Comparer {
 public:
  Comparer(const Program& p, const json& ours, const json& theirs, const json& reference, ProgramComparison* out)
      : program_(p), ours_(ours), theirs_(theirs), reference_(reference), out_(out) {}

  void add(int step, const std::string& field, const std::string& detail, const json& ours,
           const json& theirs, int output = -1) {
    FieldDiff d{step, label_of(program_, step), field, detail, ""};
    DiffContext ctx{program_, step, field, ours, theirs, ours_, theirs_, reference_, output};
    // A failure of ours is never a deviation (Note [Internal failures] in runner.cc).
    if (field != "internal") {
      for (const Deviation& dev : deviations()) {
        if (dev.explains(ctx)) {
          d.deviation = dev.id;
          break;
        }
      }
    }
    out_->diffs.push_back(std::move(d));
  }

  void output(int step, int i, const json& a, const json& b, const json& ours_step, const json& theirs_step) {
    if (a.is_null() != b.is_null()) {
      add(step, "outputs", "output " + std::to_string(i) + (a.is_null() ? " missing in ours" : " missing in pytorch"),
          ours_step, theirs_step, i);
      return;
    }
    if (a.is_null()) return;
    if (a.at("placements") != b.at("placements")) {
      add(step, "placements", "output " + std::to_string(i) + ": ours " + a.at("placements").dump() + " pytorch " +
          b.at("placements").dump(), ours_step, theirs_step, i);
    }
    if (a.at("shape") != b.at("shape")) {
      add(step, "shape", "output " + std::to_string(i) + ": ours " + a.at("shape").dump() + " pytorch " +
          b.at("shape").dump(), ours_step, theirs_step, i);
      return;
    }
    if (random_values(step)) return;
    std::string v = values_diff(a.at("values"), b.at("values"), tolerance_of(a));
    if (!v.empty()) add(step, "values", "output " + std::to_string(i) + " " + v, ours_step, theirs_step, i);
  }

  // See Note [Random values]
  bool random_values(int step) const {
    return step >= 0 && static_cast<size_t>(step) < program_.steps.size() &&
           program_.steps[static_cast<size_t>(step)].json.value("random", false);
  }

  void step(int s, const json& a, const json& b) {
    if (a.value("internal", false)) add(s, "internal", a.value("internal_error", std::string()), a, b);
    const bool ra = a.value("raised", false), rb = b.value("raised", false);
    if (ra != rb) {
      add(s, "raised", ra ? "ours raised: " + a.value("error", std::string()) :
          "pytorch raised: " + b.value("error", std::string()), a, b);
      return;
    }
    if (ra) return;  // both raised: messages are not compared
    json ca = normalized_comms(a.at("comms")), cb = normalized_comms(b.at("comms"));
    if (ca != cb) {
      add(s, "comms", "ours " + ca.dump() + " pytorch " + cb.dump(), a, b);
    } else if (a.contains("bytes") && b.contains("bytes")) {
      // See Note [Bytes per collective]
      json ba = normalized_comms(a.at("bytes")), bb = normalized_comms(b.at("bytes"));
      if (ba != bb) add(s, "bytes", "ours " + ba.dump() + " pytorch " + bb.dump(), a, b);
    }
    const json& oa = a.at("outputs");
    const json& ob = b.at("outputs");
    if (oa.size() != ob.size()) {
      add(s, "outputs", "ours " + std::to_string(oa.size()) + " outputs, pytorch " + std::to_string(ob.size()), a, b);
      return;
    }
    for (size_t i = 0; i < oa.size(); ++i) output(s, static_cast<int>(i), oa[i], ob[i], a, b);
  }

  // Our values against the single-device run, for every step we completed.
  void against_reference() {
    if (reference_.is_null() || ours_.value("inputs_raised", false)) return;
    const json& sa = ours_.at("steps");
    const json& sr = reference_.at("steps");
    for (size_t s = 0; s < sa.size() && s < sr.size(); ++s) {
      // See Note [A local op failing on some ranks] in runner.cc.
      if (sa[s].value("some_ranks", false) && !sr[s].value("raised", false)) {
        add(static_cast<int>(s), "internal", "the local op failed on some ranks only, where one device did not raise: " +
            sa[s].value("error", std::string()), sa[s], json());
      }
      if (sa[s].value("raised", false) || sr[s].value("raised", false)) return;
      if (random_values(static_cast<int>(s))) continue;
      const json& oa = sa[s].at("outputs");
      const json& orf = sr[s].at("outputs");
      for (size_t i = 0; i < oa.size() && i < orf.size(); ++i) {
        if (oa[i].is_null() || orf[i].is_null()) continue;
        const std::string v = values_diff(oa[i].at("values"), orf[i].at("values"), tolerance_of(oa[i]));
        if (!v.empty()) {
          FieldDiff d{static_cast<int>(s), label_of(program_, static_cast<int>(s)), "reference",
                      "output " + std::to_string(i) + " against the single-device run: " + v, ""};
          out_->diffs.push_back(std::move(d));
        }
      }
    }
  }

  void run() {
    const json& ours = ours_;
    const json& theirs = theirs_;
    if (ours.contains("internal_error")) {
      add(-1, "internal", ours.at("internal_error").get<std::string>(), ours, theirs);
      if (ours.at("steps").empty()) return;
    }
    against_reference();
    const bool ia = ours.value("inputs_raised", false), ib = theirs.value("inputs_raised", false);
    if (ia != ib) {
      add(-1, "raised", ia ? "ours raised making inputs: " + ours.value("error", std::string())
                           : "pytorch raised making inputs: " + theirs.value("error", std::string()),
          ours, theirs);
      return;
    }
    const json& sa = ours.at("steps");
    const json& sb = theirs.at("steps");
    const size_t n = std::min(sa.size(), sb.size());
    for (size_t i = 0; i < n; ++i) step(static_cast<int>(i), sa[i], sb[i]);
    // A raise ends a program; both raising at the same step keeps lengths equal.
    if (sa.size() != sb.size() && n > 0 && !sa[n - 1].value("raised", false) && !sb[n - 1].value("raised", false)) {
      add(static_cast<int>(n), "steps", "ours ran " + std::to_string(sa.size()) + " steps, pytorch " +
          std::to_string(sb.size()), ours, theirs);
    }
  }

 private:
  const Program& program_;
  const json& ours_;
  const json& theirs_;
  const json& reference_;
  ProgramComparison* out_;
};

}  // namespace

bool ProgramComparison::agrees() const {
  return std::all_of(diffs.begin(), diffs.end(), [](const FieldDiff& d) { return !d.deviation.empty(); });
}

ProgramComparison compare_records(const Program& program, const json& ours, const json& theirs,
                                  const json& reference) {
  ProgramComparison out;
  out.id = program.id;
  Comparer(program, ours, theirs, reference, &out).run();
  return out;
}

std::vector<std::string> unexplained_keys(const ProgramComparison& c) {
  std::vector<std::string> out;
  for (const FieldDiff& d : c.diffs) {
    if (d.deviation.empty()) out.push_back(key_of(c.id, d));
  }
  return out;
}

std::string program_verdict(const ProgramComparison& comparison) {
  if (comparison.identical()) return "identical";
  if (!comparison.agrees()) return "open";
  for (const FieldDiff& d : comparison.diffs) {
    if (d.deviation == "pytorch-wrong-value" || d.deviation == "pytorch-refuses") return "pytorch-wrong";
  }
  return "row";
}

std::set<std::string> changed_steps(const Program& program, const json& newer, const json& older) {
  std::set<std::string> out;
  for (const FieldDiff& d : compare_records(program, newer, older, json()).diffs) out.insert(step_key(program.id, d));
  // The newer version raised at a step the older ran past: every later step
  // is one the newer never ran, so changed as well (d18_0004: 2.15 refuses
  // amin.out into a sharded out, which 2.11 ran, leaving out Partial).
  const size_t ran = newer.contains("steps") ? newer.at("steps").size() : 0;
  const size_t older_ran = older.contains("steps") ? older.at("steps").size() : 0;
  for (size_t k = ran; k < older_ran && k < program.steps.size(); ++k) {
    FieldDiff later{static_cast<int>(k), label_of(program, static_cast<int>(k)), "", "", ""};
    out.insert(step_key(program.id, later));
  }
  return out;
}

void mark_followed(ProgramComparison& comparison, const std::set<std::string>& changed,
                   const std::string& newer_version) {
  for (FieldDiff& d : comparison.diffs) {
    // Values and failures of ours are never excused (Note [Internal failures] in runner.cc).
    if (d.field == "values" || d.field == "reference" || d.field == "internal") continue;
    if (d.deviation.empty() && changed.count(step_key(comparison.id, d))) {
      d.deviation = "follows-pytorch-" + newer_version;
    }
  }
}

std::string comparison_report(const std::vector<ProgramComparison>& comparisons, size_t max_listed) {
  size_t identical = 0, explained = 0, differing = 0;
  std::map<std::string, size_t> by_field, by_op, by_deviation;
  std::vector<const FieldDiff*> unexplained;
  std::vector<std::string> unexplained_ids;
  for (const ProgramComparison& c : comparisons) {
    if (c.identical()) {
      ++identical;
    } else if (c.agrees()) {
      ++explained;
    } else {
      ++differing;
    }
    for (const FieldDiff& d : c.diffs) {
      if (!d.deviation.empty()) {
        ++by_deviation[d.deviation];
        continue;
      }
      ++by_field[d.field];
      ++by_op[d.step_label + " " + d.field];
      unexplained.push_back(&d);
      unexplained_ids.push_back(c.id);
    }
  }
  std::ostringstream out;
  out << comparisons.size() << " programs: " << identical << " identical, " << explained
      << " differing only by listed deviations, " << differing << " with unexplained differences\n";
  if (!by_deviation.empty()) {
    out << "deviation rows used:\n";
    for (const auto& [k, v] : by_deviation) out << "  " << k << ": " << v << "\n";
  }
  if (!by_field.empty()) {
    out << "unexplained by field:\n";
    for (const auto& [k, v] : by_field) out << "  " << k << ": " << v << "\n";
    std::vector<std::pair<size_t, std::string>> ops;
    for (const auto& [k, v] : by_op) ops.emplace_back(v, k);
    std::sort(ops.rbegin(), ops.rend());
    out << "unexplained by op and field:\n";
    for (const auto& [v, k] : ops) out << "  " << k << ": " << v << "\n";
    out << "first unexplained differences:\n";
    for (size_t i = 0; i < unexplained.size() && i < max_listed; ++i) {
      const FieldDiff& d = *unexplained[i];
      out << "  " << unexplained_ids[i] << " step " << d.step << " " << d.step_label << " " << d.field << ": "
          << d.detail << "\n";
    }
  }
  return out.str();
}

}  // namespace dtensor::diff
