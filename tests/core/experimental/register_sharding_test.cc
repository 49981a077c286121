// register_sharding: a user rule is used (and preferred over the built-in
// one), expanded over every mesh dim, its cached decisions are dropped on
// registration, and bad rules or names fail with clear errors.
#include <gtest/gtest.h>
#include <torch/utils.h>

#include "backends/fake/fake_world.h"
#include "core/dispatch/sharding_registry.h"
#include "core/dtensor.h"
#include "core/experimental/register_sharding.h"
#include "core/ops/builtin_rules.h"

namespace dtensor::experimental {
namespace {

// Restores the built-in rules when a test ends (the registry is per process).
struct RestoreBuiltins {
  ~RestoreBuiltins() { register_builtin_rules(ShardingRegistry::global()); }
};

TEST(RegisterShardingTest, UserRuleForAnOpWithoutOneIsUsed) {
  RestoreBuiltins restore;
  // erfinv is pointwise; pretend it may keep a shard of dim 0 only.
  register_sharding("aten::erfinv", [](const OpCall&) {
    return std::vector<AcceptableSharding>{{{Replicate()}, {Replicate()}}, {{Shard(0)}, {Shard(0)}}};
  });
  const at::Tensor x = torch::rand({8, 4}, torch::kDouble).mul(1.8).sub(0.9);
  run_fake_world(4, [&](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {4});
    DTensor rows = torch::erfinv(distribute_tensor(x, mesh, {Shard(0)}));
    EXPECT_EQ(rows.placements(), (Placements{Shard(0)}));
    EXPECT_TRUE(torch::allclose(rows.full_tensor(), torch::erfinv(x)));
    // S(1) is not acceptable: gathered (for 256 bytes an all_to_all to S(0)
    // costs more, PyTorch's shard-to-shard penalty in Note [Choosing among candidates]).
    DTensor cols = torch::erfinv(distribute_tensor(x, mesh, {Shard(1)}));
    EXPECT_EQ(cols.placements(), (Placements{Replicate()}));
    EXPECT_TRUE(torch::allclose(cols.full_tensor(), torch::erfinv(x)));
  });
}

TEST(RegisterShardingTest, ReplacesTheBuiltInRuleAndDropsCachedPlans) {
  RestoreBuiltins restore;
  const at::Tensor a = torch::randn({8, 4}, torch::kDouble), b = torch::randn({4, 6}, torch::kDouble);
  run_fake_world(2, [&](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    DTensor da = distribute_tensor(a, mesh, {Shard(0)});
    DTensor db = distribute_tensor(b, mesh, {Replicate()});
    EXPECT_EQ(DTensor(torch::mm(da, db)).placements(), (Placements{Shard(0)}));  // built-in, now cached
  });
  // Only "everything replicated" is acceptable now (a rule one might use to debug).
  register_sharding("aten::mm", [](const OpCall&) {
    return std::vector<AcceptableSharding>{{{Replicate()}, {Replicate(), Replicate()}}};
  });
  run_fake_world(2, [&](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    DTensor da = distribute_tensor(a, mesh, {Shard(0)});
    DTensor db = distribute_tensor(b, mesh, {Replicate()});
    DTensor c = torch::mm(da, db);
    EXPECT_EQ(c.placements(), (Placements{Replicate()}));
    EXPECT_TRUE(torch::allclose(c.full_tensor(), torch::mm(a, b)));
  });
}

TEST(RegisterShardingTest, ExpandsOverEveryMeshDimAndSeesArguments) {
  RestoreBuiltins restore;
  // A softmax rule written for one mesh dim: any shard but of the softmax dim.
  register_sharding("aten::_softmax", [](const OpCall& call) {
    const int64_t dim = call.arg(1).toInt();
    std::vector<AcceptableSharding> out{{{Replicate()}, {Replicate()}}};
    for (int64_t d = 0; d < call.inputs[0].ndim(); ++d) {
      if (d != dim) out.push_back({{Shard(d)}, {Shard(d)}});
    }
    return out;
  });
  const at::Tensor x = torch::randn({4, 4, 6}, torch::kDouble);
  run_fake_world(4, [&](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2, 2});
    DTensor y = distribute_tensor(x, mesh, {Shard(0), Shard(1)}).softmax(2);
    EXPECT_EQ(y.placements(), (Placements{Shard(0), Shard(1)}));
    EXPECT_TRUE(torch::allclose(y.full_tensor(), x.softmax(2)));
    DTensor z = distribute_tensor(x, mesh, {Shard(2), Shard(0)}).softmax(2);
    for (const Placement& p : z.placements()) EXPECT_FALSE(p.is_shard(2)) << to_string(z.placements());
    EXPECT_EQ(z.placements()[1], Shard(0));
    EXPECT_TRUE(torch::allclose(z.full_tensor(), x.softmax(2)));
  });
}

TEST(RegisterShardingTest, RejectsUnknownAndCompositeOperators) {
  auto rule = [](const OpCall&) { return std::vector<AcceptableSharding>{}; };
  EXPECT_THROW(register_sharding("aten::no_such_op", rule), c10::Error);
  EXPECT_THROW(register_sharding("relu", rule), c10::Error);
  try {
    register_sharding("aten::matmul", rule);
    ADD_FAILURE() << "aten::matmul is a composite; registration must fail";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find("CompositeImplicitAutograd"), std::string::npos) << e.what();
  }
}

TEST(RegisterShardingTest, WrongArityIsReportedAtTheCall) {
  RestoreBuiltins restore;
  register_sharding("aten::erfinv", [](const OpCall&) {
    return std::vector<AcceptableSharding>{{{Replicate()}, {Replicate(), Replicate()}}};  // erfinv has one input
  });
  run_fake_world(2, [&](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    DTensor x = distribute_tensor(torch::zeros({4}), mesh, {Replicate()});
    try {
      torch::erfinv(x);
      ADD_FAILURE() << "a rule with the wrong number of inputs was accepted";
    } catch (const c10::Error& e) {
      EXPECT_NE(std::string(e.what()).find("returned 2 input placements"), std::string::npos) << e.what();
    }
  });
}

}  // namespace
}  // namespace dtensor::experimental
