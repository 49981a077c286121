// The unboxed fast path (Note [Unboxed fast path] in
// core/dispatch/fast_kernels.cc): a repeated call on the same DTensors runs
// unboxed and gives what one device gives; every call it cannot take
// (a miss, a redistribution, a local size that differs from the global one,
// a plain tensor) takes the boxed kernel with the same result.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>

#include "backends/fake/fake_world.h"
#include "core/dispatch/sharding_propagator.h"
#include "core/dtensor.h"
#include "core/dtensor_impl.h"
#include "core/init.h"

namespace dtensor {
namespace {

uint64_t unboxed_calls() { return propagation_cache_stats().unboxed; }

TEST(FastKernelsTest, RepeatedCallsRunUnboxedAndMatchOneDevice) {
  init();
  const at::Tensor x = torch::randn({6, 4}, torch::kDouble);
  const at::Tensor y = torch::randn({6, 4}, torch::kDouble);
  run_fake_world(2, [&](World&) {
    const DeviceMesh mesh = DeviceMesh::init(c10::kCPU, {2});
    DTensor a = distribute_tensor(x, mesh, {Shard(0)});
    DTensor b = distribute_tensor(y, mesh, {Shard(0)});
    const DTensor first = a.add(b).mul(b);  // decided: boxed
    const PropagationCacheStats before = propagation_cache_stats();
    const DTensor again = a.add(b).mul(b);
    const PropagationCacheStats after = propagation_cache_stats();
    EXPECT_EQ(after.misses, before.misses);
    EXPECT_EQ(after.hits, before.hits + 2);  // counted once each
    EXPECT_EQ(after.unboxed, before.unboxed + 2);
    EXPECT_TRUE(torch::allclose(again.full_tensor(), (x + y) * y));
    // The output shares the decision's spec (Note [Shared output specs]).
    EXPECT_EQ(dtensor_impl(again)->shared_spec().get(), dtensor_impl(first)->shared_spec().get());
    EXPECT_EQ(again.placements(), (Placements{Shard(0)}));
  });
}

TEST(FastKernelsTest, InPlaceOpReturnsTheDTensorPassedIn) {
  init();
  const at::Tensor x = torch::randn({4, 4});
  run_fake_world(2, [&](World&) {
    const DeviceMesh mesh = DeviceMesh::init(c10::kCPU, {2});
    DTensor a = distribute_tensor(x, mesh, {Shard(1)});
    DTensor b = distribute_tensor(x, mesh, {Shard(1)});
    a.add_(b, 2.0);
    const uint64_t before = unboxed_calls();
    at::Tensor& out = a.add_(b, 2.0);  // the same key (an alpha of 1 would be an int: another key)
    EXPECT_EQ(&out, static_cast<at::Tensor*>(&a));
    EXPECT_EQ(unboxed_calls(), before + 1);
    EXPECT_TRUE(torch::allclose(a.full_tensor(), x * 5));
  });
}

TEST(FastKernelsTest, ViewKeepsTheFastPathOnlyWhereTheLocalSizeIsTheGlobalOne) {
  init();
  const at::Tensor x = torch::arange(24, torch::kFloat).reshape({4, 6});
  run_fake_world(2, [&](World&) {
    const DeviceMesh mesh = DeviceMesh::init(c10::kCPU, {2});
    DTensor replicated = distribute_tensor(x, mesh, {Replicate()});
    DTensor sharded = distribute_tensor(x, mesh, {Shard(0)});
    // The identity table keeps each operator's last decision, so each view
    // is repeated right after itself.
    replicated.view({24});
    uint64_t before = unboxed_calls();
    const DTensor whole = replicated.view({24});
    EXPECT_EQ(unboxed_calls(), before + 1);
    sharded.view({4, 2, 3});
    before = unboxed_calls();
    const DTensor split = sharded.view({4, 2, 3});  // local size [2, 2, 3]: boxed, with the override
    EXPECT_EQ(unboxed_calls(), before);
    EXPECT_TRUE(torch::equal(whole.full_tensor(), x.view({24})));
    EXPECT_TRUE(torch::equal(split.full_tensor(), x.view({4, 2, 3})));
    EXPECT_EQ(split.to_local().sizes(), (std::vector<int64_t>{2, 2, 3}));
  });
}

TEST(FastKernelsTest, RedistributingCallsAndPlainTensorsTakeTheBoxedKernel) {
  init();
  const at::Tensor x = torch::randn({4, 6}, torch::kDouble);
  const at::Tensor w = torch::randn({6, 3}, torch::kDouble);
  run_fake_world(2, [&](World&) {
    const DeviceMesh mesh = DeviceMesh::init(c10::kCPU, {2});
    DTensor a = distribute_tensor(x, mesh, {Shard(1)});
    DTensor b = distribute_tensor(w, mesh, {Shard(1)});  // mm gathers one of them
    a.mm(b);
    const uint64_t before = unboxed_calls();
    const DTensor product = a.mm(b);
    const DTensor scaled = a.mul(torch::tensor(3.0, torch::kDouble));  // a plain one-element tensor
    EXPECT_EQ(unboxed_calls(), before);
    EXPECT_TRUE(torch::allclose(product.full_tensor(), x.mm(w)));
    EXPECT_TRUE(torch::allclose(scaled.full_tensor(), x * 3));
  });
}

// (Such an error is found on the meta tensors, before any decision is
// cached: the local op's own failures, which the fast path hands to the
// boxed kernel, need operands that meta inference accepts.)
TEST(FastKernelsTest, FailingOpReportsTheOpAndItsOperands) {
  init();
  run_fake_world(2, [&](World&) {
    const DeviceMesh mesh = DeviceMesh::init(c10::kCPU, {2});
    DTensor ints = distribute_tensor(torch::ones({4, 2}, torch::kLong), mesh, {Shard(0)});
    DTensor floats = distribute_tensor(torch::full({4, 2}, 0.5), mesh, {Shard(0)});
    for (int call = 0; call < 2; ++call) {
      try {
        ints.add_(floats);
        ADD_FAILURE() << "an in-place add of float into long must fail";
      } catch (const c10::Error& e) {
        const std::string message = e.what_without_backtrace();
        EXPECT_NE(message.find("aten::add_.Tensor"), std::string::npos) << message;
        EXPECT_NE(message.find("[S(0)] Long[4, 2], [S(0)] Float[4, 2]"), std::string::npos) << message;
      }
    }
    EXPECT_TRUE(torch::equal(ints.full_tensor(), torch::ones({4, 2}, torch::kLong)));
  });
}

}  // namespace
}  // namespace dtensor
