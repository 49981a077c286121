// The built-in MLP report program.
#include "debug/report/mlp_program.h"

#include <ATen/ops/rand.h>
#include <c10/util/Exception.h>

#include "core/dtensor.h"
#include "core/nn/module_call.h"
#include "debug/report/comm_report.h"

namespace dtensor::debug {
namespace {

// Reaches Module's protected parameter dict (legal: named through a subclass).
struct ParameterAccess : torch::nn::Module {
  static torch::OrderedDict<std::string, at::Tensor>& of(torch::nn::Module& m) {
    return m.*(&ParameterAccess::parameters_);
  }
};

at::Tensor distributed_parameter(const at::Tensor& value, const DeviceMesh& mesh,
                                 const Placements& placements) {
  at::Tensor local = value.detach().to(mesh.device());
  return distribute_tensor(local, mesh, placements).detach().requires_grad_(true);
}

}  // namespace

MLPModuleImpl::MLPModuleImpl(int64_t hidden) {
  net1 = register_module("net1", torch::nn::Linear(10, hidden));
  relu = register_module("relu", torch::nn::ReLU());
  net2 = register_module("net2", torch::nn::Linear(hidden, 10));
}

at::Tensor MLPModuleImpl::forward(at::Tensor x) {
  at::Tensor h = nn::call(net1, x);
  h = nn::call(relu, h);
  return nn::call(net2, h);
}

void distribute_linear(torch::nn::LinearImpl& linear, const DeviceMesh& mesh, const Placements& weight,
                       const Placements& bias) {
  auto& params = ParameterAccess::of(linear);
  linear.weight = distributed_parameter(linear.weight, mesh, weight);
  params["weight"] = linear.weight;
  if (linear.bias.defined()) {
    linear.bias = distributed_parameter(linear.bias, mesh, bias);
    params["bias"] = linear.bias;
  }
}

void shard_mlp(MLPModuleImpl& model, const DeviceMesh& mesh) {
  TORCH_CHECK(mesh.ndim() == 1, "shard_mlp: expected a 1-D mesh, got ", mesh.to_string());
  distribute_linear(*model.net1, mesh, {Shard(0)}, {Shard(0)});
  distribute_linear(*model.net2, mesh, {Shard(1)}, {Replicate()});
  nn::clear_forward_hooks(*model.net2);
  nn::register_forward_hook(*model.net2, [](torch::nn::Module&, const nn::TensorList&, at::Tensor out) {
    DTensor d(out);
    return d.placements()[0].is_partial() ? at::Tensor(d.redistribute({Replicate()})) : out;
  });
}

void run_mlp_report_program(World& world, ReportContext& ctx) {
  const int64_t hidden = ctx.int_arg("hidden", 16);
  const int64_t batch = ctx.int_arg("batch", 8);
  const int64_t steps = ctx.int_arg("steps", 1);
  TORCH_CHECK(ctx.device_type() != c10::kMeta,
              "report program 'mlp': LibTorch 1.13 has no meta kernel for relu; "
              "run it on CPU tensors (solo mode without meta)");
  auto mesh = DeviceMesh::init(ctx.device_type(), {world.size()});
  MLPModule model(hidden);
  shard_mlp(*model, mesh);
  at::Tensor input = at::rand({batch, 10}, at::TensorOptions().device(mesh.device()));
  DTensor x = distribute_tensor(input, mesh, {Replicate()});
  auto guard = ctx.trace(*model);
  for (int64_t step = 0; step < steps; ++step) {
    at::Tensor y = nn::call(model, x);
    y.sum().backward();
  }
}

}  // namespace dtensor::debug
