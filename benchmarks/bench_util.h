// Shared bits of the timed benchmark programs: command-line flags common to
// all (--json PATH, --smoke), a JSON results document, and timers.
//   bench::Args args = bench::parse_args(argc, argv, "usage: ...");
//   bench::Results results("planner_quality");
//   results.rows().push_back({{"mesh", "(2, 2)"}, {"ratio", 1.5}});
//   results.write(args.json_path);   // no-op when --json was not given
// Benchmarks print tables and never assert on time (they are not tests).
#pragma once

#include <nlohmann/json.hpp>
#include <sys/resource.h>
#include <time.h>

#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>  // client requests: no-ops unless run under callgrind
#else                             // valgrind's headers are a dev tool, not a build dependency
#define RUNNING_ON_VALGRIND 0
#define CALLGRIND_ZERO_STATS
#define CALLGRIND_START_INSTRUMENTATION
#define CALLGRIND_STOP_INSTRUMENTATION
#define CALLGRIND_DUMP_STATS_AT(name) (void)(name)
#endif

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace dtensor::bench {

/// Flags every bench understands; the rest are left in `rest` for the bench.
struct Args {
  std::string json_path;  // --json PATH: write results there
  bool smoke = false;     // --smoke: tiny sizes, for a quick "does it run" test
  std::vector<std::string> rest;
};

inline Args parse_args(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--json") && i + 1 < argc) {
      args.json_path = argv[++i];
    } else if (!std::strcmp(argv[i], "--smoke")) {
      args.smoke = true;
    } else {
      args.rest.emplace_back(argv[i]);
    }
  }
  return args;
}

/// A results document: {"bench": name, "machine": {...}, "rows": [...], "summary": {...}}.
class Results {
 public:
  explicit Results(const std::string& bench) {
    doc_["bench"] = bench;
    doc_["machine"] = {{"hardware_threads", std::thread::hardware_concurrency()}};
    doc_["rows"] = nlohmann::json::array();
    doc_["summary"] = nlohmann::json::object();
  }
  nlohmann::json& rows() { return doc_["rows"]; }
  nlohmann::json& summary() { return doc_["summary"]; }
  nlohmann::json& doc() { return doc_; }
  /// Writes the document (pretty) to `path`; does nothing for an empty path.
  void write(const std::string& path) const {
    if (path.empty()) return;
    std::ofstream out(path);
    out << doc_.dump(2) << "\n";
    if (!out) std::fprintf(stderr, "could not write %s\n", path.c_str());
  }

 private:
  nlohmann::json doc_;
};

/// This thread's CPU time in microseconds (time spent descheduled on a busy
/// machine does not count).
inline double thread_cpu_us() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) * 1e-3;
}

/// Minimum over `reps` runs of this thread's CPU microseconds per call of
/// `fn` (`iters` calls per run). Under callgrind (valgrind --tool=callgrind
/// --instr-atstart=no) only these loops are instrumented, one profile per
/// run named "<dump_name> iters=<iters>" (tools/bench.sh --callgrind divides).
inline double cpu_us_per_call(const std::function<void()>& fn, int iters, int reps, const std::string& dump_name) {
  double best = 1e300;
  for (int r = 0; r < reps; ++r) {
    if (RUNNING_ON_VALGRIND) {
      CALLGRIND_ZERO_STATS;
      CALLGRIND_START_INSTRUMENTATION;
    }
    const double start = thread_cpu_us();
    for (int i = 0; i < iters; ++i) fn();
    best = std::min(best, (thread_cpu_us() - start) / iters);
    if (RUNNING_ON_VALGRIND) {
      CALLGRIND_STOP_INSTRUMENTATION;
      const std::string name = dump_name + " iters=" + std::to_string(iters);
      CALLGRIND_DUMP_STATS_AT(name.c_str());
    }
  }
  return best;
}

/// This process's CPU time (all threads) in seconds.
inline double process_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

inline double wall_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// Peak resident set size of this process, in MiB.
inline double peak_rss_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

}  // namespace dtensor::bench
