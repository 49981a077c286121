#include <gtest/gtest.h>
#include <torch/torch.h>
#include <torch/csrc/autograd/graph_task.h>
#include "backends/fake/fake_world.h"
#include "backends/solo/solo_world.h"
#include "core/dtensor.h"
#include "core/dtensor_impl.h"
#include "core/nn/module_call.h"
#include "debug/comm_debug_mode.h"

namespace dtensor {
namespace {
struct ParameterAccess : torch::nn::Module {
  static torch::OrderedDict<std::string, at::Tensor>& of(torch::nn::Module& m) {
    return m.*(&ParameterAccess::parameters_);
  }
};
void shard_linear(torch::nn::Linear& lin, const DeviceMesh& mesh, Placements w, Placements b) {
  auto& params = ParameterAccess::of(*lin);
  lin->weight = distribute_tensor(lin->weight.detach().to(mesh.device()), mesh, w).requires_grad_(true);
  lin->bias = distribute_tensor(lin->bias.detach().to(mesh.device()), mesh, b).requires_grad_(true);
  params["weight"] = lin->weight;
  params["bias"] = lin->bias;
}
struct MLPModuleImpl : torch::nn::Module {
  MLPModuleImpl() {
    net1 = register_module("net1", torch::nn::Linear(10, 16));
    relu = register_module("relu", torch::nn::ReLU());
    net2 = register_module("net2", torch::nn::Linear(16, 10));
  }
  at::Tensor forward(at::Tensor x) {
    DTENSOR_MODULE_SCOPE(*this, x);
    auto h = nn::call(net1, x);
    h = nn::call(relu, h);
    return nn::call(net2, h);
  }
  torch::nn::Linear net1{nullptr}, net2{nullptr};
  torch::nn::ReLU relu{nullptr};
};
TORCH_MODULE(MLPModule);

struct Printer : CollectiveObserver {
  void on_collective(const CollectiveEvent& e) override {
    std::cout << "rank " << e.global_rank << " " << e.to_string() << " bw=" << (torch::autograd::get_current_graph_task_exec_info() != nullptr) << "\n";
  }
};
struct MP : nn::ModuleObserver {
  void on_forward_enter(torch::nn::Module& m, const nn::TensorList& ) override { std::cout << "enter " << m.name() << "\n"; }
  void on_forward_exit(torch::nn::Module& m, const nn::TensorList& , const nn::TensorList& outs) override {
    std::cout << "exit " << m.name() << " outs " << outs.size() << "\n";
    for (auto& o : outs) if (o.requires_grad()) { std::string n = m.name(); o.register_hook([n](at::Tensor g){ std::cout << "grad hook out " << n << " bw=" << (torch::autograd::get_current_graph_task_exec_info()!=nullptr) << " dt=" << is_dtensor(g) << "\n"; }); }
  }
};

void run_mlp(c10::DeviceType dev, int64_t n, bool verbose) {
    auto mesh = DeviceMesh::init(dev, {n});
    MLPModule model;
    shard_linear(model->net1, mesh, {Shard(0)}, {Shard(0)});
    shard_linear(model->net2, mesh, {Shard(1)}, {Replicate()});
    nn::register_forward_hook(*model->net2, [](torch::nn::Module&, const nn::TensorList&, at::Tensor out) {
      return DTensor(out).redistribute({Replicate()});
    });
    Printer p; MP mp;
    auto reg = mesh.world().observers().add(&p);
    nn::ScopedModuleObserver so(&mp);
    at::Tensor x = distribute_tensor(torch::rand({8, 10}, torch::TensorOptions().device(dev)), mesh, {Replicate()});
    std::cout << "---- forward\n";
    auto y = model->forward(x);
    std::cout << DTensor(y).placements()[0].to_string() << "\n";
    std::cout << "---- backward\n";
    y.sum().backward();
    std::cout << "---- done\n";
    (void)verbose;
}

TEST(Explore, Mlp) {
  std::cout << MLPModule()->name() << " | " << torch::nn::Linear(2,2)->name() << " | " << torch::nn::ReLU()->name() << "\n";
  run_fake_world(2, [](World& w) { if (w.rank() == 0) run_mlp(c10::kCPU, 2, true); else run_mlp(c10::kCPU, 2, false); });
}
TEST(Explore, Solo) {
  run_solo_world(4096, 3, [](World&) { run_mlp(c10::kMeta, 4096, true); std::cout << "solo ok\n"; }, {false, c10::kMeta});
}
}  // namespace
}  // namespace dtensor
