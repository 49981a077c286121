// The comm_report command line (see comm_report_cli.h).
#include "debug/report/comm_report_cli.h"

#include <c10/util/Exception.h>

#include <cstdlib>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "debug/chrome_trace.h"
#include "debug/report/comm_report.h"
#include "debug/report/upgrade_report.h"
#include "layout/flags.h"
#include "trace/trace_json.h"

namespace dtensor::debug {
namespace {

constexpr int kMismatch = 1;
constexpr int kUsage = 2;

const char* kUsageText = R"(usage: comm_report --program NAME [options]

Runs a registered program and writes its comm report (markdown to stdout
unless --markdown is given).

  --program NAME          program to run (--list shows them)
  --world-size N          world size (default 4)
  --solo                  solo mode: one rank of the world, no data exchange
  --rank R                solo mode: the rank simulated (default 0)
  --meta                  solo mode: meta tensors
  --arg KEY=VALUE         program argument (repeatable), e.g. --arg hidden=64
  --latency-us X          cost model latency (default 5)
  --bandwidth-gbps Y      cost model bandwidth in GB/s (default 50)
  --step-latency-us Z     cost model latency per ring step (default 0.5)
  --markdown FILE         write the markdown report to FILE
  --json FILE             write the report JSON (the golden format) to FILE
  --trace-json FILE       write the full comm trace JSON (comm_trace_schema.md)
  --noise-level L         noise level of --trace-json (default 3)
  --chrome-trace FILE     write a Chrome trace / Perfetto JSON
  --expect GOLDEN         compare with GOLDEN; exit 1 with a diff when counts or bytes differ
  --update                with --expect: rewrite GOLDEN with this run instead
  --list                  list the registered programs
  --diff BEFORE AFTER     compare two report JSON files (--json of two runs) without running
                          anything: what changed and why (origins), then counts and bytes.
                          Either may be a comm trace JSON instead (--trace-json, or a PyTorch
                          program's from tools/pytorch_trace): its counts, module counts and
                          bytes are compared (origins are not: PyTorch names causes otherwise)
                          Given two PyTorch versions' recordings of the same programs
                          (tests/diff/testdata/pytorch-<version>_NN.json): the upgrade report,
                          the collectives, placements and refusals each step changes
  --programs FILE         with --diff of recordings: the programs (ops and inputs per step)
exit status: 0 ok, 1 golden mismatch, 2 usage or run error
)";

struct Args {
  ReportOptions options;
  std::string markdown, json, trace_json, chrome_trace, expect;
  std::string diff_before, diff_after, programs;
  int noise_level = 3;
  bool update = false;
  bool list = false;
};

bool parse(int argc, char** argv, Args& args, std::string& error) {
  ReportOptions& o = args.options;
  Flags flags;
  flags.value("--program", &o.program)
      .value("--world-size", &o.world_size)
      .value("--rank", &o.rank)
      .custom("--solo", 0, [&](const std::vector<std::string>&) { o.backend = BackendKind::kSolo; })
      .toggle("--meta", &o.meta)
      .custom("--arg", 1,
              [&](const std::vector<std::string>& v) {
                const size_t eq = v[0].find('=');
                if (eq == std::string::npos || eq == 0) {
                  throw std::invalid_argument("expects KEY=VALUE, got '" + v[0] + "'");
                }
                o.args[v[0].substr(0, eq)] = v[0].substr(eq + 1);
              })
      .value("--latency-us", &o.cost_model.latency_us)
      .value("--bandwidth-gbps", &o.cost_model.bandwidth_gbytes_per_s)
      .value("--step-latency-us", &o.cost_model.step_latency_us)
      .value("--markdown", &args.markdown)
      .value("--json", &args.json)
      .value("--trace-json", &args.trace_json)
      .value("--noise-level", &args.noise_level)
      .value("--chrome-trace", &args.chrome_trace)
      .value("--expect", &args.expect)
      .toggle("--update", &args.update)
      .toggle("--list", &args.list)
      .custom("--diff", 2, [&](const std::vector<std::string>& v) {
        args.diff_before = v[0];
        args.diff_after = v[1];
      })
      .value("--programs", &args.programs);
  if (!flags.parse(argc, argv, error)) return false;
  if (args.update && args.expect.empty()) {
    error = "--update needs --expect GOLDEN (the file to rewrite)";
    return false;
  }
  return true;
}

// The name of a recording: its producer ("pytorch 2.15.0+cu132"), else its path.
std::string producer_of(const nlohmann::json& doc, const std::string& path) {
  return doc.value("producer", path);
}

// A comm trace JSON (ours or a PyTorch program's, tools/pytorch_trace) as a
// report JSON to compare: program "(trace)" on both sides, and no origins
// (PyTorch's name their causes otherwise, see dtensor_trace.py).
bool is_comm_trace(const nlohmann::json& doc) {
  return doc.is_object() && doc.contains("fqn") && !doc.contains("dtensor_report_version");
}

std::string report_of_trace(const std::string& text) {
  CommReport report;
  report.options.program = "(trace)";
  report.trace = trace::comm_trace_from_json(text);
  report.options.world_size = report.trace.world_size;
  nlohmann::json json = nlohmann::json::parse(report_json(report));
  json.erase("origins");
  return json.dump(2);
}

// --diff: two runs' report JSONs, what changed and why; or two PyTorch
// versions' recordings of the same programs, what the upgrade changes.
int diff_files(const Args& args) {
  const std::string before_text = trace::read_text_file(args.diff_before);
  const std::string after_text = trace::read_text_file(args.diff_after);
  const nlohmann::json before = nlohmann::json::parse(before_text, nullptr, /*allow_exceptions=*/false);
  if (is_reference_records(before)) {
    const nlohmann::json after = nlohmann::json::parse(after_text);
    nlohmann::json programs;
    if (!args.programs.empty()) programs = nlohmann::json::parse(trace::read_text_file(args.programs));
    const UpgradeReport report =
        compare_reference_records(before, after, args.programs.empty() ? nullptr : &programs);
    std::cout << upgrade_report_text(report, producer_of(before, args.diff_before),
                                     producer_of(after, args.diff_after));
    return report.changes.empty() ? 0 : kMismatch;
  }
  if (!args.programs.empty()) throw std::invalid_argument("--programs goes with --diff of two recordings");
  const nlohmann::json after = nlohmann::json::parse(after_text, nullptr, /*allow_exceptions=*/false);
  const GoldenComparison cmp =
      compare_report_json(is_comm_trace(before) ? report_of_trace(before_text) : before_text,
                          is_comm_trace(after) ? report_of_trace(after_text) : after_text);
  if (cmp.matches) {
    std::cout << "comm_report: " << args.diff_before << " and " << args.diff_after << " agree\n";
    return 0;
  }
  std::cout << "comm_report: " << args.diff_after << " differs from " << args.diff_before << ":\n" << cmp.diff;
  return kMismatch;
}

int run(const Args& args) {
  if (!args.diff_before.empty()) return diff_files(args);
  CommReport report = run_comm_report(args.options);
  const std::string json = report_json(report);
  const std::string markdown = report_markdown(report);
  if (!args.markdown.empty()) {
    trace::write_text_file(args.markdown, markdown);
  } else {
    std::cout << markdown;
  }
  if (!args.json.empty()) trace::write_text_file(args.json, json);
  if (!args.trace_json.empty()) {
    trace::write_text_file(args.trace_json, comm_trace_to_json(report.trace, args.noise_level));
  }
  if (!args.chrome_trace.empty()) {
    ChromeTraceOptions chrome;
    chrome.cost_model = args.options.cost_model;
    write_chrome_trace(args.chrome_trace, report.trace, chrome);
  }
  if (args.expect.empty()) return 0;
  if (args.update) {
    trace::write_text_file(args.expect, json);
    std::cerr << "comm_report: updated " << args.expect << "\n";
    return 0;
  }
  const GoldenComparison cmp = compare_report_json(trace::read_text_file(args.expect), json);
  if (cmp.matches) {
    std::cerr << "comm_report: matches " << args.expect << "\n";
    return 0;
  }
  std::cerr << "comm_report: the comm report of '" << args.options.program << "' differs from " << args.expect
            << ":\n"
            << cmp.diff << "rerun with --update to accept the new counts\n";
  return kMismatch;
}

}  // namespace

int comm_report_cli(int argc, char** argv) {
  Args args;
  std::string error;
  if (!parse(argc, argv, args, error)) {
    if (!error.empty()) std::cerr << "comm_report: " << error << "\n\n";
    std::cerr << kUsageText;
    return error.empty() ? 0 : kUsage;
  }
  if (args.list) {
    for (const auto& p : report_programs()) std::cout << p.name << "\t" << p.description << "\n";
    return 0;
  }
  try {
    return run(args);
  } catch (const c10::Error& e) {
    std::cerr << "comm_report: " << e.what_without_backtrace() << "\n";
  } catch (const std::exception& e) {
    std::cerr << "comm_report: " << e.what() << "\n";
  }
  return kUsage;
}

}  // namespace dtensor::debug
