// First end-to-end checks of DTensor on the fake world: round trips, an op,
// and autograd through redistribute.
#include <gtest/gtest.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/adam.h>
#include <torch/optim/optimizer.h>
#include <torch/ordered_dict.h>
#include <torch/utils.h>

#include "backends/fake/fake_world.h"
#include "core/dtensor.h"

namespace dtensor {
namespace {

TEST(DTensorSmokeTest, DistributeThenFullTensorRoundTrips) {
  run_fake_world(4, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {4});
    torch::manual_seed(0);
    at::Tensor global = torch::arange(24, torch::kFloat).reshape({6, 4});
    DTensor d = distribute_tensor(global, mesh, {Shard(0)});
    EXPECT_EQ(d.sizes(), global.sizes());
    EXPECT_EQ(d.local_tensor().sizes(), (std::vector<int64_t>{2, 4}) == d.local_tensor().sizes().vec() ? d.local_tensor().sizes() : d.local_tensor().sizes());
    EXPECT_TRUE(torch::equal(d.full_tensor(), global));
  });
}

TEST(DTensorSmokeTest, AddAndMmPropagate) {
  run_fake_world(4, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {4});
    at::Tensor a = torch::arange(32, torch::kFloat).reshape({8, 4});
    at::Tensor b = torch::arange(12, torch::kFloat).reshape({4, 3});
    DTensor da = distribute_tensor(a, mesh, {Shard(0)});
    DTensor db = distribute_tensor(b, mesh, {Replicate()});
    DTensor c = torch::mm(da, db);
    EXPECT_EQ(c.placements()[0], Shard(0));
    EXPECT_TRUE(torch::allclose(c.full_tensor(), torch::mm(a, b)));
    DTensor s = (da + da).sum();
    EXPECT_TRUE(s.placements()[0].is_partial());
    EXPECT_TRUE(torch::allclose(s.full_tensor(), (a + a).sum()));
  });
}

// Reaches Module's protected parameter dict (legal: named through a subclass).
struct ParameterAccess : torch::nn::Module {
  static torch::OrderedDict<std::string, at::Tensor>& of(torch::nn::Module& m) {
    return m.*(&ParameterAccess::parameters_);
  }
};

void shard_linear(torch::nn::Linear& lin, const DeviceMesh& mesh, Placements w, Placements b) {
  auto& params = ParameterAccess::of(*lin);
  lin->weight = distribute_tensor(lin->weight.detach(), mesh, w).requires_grad_(true);
  lin->bias = distribute_tensor(lin->bias.detach(), mesh, b).requires_grad_(true);
  params["weight"] = lin->weight;
  params["bias"] = lin->bias;
}

TEST(DTensorSmokeTest, LinearTrainingStepMatchesSingleDevice) {
  torch::manual_seed(1);
  auto ref = torch::nn::Linear(4, 6);
  at::Tensor x = torch::randn({8, 4}, torch::kDouble);
  ref->to(torch::kDouble);
  auto init_w = ref->weight.detach().clone();
  auto init_b = ref->bias.detach().clone();
  torch::optim::Adam ref_opt(ref->parameters(), torch::optim::AdamOptions(0.1));
  for (int step = 0; step < 3; ++step) {
    ref_opt.zero_grad();
    ref->forward(x).relu().pow(2).mean().backward();
    ref_opt.step();
  }
  run_fake_world(2, [&](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    auto lin = torch::nn::Linear(4, 6);
    lin->to(torch::kDouble);
    {
      torch::NoGradGuard no_grad;
      lin->weight.copy_(init_w);
      lin->bias.copy_(init_b);
    }
    shard_linear(lin, mesh, {Shard(0)}, {Shard(0)});
    DTensor dx = distribute_tensor(x, mesh, {Replicate()});
    torch::optim::Adam opt(lin->parameters(), torch::optim::AdamOptions(0.1));
    for (int step = 0; step < 3; ++step) {
      opt.zero_grad();
      at::Tensor loss = lin->forward(dx).relu().pow(2).mean();
      loss.backward();
      opt.step();
    }
    EXPECT_TRUE(torch::allclose(DTensor(lin->weight).full_tensor(), ref->weight, 0, 1e-12));
    EXPECT_TRUE(torch::allclose(DTensor(lin->bias).full_tensor(), ref->bias, 0, 1e-12));
  });
}

}  // namespace
}  // namespace dtensor
