// No DTensor outlives its program: after forward, backward and optimizer
// steps on the fake world, every DTensorImpl is freed again (a reference
// cycle through an autograd node would keep the impl, its mesh and the
// world's groups alive, growing a long run's memory step by step).
#include <gtest/gtest.h>
#include <torch/optim/adam.h>
#include <torch/optim/optimizer.h>
#include <torch/utils.h>

#include <functional>
#include <string>
#include <vector>

#include "backends/fake/fake_world.h"
#include "core/dtensor.h"
#include "core/dtensor_impl.h"

namespace dtensor {
namespace {

// Runs `step` on a 4-rank world and returns how many DTensorImpls it left alive.
int64_t impls_left_by(const std::function<void(const DeviceMesh&)>& step) {
  const int64_t before = live_dtensor_impls();
  run_fake_world(4, [&](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2, 2});
    step(mesh);
  });
  return live_dtensor_impls() - before;
}

at::Tensor leaf(const DeviceMesh& mesh, Placements placements) {
  torch::manual_seed(0);
  return distribute_tensor(torch::randn({8, 6}), mesh, std::move(placements)).requires_grad_(true);
}

struct Case {
  std::string name;
  std::function<at::Tensor(const at::Tensor&)> loss;
};

// Every op family whose backward dtensor builds itself (autograd_overrides,
// redistribute, from_local / to_local), and a few LibTorch ones.
std::vector<Case> cases() {
  return {
      {"norm over a sharded dim", [](const at::Tensor& x) { return x.norm(); }},
      {"norm over a kept dim", [](const at::Tensor& x) { return x.norm(2, {1}).sum(); }},
      {"linalg_vector_norm inf",
       [](const at::Tensor& x) { return at::linalg_vector_norm(x, INFINITY); }},
      {"max", [](const at::Tensor& x) { return x.max(); }},
      {"max.dim", [](const at::Tensor& x) { return std::get<0>(x.max(1)).sum(); }},
      {"sort", [](const at::Tensor& x) { return std::get<0>(x.sort(1)).sum(); }},
      {"softmax, mm", [](const at::Tensor& x) { return x.softmax(1).mm(x.t()).sum(); }},
      {"redistribute",
       [](const at::Tensor& x) {
         return DTensor(x).redistribute({Replicate(), Replicate()}).sum();
       }},
      {"to_local, from_local",
       [](const at::Tensor& x) {
         DTensor d(x);
         at::Tensor local = d.to_local() * 2;
         return DTensor::from_local(local, d.device_mesh(), d.placements()).sum();
       }},
  };
}

TEST(DTensorLifetimeTest, ForwardAndBackwardFreeEveryImpl) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const int64_t left = impls_left_by([&](const DeviceMesh& mesh) {
      at::Tensor x = leaf(mesh, {Shard(0), Shard(1)});
      c.loss(x).backward();
      ASSERT_TRUE(x.grad().defined());
    });
    EXPECT_EQ(left, 0) << c.name << " left " << left << " DTensorImpls alive";
  }
}

TEST(DTensorLifetimeTest, ForwardWithoutBackwardFreesEveryImpl) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const int64_t left = impls_left_by([&](const DeviceMesh& mesh) {
      at::Tensor x = leaf(mesh, {Shard(0), Replicate()});
      c.loss(x);  // the graph is dropped unused
    });
    EXPECT_EQ(left, 0) << c.name << " left " << left << " DTensorImpls alive";
  }
}

TEST(DTensorLifetimeTest, TrainingStepsDoNotAccumulateImpls) {
  const int64_t left = impls_left_by([](const DeviceMesh& mesh) {
    torch::manual_seed(0);
    auto w =
        distribute_tensor(torch::randn({6, 4}), mesh, {Shard(0), Replicate()}).requires_grad_(true);
    torch::optim::Adam adam({w}, torch::optim::AdamOptions(1e-2));
    at::Tensor x = distribute_tensor(torch::randn({8, 6}), mesh, {Replicate(), Replicate()});
    for (int step = 0; step < 5; ++step) {
      adam.zero_grad();
      at::Tensor loss = x.mm(w).norm();
      loss.backward();
      adam.step();
    }
  });
  EXPECT_EQ(left, 0);
}

}  // namespace
}  // namespace dtensor
