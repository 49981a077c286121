// The MLP (PyTorch's MLPModule) under tensor parallelism on the fake world:
// Adam training matches one device (1-D mesh of 4 and 2x2 dp x tp, with and
// without sequence parallelism, float64 and float32), and the collectives
// per phase equal PyTorch's for the same program.
#include <gtest/gtest.h>
#include <torch/optim/adam.h>
#include <torch/optim/optimizer.h>
#include <torch/utils.h>

#include <iostream>
#include <mutex>
#include <string>
#include <vector>

#include "backends/fake/fake_world.h"
#include "core/compat/torch_compat.h"
#include "core/dtensor_impl.h"
#include "core/parallel/data_parallel.h"
#include "core/parallel/module_params.h"
#include "core/parallel/parallelize.h"
#include "examples/models/mlp.h"
#include "examples/models/seeded_init.h"
#include "tests/core/warning_collector.h"
#include "tests/examples/tp_test_util.h"

namespace dtensor {
namespace {

using testing::Counts;

constexpr int kSteps = 5;
constexpr int64_t kBatch = 8;
constexpr double kLr = 0.05;

struct Batch {
  at::Tensor x, target;
};

std::vector<Batch> make_batches(c10::ScalarType dtype) {
  at::Generator gen = examples::make_generator(/*seed=*/1);
  std::vector<Batch> out;
  for (int i = 0; i < kSteps; ++i) {
    out.push_back({at::randn({kBatch, 10}, gen).to(dtype), at::randn({kBatch, 10}, gen).to(dtype)});
  }
  return out;
}

// The loss of every run: squared error summed over the rows given, divided
// by the batch's numel (so that shards' losses add up to the batch mean).
at::Tensor loss_of(const at::Tensor& out, const at::Tensor& target, int64_t batch_numel) {
  return (out - target).pow(2).sum() / static_cast<double>(batch_numel);
}

struct TrainRun {
  std::vector<double> losses;
  std::map<std::string, at::Tensor> params;
  Counts forward, backward, data_parallel, optimizer;  // of the first step
};

TrainRun single_device(c10::ScalarType dtype) {
  examples::MLP mlp;
  mlp->to(dtype);
  torch::optim::Adam opt(mlp->parameters(), torch::optim::AdamOptions(kLr));
  TrainRun run;
  for (const Batch& b : make_batches(dtype)) {
    opt.zero_grad();
    at::Tensor loss = loss_of(mlp->forward(b.x), b.target, b.target.numel());
    loss.backward();
    opt.step();
    run.losses.push_back(loss.item<double>());
  }
  run.params = testing::full_parameters(*mlp);
  return run;
}

struct Case {
  std::vector<int64_t> mesh_shape;  // {4} (tp) or {2, 2} (dp, tp)
  bool sequence_parallel;
  c10::ScalarType dtype;
  std::string name() const {
    return std::string(mesh_shape.size() == 1 ? "tp4" : "dp2xtp2") + (sequence_parallel ? "+sp" : "") + " " +
           c10::toString(dtype);
  }
};

// Trains the parallelized MLP on 4 fake ranks; returns rank 0's run.
TrainRun tensor_parallel(const Case& c) {
  const std::vector<Batch> batches = make_batches(c.dtype);
  TrainRun result;
  std::mutex mutex;
  run_fake_world(4, [&](World& world) {
    const bool two_d = c.mesh_shape.size() == 2;
    DeviceMesh mesh = two_d ? DeviceMesh::init(c10::kCPU, c.mesh_shape, {"dp", "tp"})
                            : DeviceMesh::init(c10::kCPU, c.mesh_shape, {"tp"});
    DeviceMesh tp = two_d ? mesh["tp"] : mesh;
    const int64_t dp_size = two_d ? mesh.size(0) : 1, dp_rank = two_d ? mesh.get_local_rank(0) : 0;
    const int64_t tp_size = tp.size(), tp_rank = tp.get_local_rank(0);
    examples::MLP mlp;
    mlp->to(c.dtype);
    parallelize_module(*mlp, tp, examples::mlp_tp_plan(c.sequence_parallel));
    torch::optim::Adam opt(mlp->parameters(), torch::optim::AdamOptions(kLr));
    testing::CollectiveCounter counter(world);
    TrainRun run;
    for (int step = 0; step < kSteps; ++step) {
      // This dp rank's rows; with sequence parallelism, this tp rank's slice of them.
      at::Tensor x = batches[step].x.chunk(dp_size, 0)[dp_rank];
      at::Tensor target = batches[step].target.chunk(dp_size, 0)[dp_rank];
      const int64_t numel = target.numel();
      if (c.sequence_parallel) {
        x = x.chunk(tp_size, 0)[tp_rank];
        target = target.chunk(tp_size, 0)[tp_rank];
      }
      opt.zero_grad();
      counter.take();
      at::Tensor out = mlp->forward(x);
      Counts forward = counter.take();
      EXPECT_FALSE(is_dtensor(out));
      at::Tensor loss = loss_of(out, target, numel);
      loss.backward();
      Counts backward = counter.take();
      if (two_d) average_gradients(*mlp, mesh["dp"]);
      Counts data_parallel = counter.take();
      opt.step();
      Counts optimizer = counter.take();
      if (step == 0) {
        run.forward = forward;
        run.backward = backward;
        run.data_parallel = data_parallel;
        run.optimizer = optimizer;
      }
      at::Tensor global = loss.detach().clone();
      if (c.sequence_parallel) tp.communicator(0).all_reduce(global);  // shards' shares add up
      if (two_d) {
        mesh["dp"].communicator(0).all_reduce(global);
        global.div_(static_cast<double>(dp_size));
      }
      run.losses.push_back(global.item<double>());
    }
    run.params = testing::full_parameters(*mlp);
    if (world.rank() == 0) {
      std::lock_guard<std::mutex> lock(mutex);
      result = run;
    }
  });
  return result;
}

double tolerance(c10::ScalarType dtype) { return dtype == at::kDouble ? 1e-10 : 1e-5; }

TEST(MlpTensorParallelTest, TrainingMatchesSingleDevice) {
  for (c10::ScalarType dtype : {at::kDouble, at::kFloat}) {
    const TrainRun reference = single_device(dtype);
    for (std::vector<int64_t> mesh_shape : {std::vector<int64_t>{4}, std::vector<int64_t>{2, 2}}) {
      for (bool sp : {false, true}) {
        const Case c{mesh_shape, sp, dtype};
        SCOPED_TRACE(c.name());
        const TrainRun tp = tensor_parallel(c);
        const double loss_diff = testing::max_abs_diff(tp.losses, reference.losses);
        const double param_diff = testing::max_abs_diff(tp.params, reference.params);
        std::cout << "[parity] mlp " << c.name() << ": max |loss diff| " << loss_diff << ", max |param diff| "
                  << param_diff << " over " << kSteps << " Adam steps\n";
        EXPECT_LE(loss_diff, tolerance(dtype));
        EXPECT_LE(param_diff, tolerance(dtype));
        EXPECT_LT(reference.losses.back(), reference.losses.front());  // it does train
      }
    }
  }
}

// PyTorch (test_tp_examples, CommDebugMode over forward + backward on a mesh
// of 4): colwise + rowwise: all_reduce 1 (the row-wise output); with
// sequence parallelism: all_gather_into_tensor 2 (net1's input in forward,
// net2's reduce-scatter transposed in backward), reduce_scatter_tensor 1.
// The input needs no gradient, so net1's input issues nothing in backward.
TEST(MlpTensorParallelTest, CollectivesMatchPyTorch) {
  const TrainRun plain = tensor_parallel({{4}, false, at::kDouble});
  EXPECT_EQ(plain.forward, (Counts{{"all_reduce", 1}})) << testing::to_string(plain.forward);
  EXPECT_EQ(plain.backward, Counts{}) << testing::to_string(plain.backward);
  EXPECT_EQ(plain.optimizer, Counts{}) << testing::to_string(plain.optimizer);
  const TrainRun sp = tensor_parallel({{4}, true, at::kDouble});
  EXPECT_EQ(sp.forward, (Counts{{"all_gather_into_tensor", 1}, {"reduce_scatter_tensor", 1}}))
      << testing::to_string(sp.forward);
  EXPECT_EQ(sp.backward, (Counts{{"all_gather_into_tensor", 1}})) << testing::to_string(sp.backward);
  EXPECT_EQ(sp.optimizer, Counts{}) << testing::to_string(sp.optimizer);
  // 2x2: the same per tp group, plus one bucketed gradient all_reduce over dp.
  const TrainRun two_d = tensor_parallel({{2, 2}, false, at::kDouble});
  EXPECT_EQ(two_d.forward, (Counts{{"all_reduce", 1}}));
  EXPECT_EQ(two_d.backward, Counts{});
  EXPECT_EQ(two_d.data_parallel, (Counts{{"all_reduce", 1}}));
}

using testing::WarningCollector;

// A model calling its children directly (no dtensor::nn::call): styles'
// boundary hooks never run, but with a DTensor input the sharded parameters
// still give the single-device result through sharding propagation. It is
// not silent: each skipped module warns once (Note [Skipped boundaries]).
TEST(MlpTensorParallelTest, PlainCallsStillComputeCorrectly) {
  const TrainRun reference = single_device(at::kDouble);
  const std::vector<Batch> batches = make_batches(at::kDouble);
  WarningCollector warnings;
  run_fake_world(4, [&](World&) {
    compat::WarningHandlerGuard guard(&warnings);
    auto mesh = DeviceMesh::init(c10::kCPU, {4});
    examples::MLP mlp(examples::MLPOptions().module_calls(false));
    mlp->to(at::kDouble);
    parallelize_module(*mlp, mesh, examples::mlp_tp_plan(/*sequence_parallel=*/false));
    torch::optim::Adam opt(mlp->parameters(), torch::optim::AdamOptions(kLr));
    DistributeOptions same_on_every_rank;
    same_on_every_rank.src_data_rank = std::nullopt;
    std::vector<double> losses;
    for (const Batch& b : batches) {
      opt.zero_grad();
      at::Tensor x = distribute_tensor(b.x, mesh, {Replicate()}, same_on_every_rank);
      at::Tensor out = mlp->forward(x);
      ASSERT_TRUE(is_dtensor(out));
      at::Tensor loss = loss_of(out, replicate_like(b.target, out), b.target.numel());
      loss.backward();
      opt.step();
      losses.push_back(DTensor(loss).full_tensor().item<double>());
    }
    EXPECT_LE(testing::max_abs_diff(losses, reference.losses), 1e-10);
    EXPECT_LE(testing::max_abs_diff(testing::full_parameters(*mlp), reference.params), 1e-10);
  });
  EXPECT_EQ(warnings.matching("uses a parameter of 'net1' (ColwiseParallel(").size(), 1u);
  EXPECT_EQ(warnings.matching("uses a parameter of 'net2' (RowwiseParallel(").size(), 1u);
}

}  // namespace
}  // namespace dtensor
