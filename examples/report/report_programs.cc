// The example report programs. See report_programs.h.
#include "examples/report/report_programs.h"

#include <ATen/ops/rand.h>
#include <c10/util/Exception.h>

#include "core/device_mesh.h"
#include "core/nn/module_call.h"
#include "core/parallel/parallelize.h"
#include "examples/models/mlp.h"

namespace dtensor::examples {

void run_mlp_report_program(World& world, debug::ReportContext& ctx) {
  const int64_t hidden = ctx.int_arg("hidden", 16);
  const int64_t batch = ctx.int_arg("batch", 8);
  const int64_t steps = ctx.int_arg("steps", 1);
  TORCH_CHECK(ctx.device_type() != c10::kMeta,
              "report program 'mlp': LibTorch 1.13 has no meta kernel for relu; "
              "run it on CPU tensors (solo mode without meta)");
  auto mesh = DeviceMesh::init(ctx.device_type(), {world.size()});
  MLP model(MLPOptions().hidden(hidden));
  model->to(mesh.device());
  parallelize_module(*model, mesh, mlp_tp_plan(/*sequence_parallel=*/false));
  const at::Tensor x = at::rand({batch, 10}, at::TensorOptions().device(mesh.device()));
  auto guard = ctx.trace(*model, "MLPModule");
  for (int64_t step = 0; step < steps; ++step) {
    at::Tensor y = nn::call(model, x);
    y.sum().backward();
  }
}

void register_report_programs() {
  debug::register_report_program("mlp",
                                 "Linear(10,H)-ReLU-Linear(H,10), net1 colwise [S(0)], net2 rowwise [S(1)], "
                                 "one forward + backward (args: hidden=H (16), batch (8), steps (1))",
                                 &run_mlp_report_program);
}

}  // namespace dtensor::examples
