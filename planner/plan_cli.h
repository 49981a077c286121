// The dtensor_plan command line as a function, so that a binary can supply
// the step programs it knows (examples/plan/dtensor_plan_main.cc adds the
// example Transformer to the planner's own Llama-style model):
//   int main(int argc, char** argv) { return plan_cli(argc, argv, {{ModelKind::kExampleTransformer, prog}}); }
#pragma once

#include <map>

#include "planner/plan_config.h"
#include "planner/step_trace.h"

namespace dtensor::planner {

/// A step program and the solo device it traces on (meta unless it needs real kernels).
struct ProgramEntry {
  StepProgram program;
  c10::DeviceType solo_device = c10::kMeta;
};

/// Parses the flags (--help lists them), estimates one plan (--mesh) or
/// sweeps a world size (--sweep N), prints the report and with --json FILE
/// writes its JSON. `programs` adds or replaces programs by model kind (the
/// Llama-style one is built in). Returns 0 when the plan fits (a sweep: when
/// one fits), 1 when it does not, 2 on a usage or run error.
int plan_cli(int argc, char** argv, const std::map<ModelKind, ProgramEntry>& programs = {});

}  // namespace dtensor::planner
