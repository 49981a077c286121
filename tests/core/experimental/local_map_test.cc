// local_map: placement checks (error or redistribution), DTensor outputs
// with the declared placements, gradients through to_local / from_local,
// and pass-through without DTensor inputs.
#include <gtest/gtest.h>
#include <torch/utils.h>

#include "backends/fake/fake_world.h"
#include "core/dtensor.h"
#include "core/dtensor_impl.h"
#include "core/experimental/local_map.h"

namespace dtensor::experimental {
namespace {

TEST(LocalMapTest, RunsOnShardsAndWrapsResults) {
  const at::Tensor x = torch::randn({8, 4}, torch::kDouble);
  run_fake_world(4, [&](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {4});
    auto row_scale = local_map(
        [](const Tensors& in) {
          EXPECT_FALSE(is_dtensor(in[0]));
          EXPECT_EQ(in[0].sizes(), (c10::IntArrayRef{2, 4}));
          return Tensors{in[0] * 2};
        },
        {Placements{Shard(0)}}, PlacementsList{Placements{Shard(0)}});
    DTensor y = row_scale({distribute_tensor(x, mesh, {Shard(0)})})[0];
    EXPECT_EQ(y.placements(), (Placements{Shard(0)}));
    EXPECT_TRUE(torch::allclose(y.full_tensor(), x * 2));
  });
}

TEST(LocalMapTest, MismatchedPlacementsThrowUnlessRedistributing) {
  const at::Tensor x = torch::randn({8, 4}, torch::kDouble);
  run_fake_world(2, [&](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    auto fn = [](const Tensors& in) { return Tensors{in[0].sum(0, true)}; };  // per-shard column sums
    auto strict = local_map(fn, {Placements{Partial()}}, PlacementsList{Placements{Shard(0)}});
    DTensor cols = distribute_tensor(x, mesh, {Shard(1)});
    try {
      strict({cols});
      ADD_FAILURE() << "mismatched placements were accepted";
    } catch (const c10::Error& e) {
      EXPECT_NE(std::string(e.what()).find("input 0 has placements [S(1)] but in_placements expects [S(0)]"),
                std::string::npos)
          << e.what();
    }
    auto lenient = local_map(fn, {Placements{Partial()}}, PlacementsList{Placements{Shard(0)}}, std::nullopt,
                             std::nullopt, /*redistribute_inputs=*/true);
    DTensor s = lenient({cols})[0];
    EXPECT_EQ(s.placements(), (Placements{Partial()}));
    EXPECT_TRUE(torch::allclose(s.full_tensor(), x.sum(0, true)));
  });
}

TEST(LocalMapTest, GradientsFlowWithTheDeclaredGradPlacements) {
  const at::Tensor x = torch::randn({8, 4}, torch::kDouble);
  const at::Tensor w = torch::randn({4, 6}, torch::kDouble);
  at::Tensor rx = x.clone().requires_grad_(true), rw = w.clone().requires_grad_(true);
  rx.mm(rw).tanh().sum().backward();
  run_fake_world(4, [&](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {4});
    at::Tensor dx = distribute_tensor(x, mesh, {Shard(0)}).requires_grad_(true);
    at::Tensor dw = distribute_tensor(w, mesh, {Replicate()}).requires_grad_(true);
    // The local mm of a row shard with the whole weight: its weight gradient
    // is a partial sum over the rows of each rank.
    auto local_mm = local_map([](const Tensors& in) { return Tensors{in[0].mm(in[1]).tanh()}; },
                              {Placements{Shard(0)}}, PlacementsList{Placements{Shard(0)}, Placements{Replicate()}},
                              PlacementsList{Placements{Shard(0)}, Placements{Partial()}});
    DTensor y = local_mm({dx, dw})[0];
    DTensor(y.sum()).redistribute({Replicate()}).backward();
    EXPECT_EQ(DTensor(dw.grad()).placements(), (Placements{Partial()}));
    EXPECT_TRUE(torch::allclose(DTensor(dx.grad()).full_tensor(), rx.grad()));
    EXPECT_TRUE(torch::allclose(DTensor(dw.grad()).full_tensor(), rw.grad()));
  });
}

TEST(LocalMapTest, PlainInputsRunAsIsAndPlainOutputsPassThrough) {
  auto fn = local_map([](const Tensors& in) { return Tensors{in[0] + 1, in[0].sum()}; },
                      {Placements{Replicate()}, std::nullopt});
  Tensors out = fn({torch::zeros({3})});
  EXPECT_FALSE(is_dtensor(out[0]));
  EXPECT_TRUE(torch::equal(out[0], torch::ones({3})));
  run_fake_world(2, [&](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    Tensors mixed = fn({distribute_tensor(torch::zeros({4}), mesh, {Replicate()})});
    EXPECT_TRUE(is_dtensor(mixed[0]));
    EXPECT_FALSE(is_dtensor(mixed[1]));
    auto expects_dtensor = local_map([](const Tensors& in) { return Tensors{in[0]}; }, {Placements{Replicate()}},
                                     PlacementsList{Placements{Replicate()}, Placements{Replicate()}});
    EXPECT_THROW(expects_dtensor({distribute_tensor(torch::zeros({4}), mesh, {Replicate()}), torch::zeros({4})}),
                 c10::Error);
  });
}

}  // namespace
}  // namespace dtensor::experimental
