// The propagation cache under eviction: a rule or a local kernel that issues
// DTensor ops of its own may clear the cache while the op that called it
// still uses its plan (See Note [Cache eviction]).
#include <gtest/gtest.h>
#include <torch/utils.h>

#include "backends/fake/fake_world.h"
#include "core/dispatch/sharding_propagator.h"
#include "core/dispatch/sharding_registry.h"
#include "core/dtensor.h"
#include "core/dtensor_impl.h"
#include "core/init.h"
#include "core/ops/builtin_rules.h"

namespace dtensor {
namespace {

constexpr const char* kNestedKernel = "test::kernel_issuing_dtensor_ops";

// Restores the built-in rules and the default capacity when a test ends.
struct RestoreBuiltins {
  ~RestoreBuiltins() {
    register_builtin_rules(ShardingRegistry::global());
    set_propagation_cache_capacity(8192);
  }
};

// Several DTensor ops of distinct shapes: each is a cache miss.
void issue_dtensor_ops(const DeviceMesh& mesh) {
  for (int64_t n = 1; n <= 3; ++n) {
    DTensor t = DTensor::from_local(torch::ones({n, 3}), mesh, {Replicate()});
    DTensor u = t.mul(2);
    ASSERT_EQ(u.placements(), (Placements{Replicate()}));
  }
}

// erfinv keeps its input's Shard(0); its plan names kNestedKernel.
ShardingPlan erfinv_rule(const OpCall& call) {
  ShardingPlan plan;
  plan.input_placements = {{Shard(0)}};
  plan.output_placements = {{Shard(0)}};
  plan.local_kernel = kNestedKernel;
  issue_dtensor_ops(call.mesh);  // on a full cache: evicts while this rule runs
  return plan;
}

TEST(ShardingPropagatorTest, PlanSurvivesEvictionByItsOwnLocalKernel) {
  init();
  RestoreBuiltins restore;
  ShardingRegistry::global().add({"aten::erfinv"}, erfinv_rule);
  ShardingRegistry::global().add_local_kernel(kNestedKernel, [](const LocalCall& local, std::vector<c10::IValue>* stack) {
    issue_dtensor_ops(local.call.mesh);  // evicts the entry of the op now running
    local.call.op->callBoxed(stack);
  });
  const at::Tensor x = torch::rand({8, 4}, torch::kDouble).mul(1.8).sub(0.9);
  run_fake_world(2, [&](World&) {
    set_propagation_cache_capacity(1);  // every miss clears the cache
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    DTensor in = distribute_tensor(x, mesh, {Shard(0)});
    for (int step = 0; step < 3; ++step) {
      SCOPED_TRACE(step);
      DTensor out = torch::erfinv(in);
      // Read from the plan after the kernel evicted it: with a reference into
      // the cache these were freed memory.
      EXPECT_EQ(out.placements(), (Placements{Shard(0)}));
      EXPECT_EQ(out.sizes(), (c10::IntArrayRef{8, 4}));
      EXPECT_EQ(out.local_tensor().sizes(), (c10::IntArrayRef{4, 4}));
      EXPECT_TRUE(torch::allclose(out.full_tensor(), torch::erfinv(x)));
      EXPECT_LE(propagation_cache_stats().size, 1u);
    }
  });
}

TEST(ShardingPropagatorTest, ResultsHeldByCallersOutliveTheCache) {
  init();
  RestoreBuiltins restore;
  run_fake_world(2, [&](World&) {
    set_propagation_cache_capacity(1);
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    DTensor a = DTensor::from_local(torch::ones({2, 5}), mesh, {Shard(0)});
    const c10::OperatorHandle neg = c10::Dispatcher::singleton().findSchemaOrThrow("aten::neg", "");
    std::vector<c10::IValue> args{a};
    OpCall call;
    call.op = &neg;
    call.name = "aten::neg";
    call.args = &args;
    call.mesh = mesh;
    call.inputs = {dtensor_impl(a)->spec()};
    call.positions = {TensorArgPosition{0, -1}};
    std::shared_ptr<const PropagationResult> held = propagate(call, /*arg_key=*/{8});
    issue_dtensor_ops(mesh);  // evicts `held` from the cache
    EXPECT_EQ(held.use_count(), 1);  // only this caller keeps it alive
    EXPECT_EQ(held->plan.output_placements, (std::vector<Placements>{{Shard(0)}}));
    EXPECT_EQ(held->output_metas.at(0).shape, (std::vector<int64_t>{4, 5}));
  });
}

TEST(ShardingPropagatorTest, CapacityMustHoldAnEntry) {
  EXPECT_THROW(set_propagation_cache_capacity(0), c10::Error);
}

}  // namespace
}  // namespace dtensor
