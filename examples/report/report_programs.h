// The example programs of the comm report CLI (debug/report/comm_report_cli.h):
// each builds an example model, parallelizes it with parallelize_module and
// runs training steps under ReportContext::trace.
//   dtensor::examples::register_report_programs();    // "mlp"
//   dtensor::debug::CommReport r = dtensor::debug::run_comm_report({/*program=*/"mlp"});
#pragma once

#include "backends/world.h"
#include "debug/report/comm_report.h"

namespace dtensor::examples {

/// The "mlp" program: examples::MLP (Linear(10, H) - ReLU - Linear(H, 10))
/// on a 1-D mesh over the world, parallelized with mlp_tp_plan (net1
/// colwise, net2 rowwise: one all_reduce per forward, in net2), then `steps`
/// forward + sum().backward() on a plain [batch, 10] input. The root module
/// is traced as "MLPModule" (PyTorch's name for this test model). Args:
/// hidden (16), batch (8), steps (1). Needs real kernels for relu: not in
/// solo mode with meta.
void run_mlp_report_program(World& world, debug::ReportContext& ctx);

/// Registers the example programs with debug::register_report_program
/// (idempotent): "mlp".
void register_report_programs();

}  // namespace dtensor::examples
