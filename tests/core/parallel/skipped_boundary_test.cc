// Skipped module boundaries are loud (Note [Skipped boundaries] in
// core/nn/module_call.cc): a parallelized module called without
// dtensor::nn::call warns once per module, or throws with kError; proper
// calls, backward, optimizer steps and no-grad code outside any scope stay
// silent.
#include <gtest/gtest.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/adam.h>
#include <torch/optim/optimizer.h>
#include <torch/optim/sgd.h>
#include <torch/utils.h>

#include <mutex>
#include <string>
#include <vector>

#include "backends/fake/fake_world.h"
#include "core/compat/torch_compat.h"
#include "core/dtensor.h"
#include "core/nn/module_call.h"
#include "core/parallel/parallelize.h"
#include "examples/models/transformer.h"
#include "testing/error_of.h"
#include "tests/core/warning_collector.h"

namespace dtensor {
namespace {

using testing::error_of;

using testing::WarningCollector;

// up(x) -> down(relu(.)), children called through dtensor::nn::call or directly.
struct PairImpl : torch::nn::Module {
  explicit PairImpl(bool module_calls) : module_calls(module_calls) {
    up = register_module("up", torch::nn::Linear(4, 8));
    down = register_module("down", torch::nn::Linear(8, 4));
  }
  at::Tensor forward(const at::Tensor& x) {
    if (module_calls) return nn::call(down, torch::relu(nn::call(up, x)));
    return down(torch::relu(up(x)));
  }
  bool module_calls;
  torch::nn::Linear up{nullptr};
  torch::nn::Linear down{nullptr};
};
TORCH_MODULE(Pair);

ParallelizePlan pair_plan() { return {{"up", ColwiseParallel()}, {"down", RowwiseParallel()}}; }

ParallelizeOptions on_skip(nn::SkippedBoundary mode) {
  ParallelizeOptions options;
  options.skipped_boundary = mode;
  return options;
}

TEST(SkippedBoundaryTest, ProperCallsTrainWithoutComplaint) {
  run_fake_world(2, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    Pair pair(/*module_calls=*/true);
    parallelize_module(*pair, mesh, pair_plan(), on_skip(nn::SkippedBoundary::kError));
    torch::optim::SGD opt(pair->parameters(), torch::optim::SGDOptions(0.1).weight_decay(0.01));
    for (int step = 0; step < 2; ++step) {
      opt.zero_grad();
      at::Tensor y = nn::call(pair, torch::ones({3, 4}));  // backward and the step are not forward uses
      y.sum().backward();
      opt.step();
    }
    EXPECT_TRUE(is_dtensor(pair->up->weight.detach()));  // a handle, with grad mode on
    torch::NoGradGuard no_grad;  // inspection outside any forward
    EXPECT_TRUE(is_dtensor(pair->up->weight.sum()));
  });
}

TEST(SkippedBoundaryTest, DirectChildCallThrowsWithKErrorNamingModuleStyleAndFix) {
  run_fake_world(2, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    Pair pair(/*module_calls=*/false);
    parallelize_module(*pair, mesh, pair_plan(), on_skip(nn::SkippedBoundary::kError));
    const std::string error = error_of([&] { pair->forward(torch::ones({3, 4})); });
    for (const char* part : {"parameter of 'up'", "ColwiseParallel(", "dtensor::nn::call(up, x)",
                             "rank ", "collectives differ from the plan"}) {
      EXPECT_NE(error.find(part), std::string::npos) << "'" << part << "' not in: " << error;
    }
  });
}

TEST(SkippedBoundaryTest, DirectChildCallInsideAParentScopeThrowsEvenWithoutGrad) {
  run_fake_world(2, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    Pair pair(/*module_calls=*/false);
    parallelize_module(*pair, mesh, pair_plan(), on_skip(nn::SkippedBoundary::kError));
    torch::NoGradGuard no_grad;  // inference through the root's call: its scope is open
    EXPECT_NE(error_of([&] { nn::call(pair, torch::ones({3, 4})); }).find("parameter of 'up'"),
              std::string::npos);
  });
}

TEST(SkippedBoundaryTest, WarnsOncePerModuleAcrossRanksAndSteps) {
  WarningCollector warnings;
  run_fake_world(4, [&](World&) {
    compat::WarningHandlerGuard guard(&warnings);
    auto mesh = DeviceMesh::init(c10::kCPU, {4});
    Pair pair(/*module_calls=*/false);
    ParallelizePlan plan{{"up", ColwiseParallel()}, {"down", RowwiseParallel()}};
    parallelize_module(*pair, mesh, plan);  // default: warn
    for (int step = 0; step < 3; ++step) {
      at::Tensor x = distribute_tensor(torch::ones({3, 4}), mesh, {Replicate()});
      pair->forward(x).sum().backward();
    }
  });
  EXPECT_EQ(warnings.matching("parameter of 'up'").size(), 1u);
  EXPECT_EQ(warnings.matching("parameter of 'down'").size(), 1u);
}

TEST(SkippedBoundaryTest, IgnoreSaysNothing) {
  WarningCollector warnings;
  run_fake_world(2, [&](World&) {
    compat::WarningHandlerGuard guard(&warnings);
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    Pair pair(/*module_calls=*/false);
    parallelize_module(*pair, mesh, pair_plan(), on_skip(nn::SkippedBoundary::kIgnore));
    at::Tensor x = distribute_tensor(torch::ones({3, 4}), mesh, {Replicate()});
    pair->forward(x).sum().backward();
  });
  EXPECT_TRUE(warnings.matching("module scope").empty());
}

TEST(SkippedBoundaryTest, ExampleTransformerTrainsCleanlyUnderKError) {
  for (bool sequence_parallel : {false, true}) {
    SCOPED_TRACE(sequence_parallel ? "with SP" : "without SP");
    run_fake_world(2, [&](World&) {
      auto mesh = DeviceMesh::init(c10::kCPU, {2}, {"tp"});
      auto model = examples::Transformer(examples::ModelArgs().dropout_p(0.0));
      examples::parallelize_transformer(*model, mesh, sequence_parallel, /*local_output_for_attn=*/false,
                                        on_skip(nn::SkippedBoundary::kError));
      torch::optim::Adam opt(model->parameters(), torch::optim::AdamOptions(1e-3));
      at::Tensor tokens = torch::arange(16, torch::kLong).reshape({2, 8}) % 10;
      at::Tensor logits = model->forward(tokens);
      logits.sum().backward();
      opt.step();
    });
  }
}

}  // namespace
}  // namespace dtensor
