// fully_shard on the fake world: losses, parameters and gradients equal one
// device's after optimizer steps; the collectives per forward and backward
// equal PyTorch FSDP2's for the same model (3-layer MLP stack on 4 ranks:
// forward 3 all_gathers, backward 3 all_gathers + 3 reduce_scatters, as
// measured with PyTorch 2.11 and 2.15); uneven dim 0; no reshard after
// forward; gradient accumulation without sync; mixed precision; tied
// weights; clear errors.
#include "core/fsdp/fully_shard.h"

#include <gtest/gtest.h>
#include <torch/nn/functional/activation.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/adam.h>
#include <torch/optim/sgd.h>

#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "backends/fake/fake_world.h"
#include "backends/solo/solo_world.h"
#include "core/checkpoint/checkpoint.h"
#include "core/dtensor.h"
#include "core/dtensor_impl.h"
#include "core/nn/checkpoint.h"
#include "core/nn/module_call.h"
#include "core/parallel/module_params.h"
#include "tests/core/fsdp/linear_stack.h"
#include "testing/collective_counter.h"
#include "testing/error_of.h"
#include "testing/scratch_dir.h"

namespace dtensor {
namespace {

using testing::CollectiveCounter;
using testing::Counts;

using testing::make_batch;
using Stack = testing::LinearStack;

Stack make_stack(const std::vector<int64_t>& widths, uint64_t seed) { return testing::make_linear_stack(widths, seed); }

at::Tensor loss_of(const at::Tensor& y) { return y.pow(2).mean(); }

// The full value of a parameter, DTensor or plain.
at::Tensor full_value(const at::Tensor& t) { return is_dtensor(t) ? DTensor(t).full_tensor() : t; }

void expect_same_parameters(torch::nn::Module& sharded, torch::nn::Module& reference, double tol) {
  auto ref = reference.named_parameters();
  for (const auto& item : sharded.named_parameters()) {
    const at::Tensor full = full_value(item.value());
    ASSERT_TRUE(ref.contains(item.key())) << item.key();
    EXPECT_TRUE(torch::allclose(full, ref[item.key()], tol, tol))
        << item.key() << " differs by " << (full - ref[item.key()]).abs().max().item<double>();
  }
}

struct StepCounts {
  Counts forward;
  Counts backward;
};

// Trains `steps` SGD steps with FSDP on `world` ranks and on one device side
// by side; returns rank 0's per-phase collective counts of the last step.
StepCounts train_and_compare(int64_t world, std::vector<int64_t> widths, const FullyShardOptions& options,
                             int steps = 3) {
  StepCounts last;
  const int64_t batch = 12;  // divisible by every world size used: equal shares
  run_fake_world(world, [&](World& w) {
    auto mesh = DeviceMesh::init(c10::kCPU, {world}, {"dp"});
    Stack model = make_stack(widths, 7);
    Stack reference = make_stack(widths, 7);
    for (auto& layer : model->layers) fully_shard(*layer, mesh, options);
    fully_shard(*model, mesh, options);
    for (const auto& p : model->parameters()) ASSERT_TRUE(is_dtensor(p));
    torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.1));
    torch::optim::SGD ref_opt(reference->parameters(), torch::optim::SGDOptions(0.1));
    CollectiveCounter counter(w);
    const int64_t rank = mesh.get_local_rank(0);
    for (int step = 0; step < steps; ++step) {
      const at::Tensor x = make_batch(batch, widths.front(), 100 + step);
      const at::Tensor mine = x.chunk(world, 0)[rank];
      counter.clear();
      at::Tensor loss = loss_of(nn::call(model, mine));
      Counts forward = counter.take();
      loss.backward();
      Counts backward = counter.take();
      opt.step();
      opt.zero_grad();
      at::Tensor ref_loss = loss_of(reference->forward(x));
      ref_loss.backward();
      ref_opt.step();
      ref_opt.zero_grad();
      // The losses of the ranks average to the reference's.
      at::Tensor mean_loss = loss.detach().reshape({1});
      mean_loss = DTensor::from_local(mean_loss, mesh, {Partial()}).full_tensor() / world;
      EXPECT_NEAR(mean_loss.item<double>(), ref_loss.item<double>(), 1e-10) << "step " << step;
      if (rank == 0) last = {forward, backward};
    }
    expect_same_parameters(*model, *reference, 1e-10);
  });
  return last;
}

TEST(FullyShardTest, MlpStackEqualsOneDeviceWithPyTorchsCollectives) {
  const StepCounts counts = train_and_compare(4, {8, 16, 16, 8}, {});
  // PyTorch 2.11 and 2.15's fully_shard on the same model (Gloo, 4 ranks).
  EXPECT_EQ(counts.forward, (Counts{{"all_gather_into_tensor", 3}}));
  EXPECT_EQ(counts.backward, (Counts{{"all_gather_into_tensor", 3}, {"reduce_scatter_tensor", 3}}));
}

// Activation checkpointing around fully_shard modules (PyTorch's test
// Transformer with checkpoint_activations: torch.utils.checkpoint(layer, h)):
// the recomputation in backward runs each layer's forward hooks again, and
// that must not gather the layer a second time: the collectives stay those
// without checkpointing, as with PyTorch's FSDP2 (its hooks skip during the
// recomputation; ours see the recomputed layer as the root of its own
// forward, which keeps its parameters for the backward that follows), and
// the gradients equal those without it.
TEST(FullyShardTest, CheckpointAroundFullyShardModulesAddsNoCollective) {
  const std::vector<int64_t> widths = {8, 16, 16, 8};
  run_fake_world(4, [&](World& w) {
    auto mesh = DeviceMesh::init(c10::kCPU, {4}, {"dp"});
    Stack model = make_stack(widths, 7), plain = make_stack(widths, 7), reference = make_stack(widths, 7);
    for (Stack* m : {&model, &plain}) {
      for (auto& layer : (*m)->layers) fully_shard(*layer, mesh);
      fully_shard(**m, mesh);
    }
    const at::Tensor x = make_batch(12, widths.front(), 100).chunk(4, 0)[mesh.get_local_rank(0)];
    CollectiveCounter counter(w);
    std::map<std::string, Counts> backward;
    for (Stack* m : {&plain, &model}) {
      const bool checkpointed = m == &model;
      // The stack's forward, each layer (a fully_shard module) checkpointed around its call.
      at::Tensor h = x;
      {
        nn::ModuleScope root(**m, {h});
        for (size_t i = 0; i < (*m)->layers.size(); ++i) {
          auto layer = (*m)->layers[i];
          auto call = [layer](const nn::TensorList& in) mutable { return nn::call(layer, in[0]); };
          h = checkpointed ? nn::checkpoint(call, {h}) : call({h});
          if (i + 1 < (*m)->layers.size()) h = torch::relu(h);
        }
        h = root.output(h);
      }
      at::Tensor loss = loss_of(h);
      counter.clear();
      loss.backward();
      backward[checkpointed ? "checkpointed" : "plain"] = counter.take();
    }
    EXPECT_EQ(backward["checkpointed"], backward["plain"]);
    for (const auto& item : model->named_parameters()) {
      const at::Tensor a = DTensor(item.value().grad()).full_tensor();
      const at::Tensor b = DTensor(plain->named_parameters()[item.key()].grad()).full_tensor();
      EXPECT_TRUE(torch::allclose(a, b, 1e-12, 1e-12)) << item.key();
    }
  });
}

TEST(FullyShardTest, NoReshardAfterForwardGathersOnce) {
  FullyShardOptions options;
  options.reshard_after_forward = false;
  const StepCounts counts = train_and_compare(4, {8, 16, 16, 8}, options);
  EXPECT_EQ(counts.forward, (Counts{{"all_gather_into_tensor", 3}}));
  EXPECT_EQ(counts.backward, (Counts{{"reduce_scatter_tensor", 3}}));
}

// PyTorch's int reshard_after_forward: after forward each rank keeps its
// piece over a pair of ranks, so backward gathers over 2 ranks, not 4; the
// values still equal one device's. 1 and 4 mean false and true; 3 is refused.
TEST(FullyShardTest, ReshardAfterForwardToASmallerGroup) {
  FullyShardOptions options;
  options.reshard_after_forward_to = 2;
  train_and_compare(4, {8, 16, 16, 8}, options);
  run_fake_world(4, [&](World& w) {
    auto mesh = DeviceMesh::init(c10::kCPU, {4}, {"dp"});
    Stack model = make_stack({8, 16, 16, 8}, 7);
    for (auto& layer : model->layers) fully_shard(*layer, mesh, options);
    fully_shard(*model, mesh, options);
    CollectiveCounter counter(w);
    at::Tensor loss = loss_of(nn::call(model, make_batch(3, 8, 1)));
    for (const auto& e : counter.events()) EXPECT_EQ(e.group_ranks.size(), 4u) << e.to_string();
    EXPECT_EQ(counter.take(), (Counts{{"all_gather_into_tensor", 3}}));
    loss.backward();
    int64_t pair_gathers = 0;
    for (const auto& e : counter.events()) {
      if (e.kind != CollectiveKind::kAllGatherIntoTensor) continue;
      const int64_t first = (w.rank() / 2) * 2;
      EXPECT_EQ(e.group_ranks, (std::vector<int64_t>{first, first + 1})) << e.to_string();
      ++pair_gathers;
    }
    EXPECT_EQ(pair_gathers, 3);  // every layer, gathered again over its pair
    auto bad = options;
    bad.reshard_after_forward_to = 3;
    Stack other = make_stack({4, 4}, 1);
    EXPECT_NE(testing::error_of([&] { fully_shard(*other, mesh, bad); }).find("must divide the 4 ranks"),
              std::string::npos);
  });
}

// CPU offload moves shards between host and device memory: CUDA ranks only
// (tests/backends/cuda/cuda_transformer_check.cc trains with it on a GPU).
TEST(FullyShardTest, CpuOffloadNeedsCudaRanks) {
  run_fake_world(2, [&](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2}, {"dp"});
    Stack model = make_stack({4, 4}, 1);
    FullyShardOptions options;
    options.offload_policy = CPUOffloadPolicy{};
    const std::string error = testing::error_of([&] { fully_shard(*model, mesh, options); });
    for (const char* part : {"CPUOffloadPolicy", "on cpu", "offload only from CUDA ranks", "rank "}) {
      EXPECT_NE(error.find(part), std::string::npos) << part << " not in: " << error;
    }
  });
}

TEST(FullyShardTest, UnevenRowsAndFewerRowsThanRanks) {
  // 7 rows over 4 ranks (2, 2, 2, 1); 3 rows over 4 (1, 1, 1, 0).
  train_and_compare(4, {5, 7, 3}, {});
  train_and_compare(3, {4, 7, 2}, {});
}

TEST(FullyShardTest, ParametersAreShardedBetweenSteps) {
  run_fake_world(4, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {4});
    Stack model = make_stack({8, 12, 4}, 3);
    FSDPModule layer0 = fully_shard(*model->layers[0], mesh);
    FSDPModule root = fully_shard(*model, mesh);
    EXPECT_EQ(layer0.managed_parameter_names(), (std::vector<std::string>{"weight", "bias"}));
    EXPECT_EQ(root.managed_parameter_names(), (std::vector<std::string>{"layer1.weight", "layer1.bias"}));
    DTensor w(model->layers[0]->weight);
    EXPECT_EQ(w.placements(), (Placements{Shard(0)}));
    EXPECT_EQ(w.local_tensor().sizes(), (std::vector<int64_t>{3, 8}));
    layer0.unshard();
    EXPECT_TRUE(layer0.is_unsharded());
    EXPECT_FALSE(is_dtensor(model->layers[0]->weight));
    EXPECT_EQ(model->layers[0]->weight.sizes(), (std::vector<int64_t>{12, 8}));
    layer0.reshard();
    EXPECT_TRUE(is_dtensor(model->layers[0]->weight));
    // A forward and backward leave every group sharded.
    nn::call(model, make_batch(4, 8, 1)).sum().backward();
    EXPECT_FALSE(layer0.is_unsharded());
    EXPECT_FALSE(root.is_unsharded());
    for (const auto& p : model->parameters()) {
      ASSERT_TRUE(is_dtensor(p));
      ASSERT_TRUE(is_dtensor(p.grad()));
      EXPECT_EQ(DTensor(p.grad()).placements(), (Placements{Shard(0)}));
    }
  });
}

TEST(FullyShardTest, GradientAccumulationWithoutSyncReducesOnce) {
  run_fake_world(2, [](World& w) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    Stack model = make_stack({6, 8, 4}, 11);
    Stack reference = make_stack({6, 8, 4}, 11);
    for (auto& layer : model->layers) fully_shard(*layer, mesh);
    FSDPModule root = fully_shard(*model, mesh);
    CollectiveCounter counter(w);
    const int64_t rank = mesh.get_local_rank(0);
    at::Tensor ref_loss = at::zeros({}, torch::kDouble);
    for (int micro = 0; micro < 2; ++micro) {
      root.set_requires_gradient_sync(micro == 1);
      const at::Tensor x = make_batch(4, 6, 50 + micro);
      loss_of(nn::call(model, x.chunk(2, 0)[rank])).backward();
      ref_loss = ref_loss + loss_of(reference->forward(x));
      if (micro == 0) {
        EXPECT_EQ(counter.take().count("reduce_scatter_tensor"), 0);
      } else {
        EXPECT_EQ(counter.take().at("reduce_scatter_tensor"), 2);
      }
    }
    ref_loss.backward();
    auto ref = reference->named_parameters();
    for (const auto& item : model->named_parameters()) {
      EXPECT_TRUE(torch::allclose(DTensor(item.value().grad()).full_tensor(), ref[item.key()].grad(), 1e-10, 1e-10))
          << item.key();
    }
  });
}

TEST(FullyShardTest, AdamStepsOnShardedParameters) {
  run_fake_world(2, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    Stack model = make_stack({6, 10, 3}, 5);
    Stack reference = make_stack({6, 10, 3}, 5);
    for (auto& layer : model->layers) fully_shard(*layer, mesh);
    fully_shard(*model, mesh);
    torch::optim::Adam opt(model->parameters(), torch::optim::AdamOptions(1e-2));
    torch::optim::Adam ref_opt(reference->parameters(), torch::optim::AdamOptions(1e-2));
    const int64_t rank = mesh.get_local_rank(0);
    for (int step = 0; step < 3; ++step) {
      const at::Tensor x = make_batch(6, 6, 70 + step);
      loss_of(nn::call(model, x.chunk(2, 0)[rank])).backward();
      opt.step();
      opt.zero_grad();
      loss_of(reference->forward(x)).backward();
      ref_opt.step();
      ref_opt.zero_grad();
    }
    expect_same_parameters(*model, *reference, 1e-10);
  });
}

TEST(FullyShardTest, MixedPrecisionGathersAndComputesInParamDtype) {
  run_fake_world(2, [](World& w) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    Stack model = make_stack({4, 6, 2}, 9);
    model->to(torch::kFloat);
    Stack reference = make_stack({4, 6, 2}, 9);
    reference->to(torch::kFloat);
    FullyShardOptions options;
    options.mp_policy.param_dtype = torch::kBFloat16;
    options.mp_policy.reduce_dtype = torch::kFloat;
    options.mp_policy.output_dtype = torch::kFloat;
    for (auto& layer : model->layers) fully_shard(*layer, mesh, options);
    fully_shard(*model, mesh, options);
    CollectiveCounter counter(w);
    const at::Tensor x = make_batch(4, 4, 3).to(torch::kFloat);
    const int64_t rank = mesh.get_local_rank(0);
    at::Tensor y = nn::call(model, x.chunk(2, 0)[rank]);
    EXPECT_EQ(y.scalar_type(), torch::kFloat);  // output_dtype
    for (const CollectiveEvent& e : counter.events()) EXPECT_EQ(e.dtype, torch::kBFloat16);
    counter.clear();
    y.pow(2).mean().backward();
    int64_t reduce_scatters = 0;
    for (const CollectiveEvent& e : counter.events()) {
      if (e.kind == CollectiveKind::kReduceScatterTensor) {
        EXPECT_EQ(e.dtype, torch::kFloat);  // reduce_dtype
        ++reduce_scatters;
      }
    }
    EXPECT_EQ(reduce_scatters, 2);
    // Sharded parameters and their gradients keep the parameters' dtype.
    for (const auto& p : model->parameters()) {
      EXPECT_EQ(p.scalar_type(), torch::kFloat);
      EXPECT_EQ(p.grad().scalar_type(), torch::kFloat);
    }
    // One device applying the same casts: bf16 weights and inputs, float
    // gradients reduced from bf16 per-rank gradients.
    at::Tensor ref_x = x.to(torch::kBFloat16);
    for (size_t i = 0; i < reference->layers.size(); ++i) {
      auto& l = reference->layers[i];
      ref_x = torch::nn::functional::linear(ref_x, l->weight.to(torch::kBFloat16), l->bias.to(torch::kBFloat16));
      if (i + 1 < reference->layers.size()) ref_x = torch::relu(ref_x);
    }
    const at::Tensor y_full = DTensor::from_local(y.detach(), mesh, {Shard(0)}).full_tensor();
    EXPECT_TRUE(torch::allclose(y_full, ref_x.to(torch::kFloat), 1e-6, 1e-6));
  });
}

// LibTorch runs CUDA nodes on a device thread, not the caller's: FSDP's
// backward bookkeeping must not live in the forward thread's thread-locals
// (on NCCL the root's gradients were never reduced). Backward on another
// thread shows it on the CPU: every group is reduced, values as one device.
TEST(FullyShardTest, BackwardOnAnotherThreadReducesEveryGroup) {
  const std::vector<int64_t> widths = {6, 8, 4};
  Stack reference = make_stack(widths, 13);
  const at::Tensor x = make_batch(4, 6, 2);
  loss_of(reference->forward(x)).backward();
  run_fake_world(2, [&](World& w) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    Stack model = make_stack(widths, 13);
    // The root owns a parameter of its own, so its group needs reducing too.
    model->register_parameter("scale", at::ones({1}, at::kDouble));
    fully_shard(*model->layers[0], mesh);
    fully_shard(*model, mesh);
    at::Tensor loss = loss_of(nn::call(model, x.chunk(2, 0)[w.rank()]));
    std::thread other([&] {
      ScopedCurrentWorld scope(w);
      loss.backward();
    });
    other.join();
    auto ref = reference->named_parameters();
    for (const auto& item : model->named_parameters()) {
      if (item.key() == "scale") continue;
      ASSERT_TRUE(item.value().grad().defined()) << item.key();
      EXPECT_TRUE(torch::allclose(DTensor(item.value().grad()).full_tensor(), ref[item.key()].grad(), 1e-10, 1e-10))
          << item.key();
    }
  });
}

// Solo mode plays one rank of a large world: FSDP's collectives are
// reported (so the planner can trace them) and nothing is exchanged.
TEST(FullyShardTest, SoloModeTracesOneRankOfALargeWorld) {
  run_solo_world(1024, 517, [](World& w) {
    auto mesh = DeviceMesh::init(c10::kCPU, {1024});
    Stack model = make_stack({16, 2048, 16}, 1);  // 2048 rows: 2 per rank
    for (auto& layer : model->layers) fully_shard(*layer, mesh);
    fully_shard(*model, mesh);
    EXPECT_EQ(DTensor(model->layers[0]->weight).local_tensor().sizes(), (std::vector<int64_t>{2, 16}));
    CollectiveCounter counter(w);
    at::Tensor loss = loss_of(nn::call(model, make_batch(2, 16, 1)));
    EXPECT_EQ(counter.take(), (Counts{{"all_gather_into_tensor", 2}}));
    loss.backward();
    EXPECT_EQ(counter.take(), (Counts{{"all_gather_into_tensor", 2}, {"reduce_scatter_tensor", 2}}));
    for (const auto& p : model->parameters()) EXPECT_TRUE(is_dtensor(p.grad()));
  });
}

TEST(FullyShardTest, CheckpointsReshardOntoOtherLayouts) {
  const std::string dir = testing::scratch_dir("fsdp_checkpoint");
  const std::vector<int64_t> widths = {6, 7, 3};  // uneven rows on 4 ranks
  // Train FSDP on 4 ranks, save; the one-device twin trains alongside.
  Stack reference = make_stack(widths, 21);
  run_fake_world(4, [&](World& w) {
    auto mesh = DeviceMesh::init(c10::kCPU, {4});
    Stack model = make_stack(widths, 21);
    for (auto& layer : model->layers) fully_shard(*layer, mesh);
    fully_shard(*model, mesh);
    torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.1));
    const at::Tensor x = make_batch(8, 6, 5);
    loss_of(nn::call(model, x.chunk(4, 0)[w.rank()])).backward();
    opt.step();
    checkpoint::save(*model, dir);
  });
  {
    torch::optim::SGD opt(reference->parameters(), torch::optim::SGDOptions(0.1));
    loss_of(reference->forward(make_batch(8, 6, 5))).backward();
    opt.step();
  }
  // Load onto one device, and onto FSDP over 2 ranks.
  Stack plain = make_stack(widths, 99);
  checkpoint::load(*plain, dir);
  expect_same_parameters(*plain, *reference, 1e-12);
  run_fake_world(2, [&](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    Stack model = make_stack(widths, 99);
    for (auto& layer : model->layers) fully_shard(*layer, mesh);
    fully_shard(*model, mesh);
    checkpoint::load(*model, dir);
    expect_same_parameters(*model, *reference, 1e-12);
  });
}

// FSDP over TP on (dp=2, tp=2): column-wise weights are (_S(0, 2), S(0)) on
// the joined mesh; a checkpoint of it loads onto one device and onto FSDP
// alone on 4 ranks.
TEST(FullyShardTest, FsdpOverTensorParallelCheckpointsReshard) {
  const std::string dir = testing::scratch_dir("fsdp_tp_checkpoint");
  const std::vector<int64_t> widths = {6, 10, 6, 4};
  Stack reference = make_stack(widths, 23);
  run_fake_world(4, [&](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2, 2}, {"dp", "tp"});
    Stack model = make_stack(widths, 23);
    testing::parallelize_linear_stack(model, mesh["tp"]);
    for (auto& layer : model->layers) fully_shard(*layer, mesh["dp"]);
    fully_shard(*model, mesh["dp"]);
    const DTensor w0(model->layers[0]->weight);
    EXPECT_EQ(w0.placements(), (Placements{StridedShard(0, 2), Shard(0)}));
    EXPECT_EQ(w0.device_mesh(), mesh);
    EXPECT_EQ(DTensor(model->layers[1]->weight).placements(), (Placements{Shard(0), Shard(1)}));
    torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.1));
    const at::Tensor x = make_batch(8, 6, 5);
    loss_of(nn::call(model, x.chunk(2, 0)[mesh.get_local_rank("dp")])).backward();
    opt.step();
    checkpoint::save(*model, dir);
  });
  {
    torch::optim::SGD opt(reference->parameters(), torch::optim::SGDOptions(0.1));
    loss_of(reference->forward(make_batch(8, 6, 5))).backward();
    opt.step();
  }
  Stack plain = make_stack(widths, 99);
  checkpoint::load(*plain, dir);
  expect_same_parameters(*plain, *reference, 1e-12);
  run_fake_world(4, [&](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {4});
    Stack model = make_stack(widths, 99);
    for (auto& layer : model->layers) fully_shard(*layer, mesh);
    fully_shard(*model, mesh);
    checkpoint::load(*model, dir);
    expect_same_parameters(*model, *reference, 1e-12);
  });
}

TEST(FullyShardTest, FsdpOverTensorParallelClearErrors) {
  run_fake_world(4, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2, 2}, {"dp", "tp"});
    // 5 rows column-wise over tp = 2: the tp pieces differ, no _StridedShard is exact.
    Stack uneven = make_stack({4, 5, 2}, 1);
    testing::parallelize_linear_stack(uneven, mesh["tp"]);
    EXPECT_NE(testing::error_of([&] { fully_shard(*uneven->layers[0], mesh["dp"]); })
                  .find("Pad dim 0 to a multiple of 2"),
              std::string::npos);
    // A dp mesh that is not a slice of the tp mesh's mesh.
    Stack other = make_stack({4, 6, 2}, 1);
    testing::parallelize_linear_stack(other, mesh["tp"]);
    auto separate = DeviceMesh::init(c10::kCPU, {2, 2}, {"dp", "tp"});
    EXPECT_NE(testing::error_of([&] { fully_shard(*other->layers[0], separate["dp"]); })
                  .find("are not slices of one mesh"),
              std::string::npos);
  });
}

// Each rank's error message, "" where a rank returned.
std::vector<std::string> rank_errors(int64_t world, const std::function<void(int64_t rank)>& fn) {
  std::vector<std::string> errors(static_cast<size_t>(world));
  try {
    run_fake_world(world, [&](World& w) {
      try {
        fn(w.rank());
      } catch (const c10::Error& e) {
        errors[static_cast<size_t>(w.rank())] = e.what_without_backtrace();
        throw;
      }
    });
  } catch (const c10::Error&) {
  }
  return errors;
}

TEST(FullyShardTest, ARankDyingInForwardFailsTheOthersNamingModuleAndCollective) {
  const auto errors = rank_errors(4, [](int64_t rank) {
    auto mesh = DeviceMesh::init(c10::kCPU, {4});
    Stack model = make_stack({8, 8, 8, 8}, 1);
    for (auto& layer : model->layers) fully_shard(*layer, mesh);
    fully_shard(*model, mesh);
    if (rank == 2) {
      // Dies after layer 0, before layer 1 gathers.
      nn::register_forward_hook(*model->layers[0], [](torch::nn::Module&, const nn::TensorList&, at::Tensor) -> at::Tensor {
        TORCH_CHECK(false, "rank 2 died");
      });
    }
    nn::call(model, make_batch(4, 8, 1)).sum().backward();
  });
  EXPECT_NE(errors[2].find("rank 2 died"), std::string::npos) << errors[2];
  for (int64_t r : {0, 1, 3}) {
    const std::string& e = errors[static_cast<size_t>(r)];
    EXPECT_NE(e.find("fully_shard(LinearStack.layer1)'s all_gather of its parameters on rank " + std::to_string(r) +
                     " (forward)"),
              std::string::npos)
        << e;
    EXPECT_NE(e.find("rank 2"), std::string::npos) << e;
  }
}

TEST(FullyShardTest, ARankDyingInBackwardFailsTheOthersNamingModuleAndCollective) {
  const auto errors = rank_errors(4, [](int64_t rank) {
    auto mesh = DeviceMesh::init(c10::kCPU, {4});
    Stack model = make_stack({8, 8, 8, 8}, 1);
    for (auto& layer : model->layers) fully_shard(*layer, mesh);
    fully_shard(*model, mesh);
    at::Tensor y = nn::call(model, make_batch(4, 8, 1));
    if (rank == 2) y.register_hook([](const at::Tensor&) -> at::Tensor { TORCH_CHECK(false, "rank 2 died in backward"); });
    y.sum().backward();
  });
  EXPECT_NE(errors[2].find("rank 2 died in backward"), std::string::npos) << errors[2];
  for (int64_t r : {0, 1, 3}) {
    const std::string& e = errors[static_cast<size_t>(r)];
    EXPECT_NE(e.find("fully_shard(LinearStack.layer"), std::string::npos) << e;
    EXPECT_NE(e.find("(backward)"), std::string::npos) << e;
    EXPECT_NE(e.find("rank 2"), std::string::npos) << e;
  }
}

// bf16 parameters and compute, float32 reduction, 3 SGD steps on 2 ranks,
// against one device applying the same casts: each rank's share through
// bf16 copies of the float32 parameters, the bf16 gradients summed in
// float32 in rank order (the fake world's fixed reduction order) and
// averaged, then the float32 update.
TEST(FullyShardTest, MixedPrecisionTrainingEqualsOneDeviceApplyingTheSameCasts) {
  const std::vector<int64_t> widths = {4, 8, 6, 2};
  const int64_t world = 2;
  auto make_float_stack = [&] {
    Stack stack = make_stack(widths, 17);
    stack->to(torch::kFloat);
    return stack;
  };
  auto batch_of = [](int step) { return make_batch(8, 4, 40 + step).to(torch::kFloat); };
  // One device.
  Stack reference = make_float_stack();
  for (int step = 0; step < 3; ++step) {
    std::vector<at::Tensor> sums;
    for (const auto& p : reference->parameters()) sums.push_back(at::zeros_like(p));
    for (int64_t r = 0; r < world; ++r) {
      std::vector<at::Tensor> copies;
      for (const auto& p : reference->parameters()) copies.push_back(p.detach().to(torch::kBFloat16).requires_grad_());
      at::Tensor h = batch_of(step).chunk(world, 0)[r];
      for (size_t i = 0; i < reference->layers.size(); ++i) {
        h = torch::nn::functional::linear(h.to(torch::kBFloat16), copies[2 * i], copies[2 * i + 1]).to(torch::kFloat);
        if (i + 1 < reference->layers.size()) h = torch::relu(h);
      }
      loss_of(h).backward();
      for (size_t k = 0; k < copies.size(); ++k) sums[k] += copies[k].grad().to(torch::kFloat);
    }
    at::NoGradGuard no_grad;
    size_t k = 0;
    for (auto& p : reference->parameters()) p.sub_(sums[k++] / static_cast<double>(world) * 0.1);
  }
  run_fake_world(world, [&](World& w) {
    auto mesh = DeviceMesh::init(c10::kCPU, {world});
    Stack model = make_float_stack();
    FullyShardOptions options;
    options.mp_policy.param_dtype = torch::kBFloat16;
    options.mp_policy.reduce_dtype = torch::kFloat;
    options.mp_policy.output_dtype = torch::kFloat;
    for (auto& layer : model->layers) fully_shard(*layer, mesh, options);
    fully_shard(*model, mesh, options);
    torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.1));
    for (int step = 0; step < 3; ++step) {
      loss_of(nn::call(model, batch_of(step).chunk(world, 0)[w.rank()])).backward();
      opt.step();
      opt.zero_grad();
    }
    expect_same_parameters(*model, *reference, 1e-6);
  });
}

// A forward that throws (on every rank alike) leaves no stale root behind:
// the next step finds its root again and reduces every group.
TEST(FullyShardTest, AStepAfterAFailedForwardWorks) {
  run_fake_world(2, [](World& w) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    Stack model = make_stack({6, 8, 4}, 3);
    model->register_parameter("scale", at::ones({2}, at::kDouble));  // the root's own group
    for (auto& layer : model->layers) fully_shard(*layer, mesh);
    fully_shard(*model, mesh);
    bool fail = true;
    nn::register_forward_hook(*model->layers[1], [&fail](torch::nn::Module&, const nn::TensorList&, at::Tensor y) {
      TORCH_CHECK(!fail, "injected failure");
      return y;
    });
    const at::Tensor x = make_batch(4, 6, 1);
    EXPECT_NE(testing::error_of([&] { nn::call(model, x.chunk(2, 0)[w.rank()]); }).find("injected failure"),
              std::string::npos);
    fail = false;
    loss_of(nn::call(model, x.chunk(2, 0)[w.rank()])).backward();
    Stack reference = make_stack({6, 8, 4}, 3);
    loss_of(reference->forward(x)).backward();
    auto ref = reference->named_parameters();
    for (const auto& item : model->named_parameters()) {
      if (item.key() == "scale") continue;  // unused: no gradient
      ASSERT_TRUE(item.value().grad().defined()) << item.key();
      EXPECT_TRUE(torch::allclose(DTensor(item.value().grad()).full_tensor(), ref[item.key()].grad(), 1e-10, 1e-10))
          << item.key();
    }
    EXPECT_FALSE(fsdp_module_of(*model)->is_unsharded());
  });
}

TEST(FullyShardTest, ClearErrors) {
  run_fake_world(2, [](World&) {
    auto mesh3d = DeviceMesh::init(c10::kCPU, {1, 1, 2});
    Stack model = make_stack({4, 4}, 1);
    EXPECT_NE(testing::error_of([&] { fully_shard(*model, mesh3d); }).find("2-D (replicate, shard) mesh (HSDP)"),
              std::string::npos);
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    fully_shard(*model, mesh);
    EXPECT_NE(testing::error_of([&] { fully_shard(*model, mesh); }).find("already applied"), std::string::npos);
    torch::nn::LinearImpl bare(2, 2);  // not owned by a shared_ptr
    EXPECT_NE(testing::error_of([&] { fully_shard(bare, mesh); }).find("std::shared_ptr"), std::string::npos);
  });
}

}  // namespace
}  // namespace dtensor
