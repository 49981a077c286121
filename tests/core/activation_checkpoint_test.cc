// dtensor::nn::checkpoint (core/nn/checkpoint.h): gradients equal those of
// the same computation without it, parameters' and inputs' alike; dropout
// recomputes the same mask; no grad mode is a plain call; the recomputation
// runs in backward. Selective checkpoints (a SavePolicy): the same
// gradients, the kept outputs are the forward's (not recomputed), the policy
// sees each operator with its per-name index in both runs, and a
// recomputation that dispatches differently fails naming the operator; kept
// outputs are copies on real tensors and aliases on meta ones.
#include "core/nn/checkpoint.h"

#include <gtest/gtest.h>
#include <torch/csrc/autograd/function.h>
#include <torch/nn/modules/linear.h>
#include <torch/utils.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "backends/fake/fake_world.h"
#include "backends/solo/solo_world.h"
#include "core/dtensor.h"
#include "debug/comm_debug_mode.h"
#include "testing/collective_counter.h"

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

// Three matmuls with a tanh and dropout between them.
at::Tensor three_matmuls(const at::Tensor& x, const std::vector<at::Tensor>& w, double dropout) {
  at::Tensor h = at::tanh(at::mm(x, w[0]));
  h = at::dropout(at::mm(h, w[1]), dropout, /*train=*/true);
  return at::mm(at::relu(h), w[2]);
}

std::vector<at::Tensor> three_weights(uint64_t seed) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  std::vector<at::Tensor> w;
  for (auto shape : {std::pair<int64_t, int64_t>{6, 8}, {8, 8}, {8, 3}}) {
    w.push_back(at::randn({shape.first, shape.second}, gen, at::kDouble).requires_grad_());
  }
  return w;
}

TEST(SelectiveCheckpointTest, GradientsEqualThoseWithoutIt) {
  for (double dropout : {0.0, 0.5}) {
    std::vector<at::Tensor> w1 = three_weights(7), w2 = three_weights(7);
    at::Tensor x1 = at::randn({5, 6}, at::kDouble).requires_grad_();
    at::Tensor x2 = x1.detach().clone().requires_grad_();
    torch::manual_seed(11);
    three_matmuls(x1, w1, dropout).pow(2).sum().backward();
    torch::manual_seed(11);
    std::vector<std::pair<std::string, int64_t>> asked;
    const nn::SavePolicy titan = nn::torchtitan_op_policy();
    const nn::SavePolicy policy = [&](const std::string& op, int64_t index) {
      if (op == "aten::mm") asked.emplace_back(op, index);
      return titan(op, index);
    };
    at::Tensor y = nn::checkpoint([&](const nn::TensorList& in) { return three_matmuls(in[0], w2, dropout); },
                                  {x2}, policy);
    y.pow(2).sum().backward();
    EXPECT_TRUE(at::allclose(x1.grad(), x2.grad(), 1e-12, 1e-12)) << "dropout " << dropout;
    for (size_t i = 0; i < w1.size(); ++i) {
      EXPECT_TRUE(at::allclose(w1[i].grad(), w2[i].grad(), 1e-12, 1e-12)) << "weight " << i << " dropout " << dropout;
    }
    // Forward and recomputation each: mm #0, #1, #2 (torchtitan keeps #0 and #2).
    const std::vector<std::pair<std::string, int64_t>> expected = {
        {"aten::mm", 0}, {"aten::mm", 1}, {"aten::mm", 2}, {"aten::mm", 0}, {"aten::mm", 1}, {"aten::mm", 2}};
    EXPECT_EQ(asked, expected);
    EXPECT_TRUE(titan("aten::mm", 0) && !titan("aten::mm", 1) && titan("aten::mm", 2));
  }
}

// A kept output is the forward's: change a weight the function reads (not an
// input of the checkpoint) between forward and backward. Full
// recomputation then differentiates at the new weight everywhere; a kept mm
// gives tanh the forward's product, while mm's own backward multiplies by
// the weight the recomputation saw.
TEST(SelectiveCheckpointTest, KeptOutputsAreTheForwards) {
  at::Generator gen = at::detail::createCPUGenerator(5);
  const at::Tensor w_old = at::randn({4, 3}, gen, at::kDouble);
  const at::Tensor w_new = w_old * 1.5;
  const at::Tensor x0 = at::randn({2, 4}, gen, at::kDouble);
  for (bool keep_mm : {false, true}) {
    at::Tensor w = w_old.clone();
    at::Tensor x = x0.clone().requires_grad_();
    const auto body = [&w](const nn::TensorList& in) { return at::tanh(at::mm(in[0], w)); };
    const nn::SavePolicy keep = [keep_mm](const std::string& op, int64_t) { return keep_mm && op == "aten::mm"; };
    at::Tensor y = nn::checkpoint(body, {x}, keep);
    {
      at::NoGradGuard no_grad;
      w.copy_(w_new);
    }
    y.sum().backward();
    const at::Tensor product = at::mm(x0, keep_mm ? w_old : w_new);
    const at::Tensor expected = (1 - product.tanh().pow(2)).mm(w_new.t());
    EXPECT_TRUE(at::allclose(x.grad(), expected, 1e-12, 1e-12)) << "keep_mm " << keep_mm;
  }
}

// The forward writes to a kept output afterwards (as at::linear adds a 3-D
// input's bias in place): the recomputation still gets what mm returned.
TEST(SelectiveCheckpointTest, AKeptOutputWrittenLaterInTheForward) {
  at::Generator gen = at::detail::createCPUGenerator(9);
  const at::Tensor w = at::randn({4, 3}, gen, at::kDouble), b = at::randn({3}, gen, at::kDouble);
  const at::Tensor x0 = at::randn({2, 4}, gen, at::kDouble);
  const auto body = [&](const nn::TensorList& in) {
    at::Tensor h = at::mm(in[0], w);
    h.add_(b);
    return at::tanh(h);
  };
  at::Tensor x1 = x0.clone().requires_grad_(), x2 = x0.clone().requires_grad_();
  body({x1}).sum().backward();
  nn::checkpoint(body, {x2}, nn::torchtitan_op_policy()).sum().backward();
  EXPECT_TRUE(at::allclose(x1.grad(), x2.grad(), 1e-12, 1e-12));
}

TEST(SelectiveCheckpointTest, ARecomputationThatDiffersFailsNamingTheOperator) {
  std::vector<at::Tensor> w = three_weights(3);
  const at::Tensor x = at::randn({2, 6}, at::kDouble);
  at::Tensor y = nn::checkpoint(
      [&](const nn::TensorList& in) {
        // Branches on grad mode: the recomputation (grad on) runs an extra mm first.
        at::Tensor h = in[0];
        if (at::GradMode::is_enabled()) h = at::mm(h, at::eye(6, at::kDouble));
        return three_matmuls(h, w, 0);
      },
      {x}, nn::torchtitan_op_policy());
  try {
    y.sum().backward();
    FAIL() << "expected the recomputation to fail";
  } catch (const c10::Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("selective checkpoint: the recomputation's aten::mm call 0 ([2, 6] Double, [6, 6] Double)"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("differs from the forward's ([2, 6] Double, [6, 8] Double)"), std::string::npos) << what;
  }
}

// On DTensors a kept operator is kept whole, with the redistribution inside
// it (an mm of two Shard(0) operands all-gathers the second): the
// recomputation issues it again under full checkpointing, not when the
// policy keeps mm. max.dim (a DTensor autograd override) still reaches its
// override under the selective key. Gradients equal those without checkpointing.
TEST(SelectiveCheckpointTest, DTensorOperatorsAreKeptWhole) {
  run_fake_world(2, [](World& world) {
    auto mesh = DeviceMesh::init(world.device().type(), {2});
    at::Generator gen = at::detail::createCPUGenerator(21);
    const at::Tensor gx = at::randn({4, 6}, gen, at::kDouble), gw = at::randn({6, 5}, gen, at::kDouble);
    const auto fn = [](const nn::TensorList& in) { return std::get<0>(at::mm(in[0], in[1]).max(1)); };
    std::map<std::string, testing::Counts> backward;
    std::map<std::string, std::vector<at::Tensor>> grads;
    for (const std::string mode : {"none", "full", "keep mm"}) {
      DTensor x = distribute_tensor(gx, mesh, {Shard(0)}), w = distribute_tensor(gw, mesh, {Shard(0)});
      x.requires_grad_(true);
      w.requires_grad_(true);
      testing::CollectiveCounter counter(world);
      at::Tensor out = mode == "none" ? fn({x, w})
                       : mode == "full"
                           ? nn::checkpoint(fn, {x, w})
                           : nn::checkpoint(fn, {x, w}, [](const std::string& op, int64_t) { return op == "aten::mm"; });
      at::Tensor loss = DTensor(out).full_tensor().sum();
      counter.clear();
      loss.backward();
      backward[mode] = counter.take();
      grads[mode] = {DTensor(x.grad()).full_tensor(), DTensor(w.grad()).full_tensor()};
    }
    for (const std::string mode : {"full", "keep mm"}) {
      for (size_t i = 0; i < 2; ++i) {
        EXPECT_TRUE(at::allclose(grads[mode][i], grads["none"][i], 1e-12, 1e-12)) << mode << " gradient " << i;
      }
    }
    EXPECT_EQ(backward["full"]["all_gather_into_tensor"], backward["none"]["all_gather_into_tensor"] + 1);
    EXPECT_EQ(backward["keep mm"], backward["none"]);
  });
}

// What a kept output costs: a copy where the forward could write to it later
// (real tensors: AKeptOutputWrittenLaterInTheForward), nothing on meta
// tensors, which hold no values (the planner's solo traces count no copy
// PyTorch does not make). The backward runs on both.
TEST(SelectiveCheckpointTest, KeptOutputsAreCopiesOnRealTensorsAndAliasesOnMeta) {
  for (c10::DeviceType device : {c10::kCPU, c10::kMeta}) {
    SoloOptions options;
    options.device = device;
    run_solo_world(
        2, 0,
        [&](World&) {
          auto mesh = DeviceMesh::init(device, {2});
          const at::TensorOptions o = at::TensorOptions(device).dtype(at::kFloat);
          DTensor x = distribute_tensor(at::ones({4, 6}, o), mesh, {Shard(0)});
          DTensor w = distribute_tensor(at::ones({6, 5}, o), mesh, {Replicate()});
          x.requires_grad_(true);
          w.requires_grad_(true);
          const auto fn = [](const nn::TensorList& in) { return at::tanh(at::mm(in[0], in[1])); };
          const nn::SavePolicy keep_mm = [](const std::string& op, int64_t) { return op == "aten::mm"; };
          // The operators the planner's traces see (CommDebugMode with local ops).
          debug::CommDebugMode comm(debug::CommDebugModeOptions{/*record_local_ops=*/true});
          at::Tensor y;
          {
            auto guard = comm.enter();
            y = nn::checkpoint(fn, {x, w}, keep_mm);
          }
          int64_t clones = 0, mms = 0;
          for (const trace::OpRecord& op : comm.trace().operations) {
            clones += op.name == "aten::clone" ? 1 : 0;
            mms += op.name == "aten::mm" ? 1 : 0;
          }
          EXPECT_GT(mms, 0) << "the trace sees the function's operators";
          // CPU: the DTensor's clone and its local shard's.
          if (device == c10::kMeta) {
            EXPECT_EQ(clones, 0);
          } else {
            EXPECT_EQ(clones, 2);
          }
          y.sum().backward();
          ASSERT_TRUE(x.grad().defined()) << c10::DeviceTypeName(device);
          EXPECT_EQ(DTensor(x.grad()).to_local().sizes(), (std::vector<int64_t>{2, 6}));
          EXPECT_EQ(DTensor(w.grad()).to_local().sizes(), (std::vector<int64_t>{6, 5}));
        },
        options);
  }
}

}  // namespace
}  // namespace dtensor
