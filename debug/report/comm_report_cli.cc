// The comm_report command line (see comm_report_cli.h).
#include "debug/report/comm_report_cli.h"

#include <c10/util/Exception.h>

#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "debug/chrome_trace.h"
#include "debug/report/comm_report.h"
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
                          anything: what changed and why (origins), then counts and bytes
exit status: 0 ok, 1 golden mismatch, 2 usage or run error
)";

struct Args {
  ReportOptions options;
  std::string markdown, json, trace_json, chrome_trace, expect;
  std::string diff_before, diff_after;
  int noise_level = 3;
  bool update = false;
  bool list = false;
};

bool parse(int argc, char** argv, Args& args, std::string& error) {
  std::vector<std::string> a(argv + 1, argv + argc);
  for (size_t i = 0; i < a.size(); ++i) {
    const std::string& flag = a[i];
    auto value = [&](std::string& out) {
      if (i + 1 >= a.size()) {
        error = flag + " needs a value";
        return false;
      }
      out = a[++i];
      return true;
    };
    std::string v;
    try {
      if (flag == "--program") {
        if (!value(args.options.program)) return false;
      } else if (flag == "--world-size") {
        if (!value(v)) return false;
        args.options.world_size = std::stoll(v);
      } else if (flag == "--rank") {
        if (!value(v)) return false;
        args.options.rank = std::stoll(v);
      } else if (flag == "--solo") {
        args.options.backend = BackendKind::kSolo;
      } else if (flag == "--meta") {
        args.options.meta = true;
      } else if (flag == "--arg") {
        if (!value(v)) return false;
        const size_t eq = v.find('=');
        if (eq == std::string::npos || eq == 0) {
          error = "--arg expects KEY=VALUE, got '" + v + "'";
          return false;
        }
        args.options.args[v.substr(0, eq)] = v.substr(eq + 1);
      } else if (flag == "--latency-us") {
        if (!value(v)) return false;
        args.options.cost_model.latency_us = std::stod(v);
      } else if (flag == "--bandwidth-gbps") {
        if (!value(v)) return false;
        args.options.cost_model.bandwidth_gbytes_per_s = std::stod(v);
      } else if (flag == "--step-latency-us") {
        if (!value(v)) return false;
        args.options.cost_model.step_latency_us = std::stod(v);
      } else if (flag == "--markdown") {
        if (!value(args.markdown)) return false;
      } else if (flag == "--json") {
        if (!value(args.json)) return false;
      } else if (flag == "--trace-json") {
        if (!value(args.trace_json)) return false;
      } else if (flag == "--noise-level") {
        if (!value(v)) return false;
        args.noise_level = std::stoi(v);
      } else if (flag == "--chrome-trace") {
        if (!value(args.chrome_trace)) return false;
      } else if (flag == "--expect") {
        if (!value(args.expect)) return false;
      } else if (flag == "--update") {
        args.update = true;
      } else if (flag == "--list") {
        args.list = true;
      } else if (flag == "--diff") {
        if (!value(args.diff_before) || !value(args.diff_after)) return false;
      } else if (flag == "--help" || flag == "-h") {
        error = "";
        return false;
      } else {
        error = "unknown flag " + flag;
        return false;
      }
    } catch (const std::exception&) {
      error = flag + ": '" + v + "' is not a number";
      return false;
    }
  }
  if (args.update && args.expect.empty()) {
    error = "--update needs --expect GOLDEN (the file to rewrite)";
    return false;
  }
  return true;
}

// --diff: two runs' report JSONs, what changed and why.
int diff_files(const Args& args) {
  const GoldenComparison cmp =
      compare_report_json(trace::read_text_file(args.diff_before), trace::read_text_file(args.diff_after));
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
