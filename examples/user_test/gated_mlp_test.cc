// How to unit-test your own sharding: GatedMLP (gated_mlp.h) under its TP plan
// on 2 and 4 ranks, checked against the same module on one device for
// values, gradients, placements and collectives, with //testing:gtest.
// Runs on the fake world; DTENSOR_TEST_BACKENDS=fake,gloo adds Gloo processes.
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>

#include "core/dtensor.h"
#include "core/parallel/parallelize.h"
#include "debug/comm_debug_mode.h"
#include "examples/user_test/gated_mlp.h"
#include "testing/dtensor_test.h"

namespace user_test {
namespace {

using dtensor::World;
using namespace dtensor::testing;  // NOLINT: make_mesh, run_on_ranks, rank_configs, ...

constexpr double kTol = 1e-5;

// The same input on every rank (a private generator: the global one is shared
// by the threads of a fake world).
at::Tensor input(uint64_t seed) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  return at::randn({4, 8}, gen);
}

// The simplest form: a test body on 4 fake ranks.
DTENSOR_TEST(GatedMLPShardingTest, ForwardMatchesOneDevice, /*world_size=*/4) {
  GatedMLP reference;
  GatedMLP model;  // same seed: same parameters
  dtensor::parallelize_module(*model, make_mesh(), gated_mlp_tp_plan());

  const at::Tensor x = input(/*seed=*/7);
  EXPECT_DTENSOR_EQ(model->forward(x), reference->forward(x), kTol);
  EXPECT_PLACEMENTS(model->gate->weight, "S(0)");
  EXPECT_PLACEMENTS(model->down->weight, "S(1)");
  EXPECT_PLACEMENTS(model->down->bias, "R");
  EXPECT_COMM_COUNTS([&] { model->forward(x); }, {{"all_reduce", 1}});  // down's partial sums
}

// Parametrised over mesh sizes (and backends with DTENSOR_TEST_BACKENDS).
class GatedMLPTest : public DTensorTest {};

DTENSOR_TEST_P(GatedMLPTest, GradientsMatchOneDevice) {
  GatedMLP reference;
  at::Tensor x_ref = input(/*seed=*/3).requires_grad_(true);
  reference->forward(x_ref).pow(2).sum().backward();

  GatedMLP model;
  dtensor::parallelize_module(*model, make_mesh(), gated_mlp_tp_plan());
  at::Tensor x = input(/*seed=*/3).requires_grad_(true);
  dtensor::debug::CommDebugMode comm;
  {
    auto guard = comm.enter(*model, "GatedMLP");
    model->forward(x).pow(2).sum().backward();
  }
  // Parameter gradients are DTensors laid out as their parameters.
  EXPECT_PLACEMENTS(model->up->weight.grad(), "S(0)");
  EXPECT_DTENSOR_EQ(model->gate->weight.grad(), reference->gate->weight.grad(), kTol);
  EXPECT_DTENSOR_EQ(model->gate->bias.grad(), reference->gate->bias.grad(), kTol);
  EXPECT_DTENSOR_EQ(model->up->weight.grad(), reference->up->weight.grad(), kTol);
  EXPECT_DTENSOR_EQ(model->down->weight.grad(), reference->down->weight.grad(), kTol);
  EXPECT_DTENSOR_EQ(model->down->bias.grad(), reference->down->bias.grad(), kTol);
  EXPECT_DTENSOR_EQ(x.grad(), x_ref.grad(), kTol);

  // Forward: down reduces its partial sums. Backward: the input's gradient
  // through gate and through up is partial on every rank and is reduced once
  // each (Global counts every module's collectives; the golden has them per
  // module).
  EXPECT_COMM_COUNTS(comm, {{"all_reduce", 3}});
  EXPECT_COMM_MODULE_COUNTS(comm, "GatedMLP.down", "forward", {{"all_reduce", 1}});
  EXPECT_COMM_MODULE_COUNTS(comm, "Global", "backward", {{"all_reduce", 2}});
  EXPECT_MATCHES_GOLDEN(comm, "examples/user_test/testdata/gated_mlp_" + config().name() + ".golden.json");
}

INSTANTIATE_TEST_SUITE_P(Meshes, GatedMLPTest, ::testing::ValuesIn(rank_configs({{2}, {4}})), RankConfigName());

}  // namespace
}  // namespace user_test
