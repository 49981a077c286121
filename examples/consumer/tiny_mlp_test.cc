// The user's sharding test: TinyMlp under its plan on 4 fake ranks equals
// the module on one device (values and gradients) with one all_reduce forward.
#include <gtest/gtest.h>

#include "core/dtensor.h"
#include "core/parallel/parallelize.h"
#include "testing/dtensor_test.h"
#include "tiny_mlp.h"

namespace consumer {
namespace {

at::Tensor input() { return at::arange(32, at::kFloat).reshape({4, 8}).div(32); }

DTENSOR_TEST(TinyMlpTest, ShardedMatchesOneDevice, /*world_size=*/4) {
  TinyMlp reference;
  at::Tensor x_ref = input().requires_grad_(true);
  at::Tensor y_ref = reference->forward(x_ref);
  y_ref.sum().backward();

  TinyMlp model;
  dtensor::parallelize_module(*model, dtensor::testing::make_mesh(), tiny_mlp_plan());
  at::Tensor x = input().requires_grad_(true);
  at::Tensor y;
  EXPECT_COMM_COUNTS([&] { y = model->forward(x); }, {{"all_reduce", 1}});
  EXPECT_DTENSOR_EQ(y, y_ref, 1e-6);
  y.sum().backward();
  EXPECT_PLACEMENTS(model->fc1->weight, "S(0)");
  EXPECT_DTENSOR_EQ(model->fc1->weight.grad(), reference->fc1->weight.grad(), 1e-6);
  EXPECT_DTENSOR_EQ(model->fc2->weight.grad(), reference->fc2->weight.grad(), 1e-6);
}

}  // namespace
}  // namespace consumer
