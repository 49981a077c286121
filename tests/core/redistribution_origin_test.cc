// Origins of collectives (Note [Collective origins] in
// core/redistribution_origin.h) and strict mode (ExplicitRedistributionGuard):
// every DTensor path that communicates says why, explicit APIs by name,
// sharding propagation with the op, the input, the strategy chosen and the
// cheapest one rejected; strict mode raises, warns once per call site, or
// allows, as PyTorch's ExplicitRedistributionContext.
#include <gtest/gtest.h>
#include <torch/utils.h>

#include <string>

#include "backends/fake/fake_world.h"
#include "core/dispatch/explicit_redistribution.h"
#include "core/dtensor.h"
#include "core/redistribution_origin.h"
#include "testing/collective_counter.h"

namespace dtensor {
namespace {

using testing::CollectiveCounter;

std::string step_text(const CollectiveOrigin& o) { return o.step ? o.step->to_string() : "(no step)"; }

const CollectiveOrigin& origin_of(const CollectiveEvent& e) {
  static const CollectiveOrigin kNone;
  EXPECT_NE(e.origin, nullptr) << e.to_string() << " has no origin";
  return e.origin ? *e.origin : kNone;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(RedistributionOriginTest, ExplicitApisNameThemselves) {
  run_fake_world(4, [](World& world) {
    DeviceMesh mesh = DeviceMesh::init(c10::kCPU, {4});
    const at::Tensor full = torch::arange(32, torch::kFloat).reshape({8, 4});
    CollectiveCounter counter(world);
    DTensor x = distribute_tensor(full, mesh, {Shard(0)});
    ASSERT_EQ(counter.events().size(), 1u);  // scatter
    const CollectiveOrigin& d = origin_of(counter.events()[0]);
    EXPECT_TRUE(d.is_explicit);
    EXPECT_EQ(d.cause, "distribute_tensor");
    EXPECT_EQ(to_string(d.to_placements), "[S(0)]");
    EXPECT_EQ(d.mesh_dim, 0);
    EXPECT_EQ(step_text(d), "R -> S(0)");
    counter.clear();

    x.redistribute({Replicate()});
    ASSERT_EQ(counter.events().size(), 1u);
    const CollectiveOrigin& r = origin_of(counter.events()[0]);
    EXPECT_TRUE(r.is_explicit);
    EXPECT_EQ(r.cause, "redistribute");
    EXPECT_EQ(r.op, "DTensor::redistribute");
    EXPECT_EQ(r.input_index, -1);
    EXPECT_EQ(to_string(r.from_placements), "[S(0)]");
    EXPECT_EQ(to_string(r.to_placements), "[R]");
    EXPECT_EQ(step_text(r), "S(0) -> R");
    EXPECT_EQ(origin_summary(r), "explicit redistribute (DTensor::redistribute), S(0) -> R");
    counter.clear();

    // full_tensor calls redistribute: the outer API names the cause.
    x.full_tensor();
    ASSERT_EQ(counter.events().size(), 1u);
    EXPECT_EQ(origin_of(counter.events()[0]).cause, "full_tensor");
    EXPECT_EQ(origin_of(counter.events()[0]).op, "DTensor::full_tensor");
    counter.clear();

    // A communicator called directly has no origin.
    at::Tensor t = torch::ones({2});
    mesh.communicator(0).all_reduce(t);
    ASSERT_EQ(counter.events().size(), 1u);
    EXPECT_EQ(counter.events()[0].origin, nullptr);
  });
}

TEST(RedistributionOriginTest, BackwardOfExplicitApisIsExplicit) {
  run_fake_world(2, [](World& world) {
    DeviceMesh mesh = DeviceMesh::init(c10::kCPU, {2});
    at::Tensor local = torch::ones({4, 3}, torch::requires_grad());
    DTensor x = DTensor::from_local(local, mesh, {Replicate()});
    DTensor y = x.redistribute({Shard(0)});  // local chunk forward; all_gather backward
    at::Tensor loss = y.to_local().sum();
    CollectiveCounter counter(world);
    loss.backward();
    ASSERT_EQ(counter.events().size(), 1u);
    const CollectiveOrigin& o = origin_of(counter.events()[0]);
    EXPECT_TRUE(o.is_explicit);
    EXPECT_EQ(o.cause, "redistribute_backward");
    EXPECT_EQ(o.op, "DTensor::redistribute backward");
    EXPECT_EQ(step_text(o), "S(0) -> R");
    // Called from full_tensor: its backward names full_tensor.
    DTensor z = DTensor::from_local(local, mesh, {Shard(1)});
    at::Tensor full = z.full_tensor();
    counter.clear();
    full.sum().backward();
    for (const CollectiveEvent& e : counter.events()) {
      EXPECT_EQ(origin_of(e).cause, "full_tensor") << origin_summary(origin_of(e));
      EXPECT_EQ(origin_of(e).op, "DTensor::full_tensor backward");
    }
  });
}

TEST(RedistributionOriginTest, ImplicitRedistributionNamesOpInputAndStrategies) {
  run_fake_world(4, [](World& world) {
    DeviceMesh mesh = DeviceMesh::init(c10::kCPU, {4});
    // Gathering the small b (16 x 8) beats moving the large a (64 x 16).
    DTensor a = distribute_tensor(torch::randn({64, 16}), mesh, {Shard(0)});
    DTensor b = distribute_tensor(torch::randn({16, 8}), mesh, {Shard(0)});
    CollectiveCounter counter(world);
    at::mm(a, b);  // b must be Replicate (or a Shard(1)): one all_gather
    ASSERT_EQ(counter.events().size(), 1u) << counter.events()[0].to_string();
    const CollectiveOrigin& o = origin_of(counter.events()[0]);
    EXPECT_FALSE(o.is_explicit);
    EXPECT_EQ(o.cause, "implicit");
    EXPECT_EQ(o.op, "aten::mm");
    EXPECT_EQ(o.input_index, 1);
    EXPECT_EQ(to_string(o.from_placements), "[S(0)]");
    EXPECT_EQ(to_string(o.to_placements), "[R]");
    EXPECT_EQ(o.mesh_dim, 0);
    EXPECT_EQ(step_text(o), "S(0) -> R");
    EXPECT_EQ(o.strategy, "S(0), R -> S(0)");
    EXPECT_GT(o.strategy_cost, 0);
    EXPECT_FALSE(o.rejected_strategy.empty());
    EXPECT_GE(o.rejected_cost, o.strategy_cost);
    EXPECT_EQ(origin_summary(o), "implicit aten::mm input 1, S(0) -> R");
  });
}

TEST(RedistributionOriginTest, StrictModeRaisesNamingOpInputPlacementsAndCollective) {
  run_fake_world(4, [](World&) {
    DeviceMesh mesh = DeviceMesh::init(c10::kCPU, {4});
    DTensor a = distribute_tensor(torch::randn({64, 16}), mesh, {Shard(0)});
    DTensor b = distribute_tensor(torch::randn({16, 8}), mesh, {Shard(0)});
    ExplicitRedistributionGuard strict;
    try {
      at::mm(a, b);
      ADD_FAILURE() << "expected the implicit all_gather to raise";
    } catch (const c10::Error& e) {
      const std::string m = e.what_without_backtrace();
      EXPECT_TRUE(contains(m, "implicit redistribution of aten::mm input 1")) << m;
      EXPECT_TRUE(contains(m, "[S(0)] -> [R]")) << m;
      EXPECT_TRUE(contains(m, "all_gather_into_tensor on mesh dim 0 (S(0) -> R)")) << m;
      EXPECT_TRUE(contains(m, "redistribute([R])")) << m;
      EXPECT_TRUE(contains(m, "outside any tracked module")) << m;
    }
    // Explicit redistributions pass, and then the op needs none.
    DTensor b_rep = b.redistribute({Replicate()});
    EXPECT_NO_THROW(at::mm(a, b_rep));
    EXPECT_EQ(strict.implicit_count(), 1);
  });
}

TEST(RedistributionOriginTest, WarnOncePerCallSiteAllowAndStrictLocalOnly) {
  run_fake_world(2, [](World&) {
    DeviceMesh mesh = DeviceMesh::init(c10::kCPU, {2});
    DTensor a = distribute_tensor(torch::randn({64, 6}), mesh, {Shard(0)});
    DTensor b = distribute_tensor(torch::randn({6, 4}), mesh, {Shard(0)});
    {
      ExplicitRedistributionGuard warn(RedistributionPolicy::kWarn);
      for (int i = 0; i < 3; ++i) at::mm(a, b);
      EXPECT_EQ(warn.implicit_count(), 3);
      ASSERT_EQ(warn.warnings().size(), 1u) << "one warning per call site";
      EXPECT_TRUE(contains(warn.warnings()[0], "aten::mm input 1"));
    }
    {
      ExplicitRedistributionGuard outer;  // raise
      ExplicitRedistributionGuard allow(RedistributionPolicy::kAllow);  // innermost wins
      EXPECT_NO_THROW(at::mm(a, b));
    }
    // R -> S(1) for b is a local chunk: by default (as PyTorch) it does not
    // trigger; strict=true does.
    DTensor a_rep = distribute_tensor(torch::randn({4, 6}), mesh, {Replicate()});
    DTensor b_col = distribute_tensor(torch::randn({6, 4}), mesh, {Replicate()});
    DTensor s1 = DTensor(at::mm(a_rep, b_col)).redistribute({Shard(1)});
    {
      ExplicitRedistributionGuard relaxed;
      EXPECT_NO_THROW(at::add(s1, a_rep.narrow(1, 0, 4)));
    }
    {
      ExplicitRedistributionOptions options;
      options.strict = true;
      ExplicitRedistributionGuard strict(options);
      EXPECT_THROW(at::add(s1, a_rep.narrow(1, 0, 4)), c10::Error);
    }
  });
}

}  // namespace
}  // namespace dtensor
