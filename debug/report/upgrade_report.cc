// See upgrade_report.h.
#include "debug/report/upgrade_report.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>

namespace dtensor::debug {
namespace {

using nlohmann::json;

const json& records_of(const json& doc, const char* which) {
  if (!is_reference_records(doc)) {
    throw std::invalid_argument(std::string("upgrade report: the ") + which +
                                " file is not a recording of reference runs (\"format\": \"dtensor-diff/1\" "
                                "with \"records\", as tests/diff/pytorch_runner.py writes)");
  }
  return doc.at("records");
}

std::map<std::string, const json*> by_id(const json& list) {
  std::map<std::string, const json*> out;
  for (const json& item : list) out[item.at("id").get<std::string>()] = &item;
  return out;
}

std::string placements_text(const json& placements) {
  if (!placements.is_array()) return "local";
  std::string out = "[";
  for (size_t i = 0; i < placements.size(); ++i) out += (i ? ", " : "") + placements[i].get<std::string>();
  return out + "]";
}

// "t0 [4] [P(max), R, R]" for a program input, "t5" for a tensor a step made.
std::string tensor_text(const json& program, int64_t t) {
  const json& inputs = program.at("inputs");
  std::string out = "t" + std::to_string(t);
  if (t < 0 || t >= static_cast<int64_t>(inputs.size())) return out;
  const json& in = inputs[static_cast<size_t>(t)];
  return out + " " + in.at("shape").dump() + " " + placements_text(in.at("placements"));
}

void collect_tensor_args(const json& value, std::vector<int64_t>& out) {
  if (value.is_object() && value.contains("t") && value.size() == 1) {
    out.push_back(value.at("t").get<int64_t>());
  } else if (value.is_array()) {
    for (const json& v : value) collect_tensor_args(v, out);
  }
}

std::string step_label(const json* program, int step) {
  if (!program) return "step";
  const json& steps = program->at("steps");
  if (step < 0 || step >= static_cast<int>(steps.size())) return "step";
  const json& s = steps[static_cast<size_t>(step)];
  const std::string kind = s.value("kind", "step");
  return kind == "op" ? s.value("op", "op") : kind;
}

std::string step_inputs(const json* program, int step) {
  if (!program) return "";
  const json& steps = program->at("steps");
  if (step < 0 || step >= static_cast<int>(steps.size())) return "";
  const json& s = steps[static_cast<size_t>(step)];
  std::vector<int64_t> tensors;
  if (s.contains("args")) collect_tensor_args(s.at("args"), tensors);
  if (s.contains("t")) tensors.push_back(s.at("t").get<int64_t>());
  std::string out;
  for (size_t i = 0; i < tensors.size(); ++i) out += (i ? ", " : "") + tensor_text(*program, tensors[i]);
  return out;
}

json output_placements(const json& step) {
  json out = json::array();
  for (const json& o : step.value("outputs", json::array())) out.push_back(o.value("placements", json()));
  return out;
}

std::string placements_list_text(const json& outputs) {
  std::string out;
  for (size_t i = 0; i < outputs.size(); ++i) out += (i ? ", " : "") + placements_text(outputs[i]);
  return out.empty() ? "none" : out;
}

std::string comms_text(const json& counts) { return counts.empty() ? "none" : counts.dump(); }

std::string raised_text(const json& step) {
  return step.value("raised", false) ? step.value("error", std::string("an error")) : "ran";
}

}  // namespace

bool is_reference_records(const json& doc) {
  return doc.is_object() && doc.value("format", "") == "dtensor-diff/1" && doc.contains("records") &&
         doc.at("records").is_array();
}

json normalized_collective_counts(const json& counts) {
  json out = json::object();
  if (!counts.is_object()) return out;
  for (const auto& [k, v] : counts.items()) {
    if (v.get<int64_t>() == 0) continue;
    const std::string name = k == "shard_dim_alltoall" ? "all_to_all_single" : k;
    const int64_t before = out.contains(name) ? out.at(name).get<int64_t>() : 0;
    out[name] = before + v.get<int64_t>();
  }
  return out;
}

UpgradeReport compare_reference_records(const json& before, const json& after, const json* programs) {
  const auto old_records = by_id(records_of(before, "older"));
  const auto new_records = by_id(records_of(after, "newer"));
  std::map<std::string, const json*> program_of;
  if (programs) {
    const json& list = programs->is_object() ? programs->at("programs") : *programs;
    program_of = by_id(list);
  }
  UpgradeReport report;
  for (const auto& [id, old_record] : old_records) {
    auto it = new_records.find(id);
    if (it == new_records.end()) continue;
    ++report.programs;
    const json* program = program_of.count(id) ? program_of.at(id) : nullptr;
    const json& a = old_record->at("steps");
    const json& b = it->second->at("steps");
    const size_t changes_before = report.changes.size();
    auto add = [&](int step, const std::string& field, std::string was, std::string now) {
      StepChange c{id, step, step_label(program, step), step_inputs(program, step), field, std::move(was),
                   std::move(now)};
      ++report.counts[c.label][field];
      report.changes.push_back(std::move(c));
    };
    if (a.size() != b.size()) {
      add(static_cast<int>(std::min(a.size(), b.size())), "steps run", std::to_string(a.size()),
          std::to_string(b.size()));
    }
    for (size_t k = 0; k < std::min(a.size(), b.size()); ++k) {
      const int step = static_cast<int>(k);
      const bool raised_a = a[k].value("raised", false), raised_b = b[k].value("raised", false);
      if (raised_a || raised_b) {
        if (raised_a != raised_b) add(step, "raised", raised_text(a[k]), raised_text(b[k]));
        continue;
      }
      const json comms_a = normalized_collective_counts(a[k].value("comms", json::object()));
      const json comms_b = normalized_collective_counts(b[k].value("comms", json::object()));
      if (comms_a != comms_b) add(step, "comms", comms_text(comms_a), comms_text(comms_b));
      const json placements_a = output_placements(a[k]), placements_b = output_placements(b[k]);
      if (placements_a != placements_b) {
        add(step, "placements", placements_list_text(placements_a), placements_list_text(placements_b));
      }
    }
    if (report.changes.size() > changes_before) ++report.programs_changed;
  }
  return report;
}

std::string upgrade_report_text(const UpgradeReport& report, const std::string& before_name,
                                const std::string& after_name, size_t max_listed) {
  std::ostringstream out;
  out << "# From " << before_name << " to " << after_name << "\n\n"
      << report.programs_changed << " of " << report.programs << " programs change: " << report.changes.size()
      << " fields of their steps.\n\n";
  if (report.changes.empty()) return out.str();
  // Ops by number of changed fields, most first.
  std::vector<std::pair<size_t, std::string>> order;
  for (const auto& [label, fields] : report.counts) {
    size_t total = 0;
    for (const auto& [field, n] : fields) total += n;
    order.emplace_back(total, label);
  }
  std::sort(order.begin(), order.end(), [](const auto& x, const auto& y) {
    return x.first != y.first ? x.first > y.first : x.second < y.second;
  });
  out << "| step | comms | placements | raised | steps run |\n| --- | ---: | ---: | ---: | ---: |\n";
  for (const auto& [total, label] : order) {
    const auto& fields = report.counts.at(label);
    auto n = [&](const char* f) { return fields.count(f) ? std::to_string(fields.at(f)) : std::string("-"); };
    out << "| " << label << " | " << n("comms") << " | " << n("placements") << " | " << n("raised") << " | "
        << n("steps run") << " |\n";
  }
  out << "\n";
  const size_t listed = std::min(max_listed, report.changes.size());
  for (size_t i = 0; i < listed; ++i) {
    const StepChange& c = report.changes[i];
    out << "- " << c.id << " step " << c.step << " " << c.label;
    if (!c.inputs.empty()) out << "(" << c.inputs << ")";
    out << " " << c.field << ": " << c.before << " -> " << c.after << "\n";
  }
  if (listed < report.changes.size()) out << "- ... " << (report.changes.size() - listed) << " more\n";
  return out.str();
}

}  // namespace dtensor::debug
