// The differential-test command line: runs programs on dtensor's fake world,
// writes our records, and compares them with PyTorch's.
//   bazel run //tests/diff:diff_runner -- --programs P.json --pytorch R.json --report out.txt
//   diff_runner --programs P.json --records ours.json          # our records only
//   diff_runner --programs P.json --pytorch R.json --only g18_00012 --verbose
//   diff_runner --programs P.json --pytorch R.json --list-row pytorch-wrong-value  # explained by that row
//   diff_runner ... --write-known known_divergences-2.15.txt   # appends the unexplained differences
//   diff_runner --programs P.json --pytorch .json --newer .json --newer-version 2.15
//       # against an older PyTorch: what the newer one changed is expected (mark_followed)
//   diff_runner ... --by-op APPEND.txt   # appends "op verdict id" per program (program_verdict)
#include <chrono>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>

#include "tests/diff/compare.h"
#include "tests/diff/runner.h"

namespace {

using nlohmann::json;

json read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  return json::parse(in);
}

int usage() {
  std::cerr << "usage: diff_runner --programs P.json [--pytorch R.json] [--records OUT.json] "
               "[--report OUT.txt] [--list N] [--list-row ROW] [--write-known APPEND.txt] "
               "[--newer R.json --newer-version V] [--by-op APPEND.txt] "
               "[--only ID] [--verbose]\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::string> opt;
  bool verbose = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--verbose") {
      verbose = true;
    } else if (a.rfind("--", 0) == 0 && i + 1 < argc) {
      opt[a.substr(2)] = argv[++i];
    } else {
      return usage();
    }
  }
  if (!opt.count("programs")) return usage();
  try {
    using namespace dtensor::diff;
    std::vector<Program> programs = parse_programs(read_json(opt["programs"]));
    auto records_of = [](const std::string& path) {
      std::map<std::string, json> out;
      const json doc = read_json(path);  // named: a temporary would dangle in the loop
      for (const json& r : doc.at("records")) out[r.at("id").get<std::string>()] = r;
      return out;
    };
    std::map<std::string, json> theirs, newer;
    if (opt.count("pytorch")) theirs = records_of(opt["pytorch"]);
    if (opt.count("newer")) {
      if (!opt.count("newer-version")) return usage();
      newer = records_of(opt["newer"]);
    }
    json records = json::array();
    std::vector<ProgramComparison> comparisons;
    for (const Program& p : programs) {
      if (opt.count("only") && p.id != opt["only"]) continue;
      json ours;
      const auto start = std::chrono::steady_clock::now();
      try {
        ours = run_program(p);
      } catch (const std::exception& e) {
        throw std::runtime_error(p.id + ": " + e.what());
      }
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      if (ms > 1000) std::cerr << "diff_runner: " << p.id << " took " << ms << " ms\n";
      if (verbose) std::cout << "ours    " << ours.dump() << "\n";
      if (theirs.count(p.id)) {
        if (verbose) std::cout << "pytorch " << theirs[p.id].dump() << "\n";
        json reference = run_reference(p);
        if (verbose) std::cout << "single  " << reference.dump() << "\n";
        try {
          comparisons.push_back(compare_records(p, ours, theirs[p.id], reference));
          if (newer.count(p.id)) {
            mark_followed(comparisons.back(), changed_steps(p, newer[p.id], theirs[p.id]), opt["newer-version"]);
          }
        } catch (const std::exception& e) {
          throw std::runtime_error(p.id + " (comparing): " + e.what());
        }
      }
      records.push_back(std::move(ours));
    }
    if (opt.count("records")) {
      std::ofstream(opt["records"]) << json{{"format", kFormat}, {"producer", "dtensor"}, {"records", records}}.dump();
    }
    if (opt.count("write-known")) {
      std::ofstream known(opt["write-known"], std::ios::app);
      for (const auto& c : comparisons) {
        for (const std::string& k : unexplained_keys(c)) known << k << "\n";
      }
    }
    if (opt.count("by-op")) {
      // The op each program validates: its first op step's.
      std::ofstream by_op(opt["by-op"], std::ios::app);
      std::map<std::string, const Program*> by_id;
      for (const Program& p : programs) by_id[p.id] = &p;
      for (const auto& c : comparisons) {
        for (const Step& s : by_id.at(c.id)->steps) {
          if (s.kind != "op") continue;
          by_op << s.json.at("op").get<std::string>() << " " << program_verdict(c) << " " << c.id << "\n";
          break;
        }
      }
    }
    if (opt.count("list-row")) {
      // Every difference a deviation row explains, e.g. --list-row pytorch-wrong-value
      // (the upstream bugs with their reproducers).
      for (const auto& c : comparisons) {
        for (const FieldDiff& d : c.diffs) {
          if (d.deviation == opt["list-row"]) {
            std::cout << c.id << " step " << d.step << " " << d.step_label << " " << d.field << ": " << d.detail
                      << "\n";
          }
        }
      }
      return 0;
    }
    if (!theirs.empty()) {
      std::string report = comparison_report(comparisons, opt.count("list") ? std::stoul(opt["list"]) : 40);
      if (opt.count("report")) std::ofstream(opt["report"]) << report;
      std::cout << report;
      for (const auto& c : comparisons) {
        if (!c.agrees()) return 1;
      }
    }
  } catch (const std::exception& e) {
    std::cerr << "diff_runner: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
