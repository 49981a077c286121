// dtensor::nn::checkpoint (core/nn/checkpoint.h): gradients equal those of
// the same computation without it, parameters' and inputs' alike; dropout
// recomputes the same mask; no grad mode is a plain call; the recomputation
// runs in backward.
#include "core/nn/checkpoint.h"

#include <gtest/gtest.h>
#include <torch/csrc/autograd/function.h>
#include <torch/nn/modules/linear.h>
#include <torch/utils.h>

#include <vector>

namespace dtensor {
namespace {

struct Twin {
  torch::nn::Linear a{nullptr}, b{nullptr};
  explicit Twin(uint64_t seed) {
    torch::manual_seed(seed);
    a = torch::nn::Linear(6, 8);
    b = torch::nn::Linear(8, 3);
    a->to(torch::kDouble);
    b->to(torch::kDouble);
  }
  at::Tensor body(const at::Tensor& x, double dropout) {
    at::Tensor h = at::tanh(a->forward(x));
    if (dropout > 0) h = at::dropout(h, dropout, /*train=*/true);
    return b->forward(h);
  }
};

void expect_same_gradients(Twin& plain, Twin& checkpointed, const at::Tensor& x1, const at::Tensor& x2) {
  EXPECT_TRUE(at::allclose(x1.grad(), x2.grad(), 1e-12, 1e-12));
  EXPECT_TRUE(at::allclose(plain.a->weight.grad(), checkpointed.a->weight.grad(), 1e-12, 1e-12));
  EXPECT_TRUE(at::allclose(plain.b->bias.grad(), checkpointed.b->bias.grad(), 1e-12, 1e-12));
}

TEST(ActivationCheckpointTest, GradientsEqualThoseWithoutIt) {
  for (double dropout : {0.0, 0.5}) {
    Twin plain(3), checkpointed(3);
    at::Tensor x1 = at::randn({5, 6}, at::kDouble).requires_grad_();
    at::Tensor x2 = x1.detach().clone().requires_grad_();
    torch::manual_seed(11);
    plain.body(x1, dropout).pow(2).sum().backward();
    torch::manual_seed(11);
    bool recomputed_in_backward = false;
    int runs = 0;
    at::Tensor y = nn::checkpoint(
        [&](const nn::TensorList& in) {
          ++runs;
          recomputed_in_backward = runs == 2 && at::GradMode::is_enabled();
          return checkpointed.body(in[0], dropout);
        },
        {x2});
    EXPECT_EQ(runs, 1);
    EXPECT_EQ(y.grad_fn()->name(), "dtensor::CheckpointBackward");
    at::manual_seed(999);  // backward must not depend on the generator's state now
    y.pow(2).sum().backward();
    EXPECT_EQ(runs, 2);
    EXPECT_TRUE(recomputed_in_backward);
    expect_same_gradients(plain, checkpointed, x1, x2);
  }
}

TEST(ActivationCheckpointTest, InputsWithoutGradStillGiveParameterGradients) {
  Twin plain(4), checkpointed(4);
  const at::Tensor x = at::randn({3, 6}, at::kDouble);
  plain.body(x, 0).sum().backward();
  nn::checkpoint([&](const nn::TensorList& in) { return checkpointed.body(in[0], 0); }, {x}).sum().backward();
  EXPECT_TRUE(at::allclose(plain.a->weight.grad(), checkpointed.a->weight.grad(), 1e-12, 1e-12));
}

TEST(ActivationCheckpointTest, NoGradIsAPlainCall) {
  Twin twin(5);
  at::NoGradGuard no_grad;
  int runs = 0;
  at::Tensor y = nn::checkpoint(
      [&](const nn::TensorList& in) {
        ++runs;
        return twin.body(in[0], 0);
      },
      {at::randn({2, 6}, at::kDouble)});
  EXPECT_EQ(runs, 1);
  EXPECT_FALSE(y.requires_grad());
}

}  // namespace
}  // namespace dtensor
