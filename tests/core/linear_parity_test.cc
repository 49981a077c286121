// torch::nn::Linear with DTensor parameters trained on the fake world equals
// the same training on one device: forward, backward, SGD (momentum, weight
// decay) and Adam steps; float64 to 1e-12 and float32 to 1e-6; colwise,
// rowwise and replicated (data-parallel) layouts on 1-D meshes of 2 and 4,
// and dp x tp on a 2x2 mesh.
#include <gtest/gtest.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/adam.h>
#include <torch/optim/optimizer.h>
#include <torch/optim/sgd.h>
#include <torch/ordered_dict.h>
#include <torch/utils.h>

#include "backends/fake/fake_world.h"
#include "core/dtensor.h"

namespace dtensor {
namespace {

// Reaches Module's protected parameter dict (legal: named through a subclass).
struct ParameterAccess : torch::nn::Module {
  static torch::OrderedDict<std::string, at::Tensor>& of(torch::nn::Module& m) {
    return m.*(&ParameterAccess::parameters_);
  }
};

// Replaces the Linear's parameters by DTensors (leaves that require grad).
void distribute_linear(torch::nn::Linear& lin, const DeviceMesh& mesh, const Placements& w,
                       const Placements& b) {
  auto& params = ParameterAccess::of(*lin);
  lin->weight = distribute_tensor(lin->weight.detach(), mesh, w).requires_grad_(true);
  lin->bias = distribute_tensor(lin->bias.detach(), mesh, b).requires_grad_(true);
  params["weight"] = lin->weight;
  params["bias"] = lin->bias;
}

enum class Opt { kSgd, kAdam };

std::unique_ptr<torch::optim::Optimizer> make_optimizer(Opt opt, std::vector<at::Tensor> params) {
  if (opt == Opt::kSgd) {
    return std::make_unique<torch::optim::SGD>(
        params, torch::optim::SGDOptions(0.05).momentum(0.9).weight_decay(0.01));
  }
  return std::make_unique<torch::optim::Adam>(params, torch::optim::AdamOptions(0.01).weight_decay(0.01));
}

struct Layout {
  std::string name;
  std::vector<int64_t> mesh;
  Placements weight, bias, input;
};

struct TrainResult {
  at::Tensor weight, bias;
  std::vector<double> losses;
};

constexpr int kSteps = 3;
constexpr int64_t kIn = 6, kOut = 8, kBatch = 8;

at::Tensor loss_of(torch::nn::Linear& lin, const at::Tensor& x, const at::Tensor& target) {
  return (lin->forward(x).relu() - target).pow(2).mean();
}

TrainResult train_single(at::ScalarType dtype, Opt opt, const at::Tensor& x, const at::Tensor& target) {
  torch::manual_seed(3);
  auto lin = torch::nn::Linear(kIn, kOut);
  lin->to(dtype);
  auto optimizer = make_optimizer(opt, lin->parameters());
  TrainResult r;
  for (int step = 0; step < kSteps; ++step) {
    optimizer->zero_grad();
    at::Tensor loss = loss_of(lin, x, target);
    loss.backward();
    optimizer->step();
    r.losses.push_back(loss.item<double>());
  }
  r.weight = lin->weight.detach().clone();
  r.bias = lin->bias.detach().clone();
  return r;
}

void check_layout(const Layout& layout, at::ScalarType dtype, Opt opt, double tol) {
  SCOPED_TRACE(layout.name + (dtype == at::kFloat ? " float32" : " float64") +
               (opt == Opt::kSgd ? " SGD" : " Adam"));
  torch::manual_seed(5);
  const at::Tensor x = at::randn({kBatch, kIn}, dtype);
  const at::Tensor target = at::rand({kBatch, kOut}, dtype);
  const TrainResult ref = train_single(dtype, opt, x, target);
  int64_t world_size = 1;
  for (int64_t s : layout.mesh) world_size *= s;
  // Initial parameters drawn here, not in the rank threads: they share
  // LibTorch's default generator.
  torch::manual_seed(3);
  auto init = torch::nn::Linear(kIn, kOut);
  init->to(dtype);
  const at::Tensor init_w = init->weight.detach(), init_b = init->bias.detach();
  run_fake_world(world_size, [&](World& world) {
    auto mesh = DeviceMesh::init(c10::kCPU, layout.mesh);
    auto lin = torch::nn::Linear(torch::nn::LinearOptions(kIn, kOut));
    lin->to(dtype);
    {
      torch::NoGradGuard no_grad;
      lin->weight.copy_(init_w);
      lin->bias.copy_(init_b);
    }
    distribute_linear(lin, mesh, layout.weight, layout.bias);
    Placements replicate(static_cast<size_t>(mesh.ndim()), Replicate());
    DTensor dx = distribute_tensor(x, mesh, layout.input);
    DTensor dtarget = distribute_tensor(target, mesh, replicate);
    auto optimizer = make_optimizer(opt, lin->parameters());
    for (int step = 0; step < kSteps; ++step) {
      optimizer->zero_grad();
      DTensor loss = loss_of(lin, dx, dtarget);
      loss.backward();
      optimizer->step();
      EXPECT_NEAR(loss.full_tensor().item<double>(), ref.losses[static_cast<size_t>(step)], tol)
          << "step " << step << " rank " << world.rank();
    }
    DTensor w(lin->weight), b(lin->bias);
    EXPECT_EQ(w.placements(), layout.weight);
    EXPECT_EQ(b.placements(), layout.bias);
    EXPECT_TRUE(at::allclose(w.full_tensor(), ref.weight, tol, tol))
        << "rank " << world.rank() << "\n" << (w.full_tensor() - ref.weight).abs().max();
    EXPECT_TRUE(at::allclose(b.full_tensor(), ref.bias, tol, tol))
        << "rank " << world.rank() << "\n" << (b.full_tensor() - ref.bias).abs().max();
  });
}

std::vector<Layout> layouts() {
  return {
      {"colwise_2", {2}, {Shard(0)}, {Shard(0)}, {Replicate()}},
      {"colwise_4", {4}, {Shard(0)}, {Shard(0)}, {Replicate()}},
      {"colwise_3_uneven", {3}, {Shard(0)}, {Shard(0)}, {Replicate()}},
      {"rowwise_2", {2}, {Shard(1)}, {Replicate()}, {Shard(1)}},
      {"rowwise_4_uneven", {4}, {Shard(1)}, {Replicate()}, {Shard(1)}},
      {"data_parallel_4", {4}, {Replicate()}, {Replicate()}, {Shard(0)}},
      {"dp_tp_2x2", {2, 2}, {Replicate(), Shard(0)}, {Replicate(), Shard(0)}, {Shard(0), Replicate()}},
      {"fsdp_tp_2x2", {2, 2}, {Shard(1), Shard(0)}, {Replicate(), Shard(0)}, {Shard(0), Replicate()}},
  };
}

class LinearParityTest : public ::testing::TestWithParam<Layout> {};

TEST_P(LinearParityTest, Float64SgdMatchesSingleDevice) {
  check_layout(GetParam(), at::kDouble, Opt::kSgd, 1e-12);
}
TEST_P(LinearParityTest, Float64AdamMatchesSingleDevice) {
  check_layout(GetParam(), at::kDouble, Opt::kAdam, 1e-12);
}
TEST_P(LinearParityTest, Float32SgdMatchesSingleDevice) {
  check_layout(GetParam(), at::kFloat, Opt::kSgd, 1e-6);
}
TEST_P(LinearParityTest, Float32AdamMatchesSingleDevice) {
  check_layout(GetParam(), at::kFloat, Opt::kAdam, 1e-6);
}

INSTANTIATE_TEST_SUITE_P(Layouts, LinearParityTest, ::testing::ValuesIn(layouts()),
                         [](const ::testing::TestParamInfo<Layout>& info) { return info.param.name; });

}  // namespace
}  // namespace dtensor
