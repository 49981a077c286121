// Everything torch::optim::SGD, Adam and AdamW (LibTorch 1.13) call on
// parameters and their state works on DTensors: three steps on sharded and
// replicated parameters match the single-device run, and a step issues no
// collective when gradients are laid out like their parameters.
#include <gtest/gtest.h>
// <torch/utils.h> first: 1.13's clip_grad.h uses at::Tensor without including it.
#include <torch/utils.h>
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/optimizer.h>
#include <torch/optim/sgd.h>

#include <functional>
#include <memory>

#include "backends/fake/fake_world.h"
#include "core/compat/torch_compat.h"
#include "core/dtensor.h"
#include "testing/error_of.h"
#include "tests/core/test_util.h"
#include "tests/core/ops/op_harness.h"

namespace dtensor::testing {
namespace {

using MakeOptimizer = std::function<std::unique_ptr<torch::optim::Optimizer>(std::vector<at::Tensor>)>;

struct OptimizerCase {
  std::string name;
  MakeOptimizer make;
};

std::vector<OptimizerCase> optimizer_cases() {
  using namespace torch::optim;
  return {
      {"sgd", [](auto p) { return std::make_unique<SGD>(p, SGDOptions(0.1)); }},
      {"sgd_nesterov",
       [](auto p) { return std::make_unique<SGD>(p, SGDOptions(0.1).momentum(0.9).nesterov(true).weight_decay(0.01)); }},
      {"sgd_dampening", [](auto p) { return std::make_unique<SGD>(p, SGDOptions(0.1).momentum(0.9).dampening(0.2)); }},
      {"adam", [](auto p) { return std::make_unique<Adam>(p, AdamOptions(0.05).weight_decay(0.01)); }},
      {"adam_amsgrad", [](auto p) { return std::make_unique<Adam>(p, AdamOptions(0.05).amsgrad(true)); }},
      {"adamw", [](auto p) { return std::make_unique<AdamW>(p, AdamWOptions(0.05)); }},
      {"adamw_amsgrad", [](auto p) { return std::make_unique<AdamW>(p, AdamWOptions(0.05).amsgrad(true)); }},
  };
}

// loss = sum((w * c)^2) + sum(w^3): gradients laid out like w.
at::Tensor loss_of(const at::Tensor& w, const at::Tensor& c) { return (w * c).pow(2).sum() + w.pow(3).sum(); }

constexpr int kSteps = 3;

TEST(OptimizerOpsTest, StepsMatchSingleDeviceWithoutCommunication) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(3);
  const at::Tensor w0 = at::randn({8, 12}, gen, at::kDouble);
  const at::Tensor c = at::randn({8, 12}, gen, at::kDouble);
  for (const OptimizerCase& oc : optimizer_cases()) {
    at::Tensor expected = w0.clone().requires_grad_(true);
    {
      auto opt = oc.make({expected});
      for (int step = 0; step < kSteps; ++step) {
        opt->zero_grad();
        loss_of(expected, c).backward();
        opt->step();
      }
    }
    for (const Placements& placements : std::vector<Placements>{{Replicate()}, {Shard(0)}, {Shard(1)}}) {
      SCOPED_TRACE(oc.name + " " + to_string(placements));
      at::Tensor got;
      Counts step_comms;
      run_fake_world(4, [&](World& world) {
        auto mesh = DeviceMesh::init(c10::kCPU, {4});
        at::Tensor w = distribute_tensor(w0, mesh, placements, DistributeOptions{std::nullopt});
        w.requires_grad_(true);
        DTensor dc = distribute_tensor(c, mesh, {Replicate()}, DistributeOptions{std::nullopt});
        auto opt = oc.make({w});
        Counts comms;
        for (int step = 0; step < kSteps; ++step) {
          opt->zero_grad();
          DTensor(loss_of(w, dc)).redistribute({Replicate()}).backward();
          CollectiveCounter counter(world);
          opt->step();
          for (const auto& [name, n] : counter.counts()) comms[name] += n;
        }
        EXPECT_EQ(DTensor(w).placements(), placements);
        at::Tensor full = DTensor(w).full_tensor();
        if (world.rank() == 0) {
          got = full;
          step_comms = comms;
        }
      });
      EXPECT_TRUE(at::allclose(got, expected.detach(), 1e-9, 1e-12)) << got << "\nexpected\n" << expected;
      EXPECT_EQ(step_comms, Counts{}) << "optimizer steps issued collectives";
    }
  }
}

// Gradient clipping (LibTorch 1.13 clip_grad_norm_: per-parameter norms,
// stacked, normed again, then mul_) on sharded gradients.
// _fused_adam_ (Adam(fused=True) in Python) on sharded and replicated
// parameters: each element steps on its own shards, no collective, values
// equal the plain call's (Note [Fused optimizer steps]); a state tensor laid
// out unlike its parameter is refused, naming it.
TEST(OptimizerOpsTest, FusedAdamStepsEachParameterOnItsShards) {
#if DTENSOR_TORCH_AT_LEAST(2, 4)
  const at::Tensor p0 = seeded_randn({8, 4}, 1), p1 = seeded_randn({6}, 2), g0 = seeded_randn({8, 4}, 3),
                   g1 = seeded_randn({6}, 4);
  auto step = [](std::vector<at::Tensor> params, std::vector<at::Tensor> grads, std::vector<at::Tensor> m,
                 std::vector<at::Tensor> v, std::vector<at::Tensor> steps) {
    at::_fused_adam_(params, grads, m, v, {}, steps, 0.1, 0.9, 0.999, 0.01, 1e-8, false, false);
  };
  std::vector<at::Tensor> want = {p0.clone(), p1.clone()};
  step(want, {g0, g1}, {at::zeros_like(p0), at::zeros_like(p1)}, {at::zeros_like(p0), at::zeros_like(p1)},
       {at::ones({}, at::kFloat), at::ones({}, at::kFloat)});
  run_fake_world(4, [&](World& world) {
    auto mesh = DeviceMesh::init(c10::kCPU, {4});
    DTensor w0 = distribute_tensor(p0, mesh, {Shard(0)}), w1 = distribute_tensor(p1, mesh, {Replicate()});
    DTensor d0 = distribute_tensor(g0, mesh, {Shard(0)}), d1 = distribute_tensor(g1, mesh, {Replicate()});
    std::vector<at::Tensor> m = {at::zeros_like(w0), at::zeros_like(w1)}, v = {at::zeros_like(w0), at::zeros_like(w1)};
    std::vector<at::Tensor> steps = {distribute_tensor(at::ones({}, at::kFloat), mesh, {Replicate()}),
                                     distribute_tensor(at::ones({}, at::kFloat), mesh, {Replicate()})};
    CollectiveCounter counter(world);
    step({w0, w1}, {d0, d1}, m, v, steps);
    EXPECT_EQ(counter.counts(), Counts{});
    EXPECT_EQ(w0.placements(), Placements{Shard(0)});
    EXPECT_TRUE(at::allclose(w0.full_tensor(), want[0]));
    EXPECT_TRUE(at::allclose(w1.full_tensor(), want[1]));
    // exp_avg of w0 replicated: the step would write a redistributed copy.
    std::vector<at::Tensor> bad = {at::zeros_like(d0.full_tensor()), at::zeros_like(w1)};
    bad[0] = distribute_tensor(bad[0], mesh, {Replicate()});
    const std::string error = error_of([&] { step({w0, w1}, {d0, d1}, bad, v, steps); });
    EXPECT_NE(error.find("exp_avgs"), std::string::npos) << error;
    EXPECT_NE(error.find("laid out like its parameter"), std::string::npos) << error;
  });
#else
  GTEST_SKIP() << "LibTorch " << TORCH_VERSION << " has no CPU _fused_adam_";
#endif
}

// AMP's unscaling on sharded gradients (Note [Unscaling sharded gradients]):
// an inf in one rank's shard sets found_inf on every rank, with one
// all_reduce of one element; gradients are scaled in place, keeping their
// placements; a Partial gradient is refused.
TEST(OptimizerOpsTest, UnscalingShardedGradientsAgreesOnFoundInf) {
  const at::Tensor g0 = seeded_randn({8, 4}, 1), g1 = seeded_randn({6}, 2);
  try {  // a CPU kernel is recent (LibTorch 1.13 has only CUDA's)
    at::Tensor probe = at::zeros({}, at::kFloat);
    at::_amp_foreach_non_finite_check_and_unscale_({g1.clone()}, probe, at::ones({}, at::kFloat));
  } catch (const c10::Error&) {
    GTEST_SKIP() << "LibTorch " << TORCH_VERSION << " has no CPU _amp_foreach_non_finite_check_and_unscale_";
  }
  for (bool with_inf : {false, true}) {
    SCOPED_TRACE(with_inf);
    at::Tensor grad0 = g0.clone();
    if (with_inf) grad0[7][3] = INFINITY;  // on rank 3's rows only
    run_fake_world(4, [&](World& world) {
      auto mesh = DeviceMesh::init(c10::kCPU, {4});
      std::vector<at::Tensor> grads = {distribute_tensor(grad0, mesh, {Shard(0)}),
                                       distribute_tensor(g1, mesh, {Replicate()})};
      // AMP's flags are float, whatever the gradients' dtype.
      DTensor found_inf = distribute_tensor(at::zeros({}, at::kFloat), mesh, {Replicate()});
      DTensor inv_scale = distribute_tensor(at::full({}, 0.25, at::kFloat), mesh, {Replicate()});
      CollectiveCounter counter(world);
      at::_amp_foreach_non_finite_check_and_unscale_(grads, found_inf, inv_scale);
      EXPECT_EQ(counter.counts(), (Counts{{"all_reduce", 1}}));
      EXPECT_EQ(found_inf.to_local().item<float>(), with_inf ? 1.0f : 0.0f) << "rank " << world.rank();
      EXPECT_EQ(DTensor(grads[0]).placements(), Placements{Shard(0)});
      EXPECT_TRUE(at::allclose(DTensor(grads[0]).full_tensor(), grad0 * 0.25, 1e-5, 1e-8, /*equal_nan=*/true));
      EXPECT_TRUE(at::allclose(DTensor(grads[1]).full_tensor(), g1 * 0.25));
      std::vector<at::Tensor> partial = {DTensor::from_local(at::ones({3}, at::kDouble), mesh, {Partial()})};
      const std::string error =
          error_of([&] { at::_amp_foreach_non_finite_check_and_unscale_(partial, found_inf, inv_scale); });
      EXPECT_NE(error.find("redistribute Partial gradients"), std::string::npos) << error;
    });
  }
}

TEST(OptimizerOpsTest, ClipGradNormOnShardedGradients) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(4);
  const at::Tensor a = at::randn({8, 12}, gen, at::kDouble), b = at::randn({12}, gen, at::kDouble);
  at::Tensor ra = a.clone().requires_grad_(true), rb = b.clone().requires_grad_(true);
  (ra.pow(2).sum() * 3 + rb.pow(3).sum()).backward();
  const double expected_norm = torch::nn::utils::clip_grad_norm_(std::vector<at::Tensor>{ra, rb}, 1.0);
  double got_norm = 0;
  at::Tensor got_a, got_b;
  run_fake_world(4, [&](World& world) {
    auto mesh = DeviceMesh::init(c10::kCPU, {4});
    at::Tensor da = distribute_tensor(a, mesh, {Shard(1)}, DistributeOptions{std::nullopt}).requires_grad_(true);
    at::Tensor db = distribute_tensor(b, mesh, {Replicate()}, DistributeOptions{std::nullopt}).requires_grad_(true);
    DTensor(da.pow(2).sum() * 3 + db.pow(3).sum()).redistribute({Replicate()}).backward();
    const double norm = torch::nn::utils::clip_grad_norm_(std::vector<at::Tensor>{da, db}, 1.0);
    at::Tensor ga = DTensor(da.grad()).full_tensor(), gb = DTensor(db.grad()).full_tensor();
    if (world.rank() == 0) {
      got_norm = norm;
      got_a = ga;
      got_b = gb;
    }
  });
  EXPECT_NEAR(got_norm, expected_norm, 1e-9);
  EXPECT_TRUE(at::allclose(got_a, ra.grad()));
  EXPECT_TRUE(at::allclose(got_b, rb.grad()));
}

}  // namespace
}  // namespace dtensor::testing
