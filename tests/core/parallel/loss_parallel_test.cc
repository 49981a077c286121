// Tests of loss_parallel: cross entropy on class-sharded logits equals the
// single-device loss and gradient, with PyTorch's collective counts (forward
// 3 all_reduces, backward none, measured with PyTorch 2.11 on 4 Gloo ranks),
// the cache keeps plans made inside the guard apart, and the errors users see.
#include "core/parallel/loss_parallel.h"

#include <gtest/gtest.h>
#include <torch/enum.h>
#include <torch/nn/functional.h>
#include <torch/utils.h>

#include <optional>
#include <string>
#include <vector>

#include "backends/fake/fake_world.h"
#include "core/dtensor.h"
#include "testing/error_of.h"
#include "testing/collective_counter.h"

namespace dtensor {
namespace {

namespace F = torch::nn::functional;
using testing::CollectiveCounter;
using testing::Counts;
using testing::error_of;

using Reduction = F::CrossEntropyFuncOptions::reduction_t;

struct Case {
  std::vector<int64_t> shape;  // logits; the class dim is 1 (0 for a 1-D shape)
  Reduction reduction;
  bool weighted;
  int64_t ignore_index;
};

std::string name_of(const Case& c) {
  return c10::str(c10::IntArrayRef(c.shape), " reduction=", torch::enumtype::get_enum_name(c.reduction),
                  " weighted=", c.weighted, " ignore_index=", c.ignore_index);
}

F::CrossEntropyFuncOptions options_of(const Case& c, const at::Tensor& weight) {
  auto options = F::CrossEntropyFuncOptions().reduction(c.reduction).ignore_index(c.ignore_index);
  if (c.weighted) options.weight(weight);
  return options;
}

at::Tensor backward_root(const at::Tensor& loss, const Case& c) {
  // By name: the variant is std:: on 2.x and c10:: on 1.13.
  return torch::enumtype::get_enum_name(c.reduction) == "kNone" ? loss.sum() : loss;
}

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (std::vector<int64_t> shape : {std::vector<int64_t>{8, 16}, {8, 16, 12}, {16}}) {
    for (Reduction r : {Reduction(torch::kNone), Reduction(torch::kMean), Reduction(torch::kSum)}) {
      for (bool weighted : {false, true}) {
        for (int64_t ignore_index : {-100, 3}) cases.push_back({shape, r, weighted, ignore_index});
      }
    }
  }
  return cases;
}

// Runs every case on a 1-D mesh of `world_size` ranks over `classes` classes.
void check_matches_one_device(int64_t world_size, int64_t classes) {
  torch::manual_seed(0);
  const at::Tensor weight = torch::rand({classes}, torch::kDouble);
  for (Case c : all_cases()) {
    c.shape[c.shape.size() >= 2 ? 1 : 0] = classes;
    SCOPED_TRACE(name_of(c));
    const int64_t class_dim = c.shape.size() >= 2 ? 1 : 0;
    const at::Tensor logits = torch::randn(c.shape, torch::kDouble);
    std::vector<int64_t> target_shape = c.shape;
    target_shape.erase(target_shape.begin() + class_dim);
    at::Tensor target = torch::randint(classes, target_shape, torch::kLong);
    if (target.dim() > 0) target.view({-1})[0] = c.ignore_index;  // one ignored entry
    at::Tensor ref_x = logits.clone().requires_grad_(true);
    at::Tensor ref_loss = F::cross_entropy(ref_x, target, options_of(c, weight));
    backward_root(ref_loss, c).backward();

    run_fake_world(world_size, [&](World& world) {
      auto mesh = DeviceMesh::init(c10::kCPU, {world_size});
      DTensor x = distribute_tensor(logits.clone().requires_grad_(true), mesh, {Shard(class_dim)});
      CollectiveCounter counter(world);
      auto guard = loss_parallel();
      at::Tensor loss = F::cross_entropy(x, target, options_of(c, weight));
      EXPECT_EQ(counter.take(), (Counts{{"all_reduce", 3}}));
      ASSERT_TRUE(is_dtensor(loss));
      EXPECT_EQ(DTensor(loss).placements(), (Placements{Replicate()}));
      // equal_nan: a mean over a 1-D input whose one target is ignored is 0 / 0, as on one device.
      EXPECT_TRUE(torch::allclose(DTensor(loss).to_local(), ref_loss, 0, 1e-10, /*equal_nan=*/true))
          << name_of(c) << " rank " << world.rank() << ": " << DTensor(loss).to_local() << " vs " << ref_loss;
      backward_root(loss, c).backward();
      EXPECT_EQ(counter.take(), (Counts{}));
      ASSERT_TRUE(x.grad().defined());
      DTensor grad(x.grad());
      EXPECT_EQ(grad.placements(), (Placements{Shard(class_dim)}));
      EXPECT_TRUE(torch::allclose(grad.full_tensor(), ref_x.grad(), 0, 1e-10, /*equal_nan=*/true)) << name_of(c);
    });
  }
}

TEST(LossParallelTest, CrossEntropyMatchesOneDeviceWithPyTorchCounts) { check_matches_one_device(4, 16); }

TEST(LossParallelTest, UnevenClassShardsAndARankWithoutClasses) {
  check_matches_one_device(3, 16);  // 6, 5, 5 classes
  check_matches_one_device(5, 4);   // 1, 1, 1, 1, 0 classes
}

TEST(LossParallelTest, ReplicatedDTensorTargetAndNllLossOfLogSoftmax) {
  torch::manual_seed(1);
  const at::Tensor logits = torch::randn({6, 10}, torch::kDouble);
  const at::Tensor target = torch::randint(10, {6}, torch::kLong);
  at::Tensor ref_x = logits.clone().requires_grad_(true);
  at::Tensor ref = F::nll_loss(torch::log_softmax(ref_x, 1), target);
  ref.backward();
  run_fake_world(2, [&](World& world) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    DTensor x = distribute_tensor(logits.clone().requires_grad_(true), mesh, {Shard(1)});
    DTensor t = distribute_tensor(target, mesh, {Replicate()});
    CollectiveCounter counter(world);
    LossParallelGuard guard;
    at::Tensor loss = F::nll_loss(torch::log_softmax(x, 1), t);
    loss.backward();
    EXPECT_EQ(counter.take(), (Counts{{"all_reduce", 3}}));
    EXPECT_TRUE(torch::allclose(DTensor(loss).to_local(), ref, 0, 1e-10));
    EXPECT_TRUE(torch::allclose(DTensor(x.grad()).full_tensor(), ref_x.grad(), 0, 1e-10));
  });
}

// Plans made inside the guard are cached apart from those made outside
// (Note [Rule modes]): the same call outside, before and after, issues the
// ordinary collectives and gives the same loss.
TEST(LossParallelTest, OutsideTheGuardBehaviourIsUnchanged) {
  torch::manual_seed(2);
  const at::Tensor logits = torch::randn({8, 16}, torch::kDouble);
  const at::Tensor target = torch::randint(16, {8}, torch::kLong);
  const at::Tensor ref = F::cross_entropy(logits, target);
  run_fake_world(4, [&](World& world) {
    auto mesh = DeviceMesh::init(c10::kCPU, {4});
    DTensor x = distribute_tensor(logits, mesh, {Shard(1)});
    DTensor t = distribute_tensor(target, mesh, {Replicate()});
    CollectiveCounter counter(world);
    at::Tensor before = F::cross_entropy(x, t);
    const Counts outside = counter.take();
    EXPECT_NE(outside, (Counts{{"all_reduce", 3}}));
    {
      auto guard = loss_parallel();
      at::Tensor inside = F::cross_entropy(x, t);
      EXPECT_EQ(counter.take(), (Counts{{"all_reduce", 3}}));
      EXPECT_TRUE(torch::allclose(DTensor(inside).to_local(), ref, 0, 1e-10));
    }
    at::Tensor after = F::cross_entropy(x, t);
    EXPECT_EQ(counter.take(), outside);
    EXPECT_TRUE(torch::allclose(DTensor(before).full_tensor(), ref, 0, 1e-10));
    EXPECT_TRUE(torch::allclose(DTensor(after).full_tensor(), ref, 0, 1e-10));
    // A plain target is refused outside the guard, as before.
    EXPECT_NE(error_of([&] { F::cross_entropy(x, target); }).find("plain tensor"), std::string::npos);
  });
}

void expect_contains(const std::string& text, const std::vector<std::string>& parts) {
  EXPECT_FALSE(text.empty()) << "expected an error";
  for (const auto& part : parts) EXPECT_NE(text.find(part), std::string::npos) << "'" << part << "' not in: " << text;
}

TEST(LossParallelTest, ErrorsSayWhatToDo) {
  const at::Tensor logits = torch::randn({8, 16}, torch::kDouble);
  const at::Tensor target = torch::randint(16, {8}, torch::kLong);
  run_fake_world(4, [&](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {4});
    auto guard = loss_parallel();
    for (const Placement& p : {Shard(0), Replicate()}) {
      SCOPED_TRACE(p.to_string());
      DTensor x = distribute_tensor(logits, mesh, {p});
      expect_contains(error_of([&] { F::cross_entropy(x, target); }),
                      {"aten::_log_softmax", "loss_parallel expects the input sharded on dim 1", "Shard(class_dim)"});
    }
    DTensor x = distribute_tensor(logits, mesh, {Shard(1)});
    DTensor sharded_target = distribute_tensor(target, mesh, {Shard(0)});
    expect_contains(error_of([&] { F::cross_entropy(x, sharded_target); }),
                    {"aten::nll_loss_forward", "target replicated", "[S(0)]"});
    // Label smoothing is refused, as by PyTorch (its smoothing term masks a
    // DTensor with the plain target).
    EXPECT_FALSE(error_of([&] { F::cross_entropy(x, target, F::CrossEntropyFuncOptions().label_smoothing(0.1)); })
                     .empty());
    auto mesh2d = DeviceMesh::init(c10::kCPU, {2, 2}, {"dp", "tp"});
    DTensor x2d = distribute_tensor(logits, mesh2d, {Replicate(), Shard(1)});
    expect_contains(error_of([&] { F::cross_entropy(x2d, target); }), {"1-D mesh only", "mesh[\"tp\"]"});
  });
}

}  // namespace
}  // namespace dtensor
