// Regression tests for bugs the op harness found outside the rule families
// (core/ops/view_rules.cc, core/ops/tensor_rules.cc).
#include <gtest/gtest.h>
#include <torch/utils.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "backends/fake/fake_world.h"
#include "core/compat/torch_compat.h"
#include "core/dtensor.h"
#include "testing/collective_counter.h"

namespace dtensor {
namespace {

// view_rules.cc: in-place views whose shard dim moves (squeeze_, unsqueeze_,
// transpose_, t_) were refused, since the written tensor "must keep" its
// placements; torch::matmul(vector, matrix [S(1)]) ends in squeeze_(0).
// aten::is_same_size (PyTorch's DTensor benchmark's "custom handler" case):
// global shapes compared whatever the placements (uneven shards, where the
// local shapes differ across ranks), no collective. It had no rule.
TEST(RegressionTest, IsSameSizeComparesGlobalShapesWithoutCollectives) {
  run_fake_world(4, [](World& world) {
    auto mesh = DeviceMesh::init(c10::kCPU, {4});
    DTensor rows = distribute_tensor(at::ones({6, 3}), mesh, {Shard(0)});  // 2, 2, 2, 0 rows
    DTensor replicated = distribute_tensor(at::ones({6, 3}), mesh, {Replicate()});
    DTensor other = distribute_tensor(at::ones({3, 6}), mesh, {Shard(1)});
    testing::CollectiveCounter count(world);
    EXPECT_TRUE(at::is_same_size(rows, replicated));
    EXPECT_FALSE(at::is_same_size(rows, other));
    EXPECT_EQ(count.total(), 0);
  });
}

// aten::equal gathered both tensors (2 all_gathers of the whole tensor on
// the validation corpus, issue #33); PyTorch 2.15 lays both out alike for
// free and agrees with one all_reduce. Now: each rank compares its shards,
// a Replicate operand chunked to the other's shard, and one all_reduce(min)
// (over the flattened mesh when two mesh dims shard). Different global
// shapes are unequal with no collective.
TEST(RegressionTest, EqualComparesShardsWithOneAllReduce) {
  const at::Tensor g = at::arange(24, at::kDouble).reshape({4, 6});
  at::Tensor changed = g.clone();
  changed[3][5] = -1;  // on the last rank's shard only
  run_fake_world(4, [&](World& world) {
    auto mesh = DeviceMesh::init(c10::kCPU, {4});
    DTensor rows = distribute_tensor(g, mesh, {Shard(0)});
    DTensor same = distribute_tensor(g, mesh, {Replicate()});
    DTensor other = distribute_tensor(changed, mesh, {Replicate()});
    DTensor transposed = distribute_tensor(g.t().contiguous(), mesh, {Shard(0)});
    testing::CollectiveCounter count(world);
    EXPECT_TRUE(at::equal(rows, same));
    EXPECT_FALSE(at::equal(rows, other));
    EXPECT_EQ(count.counts(), (testing::Counts{{"all_reduce", 2}}));
    EXPECT_FALSE(at::equal(rows, transposed));
    EXPECT_EQ(count.total(), 2);
  });
  run_fake_world(4, [&](World& world) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2, 2});
    DTensor a = distribute_tensor(g, mesh, {Replicate(), Shard(1)});
    DTensor b = distribute_tensor(changed, mesh, {Shard(0), Replicate()});
    DTensor c = distribute_tensor(g, mesh, {Shard(0), Replicate()});
    testing::CollectiveCounter count(world);
    EXPECT_FALSE(at::equal(a, b));
    EXPECT_TRUE(at::equal(a, c));
    EXPECT_EQ(count.counts(), (testing::Counts{{"all_reduce", 2}}));
  });
}

TEST(RegressionTest, InPlaceSqueezeRenumbersTheShard) {
  run_fake_world(4, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {4});
    DTensor x = distribute_tensor(torch::ones({1, 8}), mesh, {Shard(1)});
    x.squeeze_(0);
    EXPECT_EQ(x.placements(), (Placements{Shard(0)}));
  });
}

// tensor_rules.cc made new_empty_strided Replicate. AccumulateGrad calls it
// (clone_obey_contract) when a leaf's gradient arrives with other strides,
// e.g. through a transpose, so a sharded leaf's gradient was gathered and
// stored Replicate. PyTorch keeps the input's placements when the size is the
// input's. Hits attention's key (k.transpose(-2, -1)) and any w.t() use.
TEST(RegressionTest, TransposedGradientOfAShardedLeafStaysSharded) {
  run_fake_world(4, [](World& world) {
    auto mesh = DeviceMesh::init(c10::kCPU, {4});
    at::Tensor x = distribute_tensor(torch::randn({8, 4}), mesh, {Shard(0)}).requires_grad_(true);
    at::Tensor z = distribute_tensor(torch::randn({4, 8}), mesh, {Shard(1)});
    // d loss / d x.t() = z, sharded [S(1)]; through t() it arrives [S(0)]
    // with transposed strides.
    at::Tensor loss = DTensor((x.t() * z).sum()).redistribute({Replicate()});
    testing::CollectiveCounter count(world);
    loss.backward();
    EXPECT_EQ(count.total(), 0);
    DTensor grad(x.grad());
    EXPECT_EQ(grad.placements(), (Placements{Shard(0)}));
    EXPECT_TRUE(torch::equal(grad.full_tensor(), DTensor(z).full_tensor().t()));  // rank 0 data is the truth
  });
}

// The same path with a Partial(sum) gradient (g18_02146: the weight
// gradient of a matmul, transposed): new_empty_strided made a Replicate
// buffer, so copy_ all_reduced the gradient on every mesh dim. PyTorch
// stores it Partial; uninitialized values (and zeros) are exact under any
// Partial, while n ones sum to n, so new_ones still replicates a P(sum).
TEST(RegressionTest, TransposedPartialGradientOfALeafStaysPartial) {
  run_fake_world(4, [](World& world) {
    auto mesh = DeviceMesh::init(c10::kCPU, {4});
    at::Tensor x = distribute_tensor(torch::randn({8, 4}), mesh, {Replicate()}).requires_grad_(true);
    const at::Tensor g_full = torch::arange(32, torch::kFloat).reshape({4, 8}) / 7;  // the same on every rank
    at::Tensor g = distribute_tensor(g_full, mesh, {Partial()});
    // d loss / d x.t() = g, P(sum); through t() it arrives with transposed strides.
    at::Tensor loss = DTensor((x.t() * g).sum()).redistribute({Replicate()});
    testing::CollectiveCounter count(world);
    loss.backward();
    EXPECT_EQ(count.total(), 0);
    DTensor grad(x.grad());
    EXPECT_EQ(grad.placements(), (Placements{Partial()}));
    EXPECT_TRUE(torch::allclose(grad.full_tensor(), g_full.t()));
    DTensor p = distribute_tensor(torch::ones({2, 3}), mesh, {Partial()});
    EXPECT_EQ(DTensor(at::Tensor(p).new_empty_strided({2, 3}, {1, 2})).placements(), (Placements{Partial()}));
    EXPECT_EQ(DTensor(at::Tensor(p).new_zeros({2, 3})).placements(), (Placements{Partial()}));
    DTensor ones(at::Tensor(p).new_ones({2, 3}));
    EXPECT_EQ(ones.placements(), (Placements{Replicate()}));
    EXPECT_TRUE(torch::equal(ones.full_tensor(), torch::ones({2, 3})));
  });
}

// view_rules.cc ran squeeze on the local shards, which drops every local
// size-1 dim: with 6 rows over 4 ranks (2, 2, 1, 1) or 1 column over 2
// (1, 0), some ranks dropped a dim the global op keeps and the ranks then
// issued different collectives (differential program g18_00222: a fake world
// collective mismatch). Each squeeze must equal the op on the full tensor, on
// every rank, in values and gradients.
TEST(RegressionTest, SqueezeFollowsTheGlobalShapeOnUnevenShards) {
  struct Case {
    std::vector<int64_t> mesh;
    std::vector<int64_t> shape;
    Placements placements;
  };
  const std::vector<Case> cases = {
      {{4}, {6, 1}, {Shard(0)}},
      {{4}, {5, 1, 3}, {Shard(0)}},
      {{2}, {3, 1}, {Shard(1)}},
      {{2, 2, 2}, {6, 1}, {Shard(1), Shard(0), Shard(0)}},  // g18_00222
  };
  for (const Case& c : cases) {
    const int64_t world_size = c10::multiply_integers(c.mesh);
    run_fake_world(world_size, [&](World&) {
      auto mesh = DeviceMesh::init(c10::kCPU, c.mesh);
      const at::Tensor full = torch::arange(c10::multiply_integers(c.shape), torch::kDouble).reshape(c.shape);
      std::vector<std::pair<std::string, std::function<at::Tensor(const at::Tensor&)>>> ops = {
          {"squeeze()", [](const at::Tensor& t) { return t.squeeze(); }},
          {"squeeze(0)", [](const at::Tensor& t) { return t.squeeze(0); }},
          {"squeeze(1)", [](const at::Tensor& t) { return t.squeeze(1); }},
          {"squeeze_(0)", [](const at::Tensor& t) { return t.clone().squeeze_(0); }},
      };
#if DTENSOR_TORCH_AT_LEAST(2, 0)
      ops.push_back({"squeeze({0, 1})", [](const at::Tensor& t) { return t.squeeze({0, 1}); }});
#endif
      for (const auto& [name, op] : ops) {
        SCOPED_TRACE(name + " of " + c10::str(c10::IntArrayRef(c.shape)) + " " + to_string(c.placements));
        const at::Tensor expected = op(full);
        at::Tensor x = distribute_tensor(full, mesh, c.placements).requires_grad_(true);
        at::Tensor y = op(x);
        ASSERT_EQ(y.dim(), expected.dim());
        EXPECT_TRUE(torch::equal(DTensor(y).full_tensor(), expected));
        DTensor(y).redistribute(Placements(c.mesh.size(), Replicate())).to_local().sum().backward();
        EXPECT_TRUE(torch::equal(DTensor(x.grad()).full_tensor(), torch::ones_like(full)));
      }
    });
  }
}

// core/dtensor.cc kept a redistribution's input strides when its output was
// a view of the input, which depends on the rank's piece of an uneven tensor:
// the expanded gradient of sum() sliced to [1, 4, 4] S(0) on 4 ranks is a
// copy on the rank holding the row and an (empty) view on the others, so the
// ranks disagreed on the gradient's global strides, and AccumulateGrad took
// it as is on one rank and copied it, with an all_gather, on the others: a
// collective mismatch (differential program g18_01824). Every rank must make
// the same collectives and hold the same gradient.
TEST(RegressionTest, GradientOfAnUnevenShardIsLaidOutAlikeOnEveryRank) {
  std::vector<int64_t> collectives(4, -1);
  run_fake_world(4, [&](World& world) {
    auto mesh = DeviceMesh::init(c10::kCPU, {4});
    at::Tensor x = distribute_tensor(torch::rand({1, 4, 4}, torch::kDouble), mesh, {Shard(0)}).requires_grad_(true);
    testing::CollectiveCounter count(world);
    DTensor(x).redistribute({Shard(0)}).sum().backward();
    collectives[static_cast<size_t>(world.rank())] = count.total();
    const DTensor grad(x.grad());
    EXPECT_EQ(grad.placements(), (Placements{Shard(0)}));
    EXPECT_EQ(grad.strides(), (c10::IntArrayRef{16, 4, 1}));
    EXPECT_TRUE(torch::equal(grad.full_tensor(), torch::ones({1, 4, 4}, torch::kDouble)));
  });
  EXPECT_EQ(collectives, std::vector<int64_t>(4, collectives[0]));
}

}  // namespace
}  // namespace dtensor
