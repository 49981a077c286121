// Comm reports for CI: run a registered program on the fake world or in solo
// mode, count its collectives per module and phase, and write markdown and a
// golden-comparable JSON (counts, bytes per collective and mesh dim, time
// estimates from layout/comm_cost.h).
//   register_report_program("mlp", "...", &run_mlp);          // examples/report: the example programs
//   CommReport r = run_comm_report({/*program=*/"mlp"});      // fake world of 4
//   std::cout << report_markdown(r);
//   compare_report_json(trace::read_text_file("golden.json"), report_json(r)).matches;
#pragma once

#include <c10/core/DeviceType.h>
#include <torch/nn/module.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "backends/world.h"
#include "layout/comm_cost.h"
#include "debug/comm_debug_mode.h"
#include "trace/trace_model.h"

namespace dtensor::debug {

/// What to run and how.
struct ReportOptions {
  std::string program = "mlp";
  /// kFake: every rank runs (real data, threads); kSolo: one rank of a world
  /// of any size, collectives shape-only (see backends/solo/solo_world.h).
  BackendKind backend = BackendKind::kFake;
  int64_t world_size = 4;
  /// Solo mode: the rank simulated.
  int64_t rank = 0;
  /// Solo mode: the world's device is meta (no memory); programs should use
  /// ReportContext::device_type() for their mesh and tensors.
  bool meta = false;
  /// Program parameters ("hidden" -> "64"), read with ReportContext::int_arg.
  std::map<std::string, std::string> args;
  CommCostModel cost_model;
};

/// What a program gets besides its World: options, and the switch that
/// starts tracing (set-up collectives, e.g. distribute_tensor's scatter,
/// happen before it and are not reported).
class ReportContext {
 public:
  ReportContext(const ReportOptions& options, CommDebugMode& mode);

  const ReportOptions& options() const { return options_; }
  /// The device type for meshes and tensors: kMeta in solo mode with meta,
  /// else the world's (kCPU here).
  c10::DeviceType device_type() const;
  /// options().args[name] as an integer, or `default_value` when absent.
  /// Throws naming the argument when it is not an integer.
  int64_t int_arg(const std::string& name, int64_t default_value) const;

  /// Starts the traced part (call it once, on every rank): what runs while
  /// the guard lives is the report. `root` names modules as in
  /// CommDebugMode::enter. Example: `auto guard = ctx.trace(*model);`.
  [[nodiscard]] CommDebugMode::Guard trace(torch::nn::Module& root, std::string root_name = "");
  [[nodiscard]] CommDebugMode::Guard trace();
  bool traced() const { return traced_; }

 private:
  const ReportOptions& options_;
  CommDebugMode& mode_;
  bool traced_ = false;
};

/// A program: SPMD code run by every rank (fake world) or by the simulated
/// rank (solo). It builds its model, calls ctx.trace(...), and runs steps.
using ReportProgram = std::function<void(World& world, ReportContext& ctx)>;

struct ReportProgramInfo {
  std::string name;
  std::string description;
  ReportProgram program;
};

/// Registers (or replaces) program `name`. Thread-safe. Example:
///   register_report_program("my_tp", "2-layer TP", [](World&, ReportContext& ctx) { ... });
void register_report_program(const std::string& name, const std::string& description, ReportProgram program);
/// Registered programs, sorted by name. The example programs ("mlp") are
/// registered by examples::register_report_programs (examples/report/).
std::vector<ReportProgramInfo> report_programs();

/// A finished run: its options and trace (fake world: merged over ranks;
/// solo: the simulated rank's).
struct CommReport {
  ReportOptions options;
  trace::CommTrace trace;

  /// Counts of the reference rank (fake world: lowest rank; solo: the rank).
  trace::KindCounts get_comm_counts() const;
  trace::ModuleCounts get_comm_module_counts() const;
};

/// Runs options.program. Throws c10::Error for an unknown program (listing
/// the registered ones), a backend other than fake/solo, a program that never
/// called ctx.trace(), or what the program throws (fake world: "[rank N] ...").
CommReport run_comm_report(const ReportOptions& options);

/// The golden-comparable JSON (schema "dtensor_report_version" 1, see
/// trace/comm_trace_schema.md): deterministic, counts and bytes of the
/// reference rank, time estimates.
std::string report_json(const CommReport& report);
/// A human-readable markdown report (tables per module and per collective
/// kind and mesh dim).
std::string report_markdown(const CommReport& report);

/// Result of comparing a report with a golden file.
struct GoldenComparison {
  bool matches = true;
  /// One line per difference, e.g.
  /// `module_counts["MLPModule.net2"].forward.all_reduce: expected 1, got 2`.
  std::string diff;
};

/// Compares what CI guards (program, backend, world_size, counts,
/// module_counts, bytes); time estimates and other keys are ignored. Throws
/// c10::Error when either text is not a report JSON.
GoldenComparison compare_report_json(const std::string& expected_json, const std::string& actual_json);

}  // namespace dtensor::debug
