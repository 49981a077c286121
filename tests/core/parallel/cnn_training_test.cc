// A small CNN (convolution, batch norm, ReLU, max and average pooling, a
// Linear head) trains sharded on the fake world exactly as on one device:
// data parallel (the batch sharded, every parameter and buffer replicated)
// and channel parallel (batch norm's weight, bias and running statistics
// sharded over channels), three SGD steps each; losses, parameters and the
// running statistics equal the single-device run's.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>
#include <vector>

#include "backends/fake/fake_world.h"
#include "core/dtensor.h"
#include "core/parallel/distribute_module.h"

namespace dtensor {
namespace {

// The CNN with the initial values `initial` (parameters, then buffers);
// copied rather than drawn, since the ranks of a fake world are threads
// sharing LibTorch's default generator.
torch::nn::Sequential make_cnn(const std::vector<at::Tensor>& initial) {
  torch::nn::Sequential cnn(
      torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 8, 3).padding(1)), torch::nn::BatchNorm2d(8),
      torch::nn::ReLU(), torch::nn::MaxPool2d(torch::nn::MaxPool2dOptions(2)),
      torch::nn::Conv2d(torch::nn::Conv2dOptions(8, 8, 3).padding(1)), torch::nn::BatchNorm2d(8),
      torch::nn::ReLU(), torch::nn::AvgPool2d(torch::nn::AvgPool2dOptions(2)), torch::nn::Flatten(),
      torch::nn::Linear(8 * 2 * 2, 4));
  cnn->to(torch::kDouble);
  if (initial.empty()) return cnn;
  torch::NoGradGuard no_grad;
  size_t i = 0;
  for (at::Tensor& p : cnn->parameters()) p.copy_(initial[i++]);
  for (at::Tensor& b : cnn->buffers()) b.copy_(initial[i++]);
  return cnn;
}

struct Training {
  std::vector<double> losses;
  std::vector<at::Tensor> parameters;  // then the buffers (running statistics)
};

// Three SGD steps of mse(cnn(x), y); `x` and `y` are DTensors or plain.
Training train(torch::nn::Sequential& cnn, const at::Tensor& x, const at::Tensor& y) {
  torch::optim::SGD sgd(cnn->parameters(), torch::optim::SGDOptions(0.1));
  Training run;
  for (int step = 0; step < 3; ++step) {
    sgd.zero_grad();
    at::Tensor loss = torch::mse_loss(cnn->forward(x), y);
    loss.backward();
    sgd.step();
    run.losses.push_back((is_dtensor(loss) ? DTensor(loss).full_tensor() : loss).item<double>());
  }
  auto whole = [](const at::Tensor& t) { return is_dtensor(t) ? DTensor(t).full_tensor() : t.detach().clone(); };
  for (const at::Tensor& p : cnn->parameters()) run.parameters.push_back(whole(p));
  for (const at::Tensor& b : cnn->buffers()) run.parameters.push_back(whole(b));
  return run;
}

void expect_same_run(const Training& ours, const Training& reference) {
  ASSERT_EQ(ours.losses.size(), reference.losses.size());
  for (size_t i = 0; i < ours.losses.size(); ++i) EXPECT_NEAR(ours.losses[i], reference.losses[i], 1e-10) << "step " << i;
  ASSERT_EQ(ours.parameters.size(), reference.parameters.size());
  for (size_t i = 0; i < ours.parameters.size(); ++i) {
    EXPECT_TRUE(torch::allclose(ours.parameters[i].to(torch::kDouble), reference.parameters[i].to(torch::kDouble),
                                1e-9, 1e-11))
        << "parameter or buffer " << i;
  }
}

class CnnTrainingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    torch::manual_seed(3);
    x_ = torch::randn({8, 3, 8, 8}, torch::kDouble);
    y_ = torch::randn({8, 4}, torch::kDouble);
    torch::nn::Sequential cnn = make_cnn({});
    for (const at::Tensor& p : cnn->parameters()) initial_.push_back(p.detach().clone());
    for (const at::Tensor& b : cnn->buffers()) initial_.push_back(b.clone());
    reference_ = train(cnn, x_, y_);
  }
  at::Tensor x_, y_;
  std::vector<at::Tensor> initial_;
  Training reference_;
};

TEST_F(CnnTrainingTest, DataParallelEqualsOneDevice) {
  run_fake_world(4, [&](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {4});
    torch::nn::Sequential cnn = make_cnn(initial_);
    distribute_module(*cnn, mesh);
    Training ours = train(cnn, distribute_tensor(x_, mesh, {Shard(0)}), distribute_tensor(y_, mesh, {Shard(0)}));
    expect_same_run(ours, reference_);
  });
}

TEST_F(CnnTrainingTest, ChannelParallelBatchNormEqualsOneDevice) {
  run_fake_world(2, [&](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    torch::nn::Sequential cnn = make_cnn(initial_);
    // Batch norm over channels: its weight, bias and running statistics S(0).
    distribute_module(*cnn, mesh, [](const std::string& name, torch::nn::Module& m, const DeviceMesh& mesh) {
      if (name != "1" && name != "5") return;
      for (const char* p : {"weight", "bias"}) distribute_parameter(m, p, mesh, {Shard(0)});
      for (const char* b : {"running_mean", "running_var"}) distribute_buffer(m, b, mesh, {Shard(0)});
    });
    Training ours = train(cnn, distribute_tensor(x_, mesh, {Replicate()}), distribute_tensor(y_, mesh, {Replicate()}));
    expect_same_run(ours, reference_);
    // The statistics stayed sharded where the module keeps them.
    for (const auto& named : cnn->named_buffers()) {
      if (named.key().find("running_") != std::string::npos) {
        EXPECT_EQ(DTensor(named.value()).placements(), Placements{Shard(0)}) << named.key();
      }
    }
  });
}

}  // namespace
}  // namespace dtensor
