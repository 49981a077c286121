// Errors of the DTensor dispatcher and API: each names the op, placements
// and mesh, and says how to proceed; register_sharding and local_map are the
// ways out for unsupported operators.
#include <gtest/gtest.h>
#include <torch/utils.h>

#include "backends/fake/fake_world.h"
#include "core/dispatch/dispatch_mode.h"
#include "core/experimental/local_map.h"
#include "core/experimental/register_sharding.h"
#include "core/dtensor.h"
#include "testing/error_of.h"

namespace dtensor {
namespace {

using testing::error_of;

void expect_contains(const std::string& message, const std::vector<std::string>& parts) {
  for (const auto& part : parts) {
    EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' not in: " << message;
  }
}

TEST(DispatchErrorsTest, UnsupportedOpNamesItAndSuggestsWaysOut) {
  run_fake_world(2, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    DTensor x = distribute_tensor(at::randn({4, 3}), mesh, {Shard(0)});
    std::string msg = error_of<c10::Error>([&] { at::renorm(x, 2, 0, 1.0); });  // PyTorch 2.15 has no strategy either
    expect_contains(msg, {"aten::renorm", "S(0)", "[4, 3]", "register_sharding", "local_map"});
  });
}

TEST(DispatchErrorsTest, RegisterShardingMakesAnOpWork) {
  // special_erfcx is pointwise: any Shard passes through, Partial must be reduced.
  experimental::register_sharding("aten::special_erfcx", [](const OpCall& call) {
    std::vector<experimental::AcceptableSharding> out{{{Replicate()}, {Replicate()}}};
    for (int64_t d = 0; d < static_cast<int64_t>(call.inputs[0].meta.shape.size()); ++d) {
      out.push_back({{Shard(d)}, {Shard(d)}});
    }
    return out;
  });
  const at::Tensor g = at::randn({4, 3}, at::kDouble);  // outside: rank threads share the default generator
  run_fake_world(2, [&](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    DTensor s = at::special_erfcx(distribute_tensor(g, mesh, {Shard(1)}));
    EXPECT_EQ(s.placements(), Placements{Shard(1)});
    EXPECT_TRUE(at::allclose(s.full_tensor(), at::special_erfcx(g)));
    // A Partial input is reduced first; reduce_scatter to S(0) is the cheapest.
    DTensor p = at::special_erfcx(distribute_tensor(g, mesh, {Partial()}));
    EXPECT_EQ(p.placements(), Placements{Shard(0)});
    EXPECT_TRUE(at::allclose(p.full_tensor(), at::special_erfcx(g)));
  });
}

TEST(DispatchErrorsTest, LocalMapRunsAnUnsupportedOpOnShards) {
  const at::Tensor g = at::rand({4, 3}, at::kDouble) - 0.5;
  run_fake_world(2, [&](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    DTensor x = distribute_tensor(g, mesh, {Replicate()});
    x.set_requires_grad(true);
    auto erfinv = experimental::local_map(
        [](const experimental::Tensors& t) { return experimental::Tensors{at::erfinv(t[0])}; },
        {Placements{Shard(0)}}, experimental::PlacementsList{Placements{Shard(0)}},
        /*in_grad_placements=*/std::nullopt, /*mesh=*/std::nullopt, /*redistribute_inputs=*/true);
    DTensor y(erfinv({x})[0]);
    EXPECT_EQ(y.placements(), Placements{Shard(0)});
    EXPECT_TRUE(at::allclose(y.full_tensor(), at::erfinv(g)));
    y.sum().backward();
    ASSERT_TRUE(x.grad().defined());
    at::Tensor ref = g.clone().requires_grad_(true);
    at::erfinv(ref).sum().backward();
    EXPECT_TRUE(at::allclose(DTensor(x.grad()).full_tensor(), ref.grad()));
  });
}

TEST(DispatchErrorsTest, MixedPlainAndDTensorArgumentsAreRefused) {
  run_fake_world(2, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    DTensor x = distribute_tensor(at::ones({4, 2}), mesh, {Shard(0)});
    at::Tensor plain = at::ones({4, 2});
    std::string msg = error_of<c10::Error>([&] { at::add(x, plain); });
    expect_contains(msg, {"aten::add", "plain tensor", "[4, 2]", "distribute_tensor", "ImplicitReplicationGuard"});
    ImplicitReplicationGuard guard;
    DTensor y = x + plain;
    EXPECT_TRUE(at::equal(y.full_tensor(), at::full({4, 2}, 2.0)));
  });
}

TEST(DispatchErrorsTest, DTensorsOnDifferentMeshesAreRefused) {
  run_fake_world(4, [](World&) {
    auto line = DeviceMesh::init(c10::kCPU, {4});
    auto grid = DeviceMesh::init(c10::kCPU, {2, 2});
    DTensor a = distribute_tensor(at::ones({4, 2}), line, {Shard(0)});
    DTensor b = distribute_tensor(at::ones({4, 2}), grid, {Shard(0), Replicate()});
    std::string msg = error_of<c10::Error>([&] { at::mul(a, b); });
    expect_contains(msg, {"aten::mul", "different meshes", "(4)", "(2, 2)"});
  });
}

TEST(DispatchErrorsTest, WrongNumberOfPlacementsIsRefused) {
  run_fake_world(4, [](World&) {
    auto grid = DeviceMesh::init(c10::kCPU, {2, 2});
    std::string msg = error_of<c10::Error>([&] { distribute_tensor(at::ones({4, 2}), grid, {Shard(0)}); });
    expect_contains(msg, {"distribute_tensor", "[S(0)]"});
    msg = error_of<c10::Error>([&] { DTensor::from_local(at::ones({2, 2}), grid, {Shard(0), Replicate(), Replicate()}); });
    expect_contains(msg, {"from_local"});
    DTensor x = distribute_tensor(at::ones({4, 2}), grid, {Shard(0), Replicate()});
    msg = error_of<c10::Error>([&] { x.redistribute({Replicate()}); });
    expect_contains(msg, {"redistribute", "[R]"});
  });
}

TEST(DispatchErrorsTest, ShardDimOutOfRangeIsRefused) {
  run_fake_world(2, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    std::string msg = error_of<c10::Error>([&] { distribute_tensor(at::ones({4, 2}), mesh, {Shard(2)}); });
    expect_contains(msg, {"distribute_tensor", "S(2)"});
    msg = error_of<c10::Error>([&] { distribute_tensor(at::ones({4, 2}), mesh, {Shard(-3)}); });
    expect_contains(msg, {"S(-3)"});
    DTensor x = distribute_tensor(at::ones({4, 2}), mesh, {Shard(-1)});
    EXPECT_EQ(x.placements(), Placements{Shard(1)});
    msg = error_of<c10::Error>([&] { x.redistribute({Shard(5)}); });
    expect_contains(msg, {"S(5)"});
  });
}

TEST(DispatchErrorsTest, PlainTensorIsNotADTensor) {
  std::string msg = error_of<c10::Error>([] { DTensor d(at::ones({2})); });
  expect_contains(msg, {"not a DTensor", "distribute_tensor"});
}

TEST(DispatchErrorsTest, InPlaceOpThatWouldChangeItsOutputPlacementIsRefused) {
  run_fake_world(2, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    DTensor p = distribute_tensor(at::ones({4, 2}), mesh, {Partial()});
    // P + 1 is not a partial sum: the result would have to be Replicate.
    std::string msg = error_of<c10::Error>([&] { p.add_(1.0); });
    expect_contains(msg, {"aten::add_", "P(sum)", "in place"});
  });
}

}  // namespace
}  // namespace dtensor
