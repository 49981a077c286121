// The Transformer of PyTorch's DTensor tests under its tensor-parallel plan
// (Transformer.parallelize), without and with sequence parallelism, on the
// fake world: Adam training matches one device (1-D mesh of 4 and 2x2
// dp x tp; float64 and float32), and the collectives per phase equal
// PyTorch's test_tp_examples counts.
#include <gtest/gtest.h>
#include <torch/nn/functional.h>
#include <torch/optim/adam.h>
#include <torch/optim/optimizer.h>
#include <torch/utils.h>

#include <algorithm>
#include <iostream>
#include <mutex>
#include <string>
#include <vector>

#include "backends/fake/fake_world.h"
#include "core/dtensor_impl.h"
#include "core/parallel/data_parallel.h"
#include "examples/models/seeded_init.h"
#include "examples/models/transformer.h"
#include "tests/examples/tp_test_util.h"

namespace dtensor {
namespace {

using testing::Counts;

constexpr int kSteps = 4;
constexpr int64_t kBatch = 8;
constexpr int64_t kSeqLen = 8;
constexpr double kLr = 0.01;

// Dropout 0 for parity (dropout on plain tensors of a fake world would draw
// from LibTorch's global generator, which the rank threads share).
examples::ModelArgs model_args(bool weight_tying = false) {
  return examples::ModelArgs().dropout_p(0.0).weight_tying(weight_tying).seed(3);
}

struct Batch {
  at::Tensor tokens, targets;
};

// One fixed batch for every step (PyTorch's test draws a new one per step;
// a fixed one also shows the loss going down).
std::vector<Batch> make_batches() {
  at::Generator gen = examples::make_generator(/*seed=*/11);
  const int64_t vocab = model_args().vocab_size_;
  const Batch batch{at::randint(vocab, {kBatch, kSeqLen}, gen), at::randint(vocab, {kBatch, kSeqLen}, gen)};
  return std::vector<Batch>(kSteps, batch);
}

at::Tensor loss_of(const at::Tensor& logits, const at::Tensor& targets) {
  return torch::nn::functional::cross_entropy(logits.reshape({-1, logits.size(-1)}), targets.reshape({-1}));
}

struct TrainRun {
  std::vector<double> losses;
  std::map<std::string, at::Tensor> params;
  Counts forward, backward, data_parallel, optimizer;  // of the first step
};

TrainRun single_device(c10::ScalarType dtype, bool weight_tying = false) {
  examples::Transformer model(model_args(weight_tying));
  model->to(dtype);
  torch::optim::Adam opt(model->parameters(), torch::optim::AdamOptions(kLr));
  TrainRun run;
  for (const Batch& b : make_batches()) {
    opt.zero_grad();
    at::Tensor loss = loss_of(model->forward(b.tokens), b.targets);
    loss.backward();
    opt.step();
    run.losses.push_back(loss.item<double>());
  }
  run.params = testing::full_parameters(*model);
  return run;
}

struct Case {
  std::vector<int64_t> mesh_shape;  // {4} (tp) or {2, 2} (dp, tp)
  bool sequence_parallel;
  c10::ScalarType dtype;
  bool weight_tying = false;
  bool local_output_for_attn = false;
  std::string name() const {
    return std::string(mesh_shape.size() == 1 ? "tp4" : "dp2xtp2") + (sequence_parallel ? "+sp" : "") +
           (weight_tying ? "+tied" : "") + (local_output_for_attn ? "+local_attn" : "") + " " +
           c10::toString(dtype);
  }
};

// Trains the parallelized Transformer on 4 fake ranks; returns rank 0's run.
TrainRun tensor_parallel(const Case& c, const std::vector<std::string>& trainable = {}) {
  const std::vector<Batch> batches = make_batches();
  TrainRun result;
  std::mutex mutex;
  run_fake_world(4, [&](World& world) {
    const bool two_d = c.mesh_shape.size() == 2;
    DeviceMesh mesh = two_d ? DeviceMesh::init(c10::kCPU, c.mesh_shape, {"dp", "tp"})
                            : DeviceMesh::init(c10::kCPU, c.mesh_shape, {"tp"});
    DeviceMesh tp = two_d ? mesh["tp"] : mesh;
    const int64_t dp_size = two_d ? mesh.size(0) : 1, dp_rank = two_d ? mesh.get_local_rank(0) : 0;
    examples::Transformer model(model_args(c.weight_tying));
    model->to(c.dtype);
    examples::parallelize_transformer(*model, tp, c.sequence_parallel, c.local_output_for_attn);
    torch::optim::Adam opt(model->parameters(), torch::optim::AdamOptions(kLr));
    if (!trainable.empty()) {  // freeze the others, after building the optimizer (as PyTorch's test)
      for (auto& item : model->named_parameters()) {
        const bool keep = std::find(trainable.begin(), trainable.end(), item.key()) != trainable.end();
        item.value().requires_grad_(keep);
      }
    }
    testing::CollectiveCounter counter(world);
    TrainRun run;
    for (int step = 0; step < kSteps; ++step) {
      at::Tensor tokens = batches[step].tokens.chunk(dp_size, 0)[dp_rank];
      at::Tensor targets = batches[step].targets.chunk(dp_size, 0)[dp_rank];
      opt.zero_grad();
      counter.take();
      at::Tensor logits = model->forward(tokens);
      Counts forward = counter.take();
      EXPECT_FALSE(is_dtensor(logits));  // output: Replicate, made local
      at::Tensor loss = loss_of(logits, targets);
      loss.backward();
      Counts backward = counter.take();
      if (two_d) average_gradients(*model, mesh["dp"]);
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
      if (two_d) {
        mesh["dp"].communicator(0).all_reduce(global);
        global.div_(static_cast<double>(dp_size));
      }
      run.losses.push_back(global.item<double>());
    }
    run.params = testing::full_parameters(*model);
    if (world.rank() == 0) {
      std::lock_guard<std::mutex> lock(mutex);
      result = run;
    }
  });
  return result;
}

double tolerance(c10::ScalarType dtype) { return dtype == at::kDouble ? 1e-10 : 1e-5; }

TEST(TransformerTensorParallelTest, TrainingMatchesSingleDevice) {
  for (c10::ScalarType dtype : {at::kDouble, at::kFloat}) {
    const TrainRun reference = single_device(dtype);
    EXPECT_LT(reference.losses.back(), reference.losses.front());  // it does train
    for (std::vector<int64_t> mesh_shape : {std::vector<int64_t>{4}, std::vector<int64_t>{2, 2}}) {
      for (bool sp : {false, true}) {
        const Case c{mesh_shape, sp, dtype};
        SCOPED_TRACE(c.name());
        const TrainRun tp = tensor_parallel(c);
        const double loss_diff = testing::max_abs_diff(tp.losses, reference.losses);
        const double param_diff = testing::max_abs_diff(tp.params, reference.params);
        std::cout << "[parity] transformer " << c.name() << ": max |loss diff| " << loss_diff
                  << ", max |param diff| " << param_diff << " over " << kSteps << " Adam steps\n";
        EXPECT_LE(loss_diff, tolerance(dtype));
        EXPECT_LE(param_diff, tolerance(dtype));
      }
    }
  }
}

// Weight tying: output.weight is tok_embeddings.weight, one S(0) DTensor that
// receives both gradients.
TEST(TransformerTensorParallelTest, TiedWeightsMatchSingleDevice) {
  const TrainRun reference = single_device(at::kDouble, /*weight_tying=*/true);
  for (bool sp : {false, true}) {
    const Case c{{4}, sp, at::kDouble, /*weight_tying=*/true};
    SCOPED_TRACE(c.name());
    const TrainRun tp = tensor_parallel(c);
    EXPECT_LE(testing::max_abs_diff(tp.losses, reference.losses), 1e-10);
    EXPECT_LE(testing::max_abs_diff(tp.params, reference.params), 1e-10);
  }
}

// Local attention outputs (PyTorch's local_output_for_attn): wq/wk/wv return
// this rank's heads as plain tensors and the attention derives the local
// head count from them, where PyTorch sets n_heads = n_heads // tp.
TEST(TransformerTensorParallelTest, LocalAttentionOutputsMatchSingleDevice) {
  const TrainRun reference = single_device(at::kDouble);
  const Case c{{2, 2}, true, at::kDouble, false, /*local_output_for_attn=*/true};
  const TrainRun tp = tensor_parallel(c);
  EXPECT_LE(testing::max_abs_diff(tp.losses, reference.losses), 1e-10);
  EXPECT_LE(testing::max_abs_diff(tp.params, reference.params), 1e-10);
}

// The same with one head per rank (tp = 4). The gradient of k comes back
// through k.transpose(1, 2) as a [8, 8, 4] local tensor with strides
// [32, 1, 8]; to_local's backward must derive the global strides from it (as
// PyTorch's compute_global_tensor_info does), or wk's backward picks a view
// the local tensor cannot take.
TEST(TransformerTensorParallelTest, LocalAttentionOutputsOneHeadPerRankMatchSingleDevice) {
  const TrainRun reference = single_device(at::kDouble);
  const TrainRun tp = tensor_parallel(Case{{4}, false, at::kDouble, false, /*local_output_for_attn=*/true});
  EXPECT_LE(testing::max_abs_diff(tp.losses, reference.losses), 1e-10);
  EXPECT_LE(testing::max_abs_diff(tp.params, reference.params), 1e-10);
  EXPECT_EQ(tp.forward, (Counts{{"all_reduce", 6}, {"all_gather_into_tensor", 1}}));
  EXPECT_EQ(tp.backward, (Counts{{"all_reduce", 9}}));
}

// PyTorch's test_tp_examples (test_transformer_training, mesh of 4, CommDebugMode
// around each phase):
//   without sequence parallelism: forward {all_reduce 6, all_gather_into_tensor 1}
//     (2 embeddings + wo and w2 of 2 layers; the output's gather), backward
//     {all_reduce 9} (the Partial input gradient of wq, wk, wv and w1 of 2
//     layers, and of output), optimizer step {};
//   with it: forward {reduce_scatter_tensor 6, all_gather_into_tensor 6},
//     backward {reduce_scatter_tensor 5, all_gather_into_tensor 6}.
TEST(TransformerTensorParallelTest, CollectivesMatchPyTorch) {
  const TrainRun plain = tensor_parallel({{4}, false, at::kDouble});
  EXPECT_EQ(plain.forward, (Counts{{"all_reduce", 6}, {"all_gather_into_tensor", 1}}))
      << testing::to_string(plain.forward);
  EXPECT_EQ(plain.backward, (Counts{{"all_reduce", 9}})) << testing::to_string(plain.backward);
  EXPECT_EQ(plain.optimizer, Counts{}) << testing::to_string(plain.optimizer);
  const TrainRun sp = tensor_parallel({{4}, true, at::kDouble});
  EXPECT_EQ(sp.forward, (Counts{{"reduce_scatter_tensor", 6}, {"all_gather_into_tensor", 6}}))
      << testing::to_string(sp.forward);
  EXPECT_EQ(sp.backward, (Counts{{"reduce_scatter_tensor", 5}, {"all_gather_into_tensor", 6}}))
      << testing::to_string(sp.backward);
  // PyTorch: optim {all_reduce 30}: SequenceParallel's LayerNorm weights and
  // biases (10) are Replicate but get Partial gradients; Adam reads each
  // gradient in add_ and twice in addcmul_, and each read all-reduces.
  EXPECT_EQ(sp.optimizer, (Counts{{"all_reduce", 30}})) << testing::to_string(sp.optimizer);
}

// PyTorch's test_transformer_req_grad: only some parameters train (the rest
// frozen after building the optimizer); sequence parallel, float32.
TEST(TransformerTensorParallelTest, CollectivesWithFrozenParametersMatchPyTorch) {
  struct ReqGradCase {
    std::vector<std::string> trainable;
    Counts backward, optimizer;
  };
  const std::vector<ReqGradCase> cases = {
      {{"output.weight", "norm.weight", "norm.bias"}, {{"reduce_scatter_tensor", 1}}, {{"all_reduce", 6}}},
      {{"tok_embeddings.weight", "output.weight"},
       {{"reduce_scatter_tensor", 5}, {"all_gather_into_tensor", 5}},
       {}},
      {{"tok_embeddings.weight", "output.weight", "norm.weight", "norm.bias"},
       {{"reduce_scatter_tensor", 5}, {"all_gather_into_tensor", 5}},
       {{"all_reduce", 6}}},
      {{"tok_embeddings.weight", "output.weight", "norm.weight", "norm.bias", "layers.1.ffn_norm.weight",
        "layers.1.ffn_norm.bias"},
       {{"reduce_scatter_tensor", 5}, {"all_gather_into_tensor", 5}},
       {{"all_reduce", 12}}},
  };
  for (const ReqGradCase& rc : cases) {
    std::string name;
    for (const auto& t : rc.trainable) name += t + " ";
    SCOPED_TRACE(name);
    TrainRun run;
    try {
      run = tensor_parallel({{4}, true, at::kFloat}, rc.trainable);
    } catch (const c10::Error& e) {
      ADD_FAILURE() << e.what_without_backtrace();
      continue;
    }
    EXPECT_EQ(run.backward, rc.backward) << testing::to_string(run.backward);
    EXPECT_EQ(run.optimizer, rc.optimizer) << testing::to_string(run.optimizer);
  }
}

// PyTorch's "varied layer/param types" case: a LayerNorm whose bias trains
// but whose weight is frozen (native_layer_norm_backward output_mask
// [true, false, true]). Disabled: it currently fails in core/dispatch, whose
// sharding cache key ignores bool-list arguments (append_arg_key keys any
// c10::List as "8"), so the output metas cached for another LayerNorm's mask
// [true, false, false] are reused and grad_bias gets shape [] ("Function
// NativeLayerNormBackward0 returned an invalid gradient at index 2"). Enable
// it once output_mask is part of the key.
TEST(TransformerTensorParallelTest, CollectivesWithFrozenLayerNormWeightMatchPyTorch) {
  const TrainRun run =
      tensor_parallel({{4}, true, at::kFloat},
                      {"tok_embeddings.weight", "layers.0.attention.wv.weight", "layers.0.feed_forward.w1.bias",
                       "layers.1.ffn_norm.bias", "layers.1.feed_forward.w2.weight", "output.weight"});
  EXPECT_EQ(run.backward, (Counts{{"reduce_scatter_tensor", 5}, {"all_gather_into_tensor", 5}}))
      << testing::to_string(run.backward);
  EXPECT_EQ(run.optimizer, (Counts{{"all_reduce", 3}})) << testing::to_string(run.optimizer);
}

}  // namespace
}  // namespace dtensor
