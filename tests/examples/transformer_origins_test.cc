// Why every collective of the tensor-parallel Transformer happens (issue #21):
// forward and backward, with and without sequence parallelism, every
// collective carries an origin, and the origins are the ones the TP plan
// implies: the styles' boundaries (explicit) and, where sharding propagation
// must move data itself, the op and input it did it for (implicit). Also:
// strict mode passes on the TP Transformer's forward.
#include <gtest/gtest.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/utils.h>

#include <map>
#include <string>
#include <tuple>

#include "backends/fake/fake_world.h"
#include "core/dtensor.h"
#include "core/nn/module_call.h"
#include "debug/comm_debug_mode.h"
#include "examples/models/seeded_init.h"
#include "examples/models/transformer.h"
#include "testing/dtensor_test.h"

namespace dtensor {
namespace {

// "phase module kind <- origin" -> count, for one rank's trace.
using OriginCounts = std::map<std::string, int64_t>;

OriginCounts origin_counts(const trace::CommTrace& trace, int64_t* missing) {
  OriginCounts out;
  for (const trace::CollectiveRecord& r : trace.collectives) {
    if (!r.origin) {
      ++*missing;
      continue;
    }
    ++out[std::string(trace::phase_name(r.phase)) + " " + r.module + " " + r.kind + " <- " +
          origin_summary(*r.origin)];
  }
  return out;
}

std::string text(const OriginCounts& counts) {
  std::string out;
  for (const auto& [k, n] : counts) out += "  {\"" + k + "\", " + std::to_string(n) + "},\n";
  return out;
}

// Runs forward and backward of the TP Transformer on 4 ranks and returns
// rank 0's origins.
OriginCounts transformer_origins(bool sequence_parallel) {
  OriginCounts result;
  run_fake_world(4, [&](World& world) {
    DeviceMesh mesh = DeviceMesh::init(c10::kCPU, {4}, {"tp"});
    const examples::ModelArgs args = examples::ModelArgs().dropout_p(0.0).seed(3);
    examples::Transformer model(args);
    examples::parallelize_transformer(*model, mesh, sequence_parallel);
    at::Tensor tokens = at::randint(args.vocab_size_, {8, 8}, examples::make_generator(11));
    debug::CommDebugMode comm;
    {
      auto guard = comm.enter(*model);
      at::Tensor out = nn::call(model, tokens);
      (is_dtensor(out) ? DTensor(out).to_local() : out).sum().backward();
    }
    int64_t missing = 0;
    OriginCounts counts = origin_counts(comm.trace(), &missing);
    EXPECT_EQ(missing, 0) << "collectives without an origin on rank " << world.rank();
    if (world.rank() == 0) result = counts;
  });
  return result;
}

// Without SP every collective is a style boundary: the Rowwise outputs'
// all_reduce in forward, the Colwise inputs' gradient all_reduce in
// backward, the output's gather; none is implicit (PyTorch's TP Transformer
// issues the same 6 + 1 forward collectives, transformer_module_counts_test).
TEST(TransformerOriginsTest, EveryCollectiveWithoutSequenceParallelHasItsOrigin) {
  const OriginCounts actual = transformer_origins(/*sequence_parallel=*/false);
  const OriginCounts expected = {
      {"backward Transformer.layers.0.attention.wk all_reduce <- explicit parallel_style (ColwiseParallel on torch::nn::LinearImpl (input) backward), P(sum) -> R", 1},
      {"backward Transformer.layers.0.attention.wq all_reduce <- explicit parallel_style (ColwiseParallel on torch::nn::LinearImpl (input) backward), P(sum) -> R", 1},
      {"backward Transformer.layers.0.attention.wv all_reduce <- explicit parallel_style (ColwiseParallel on torch::nn::LinearImpl (input) backward), P(sum) -> R", 1},
      {"backward Transformer.layers.0.feed_forward.w1 all_reduce <- explicit parallel_style (ColwiseParallel on torch::nn::LinearImpl (input) backward), P(sum) -> R", 1},
      {"backward Transformer.layers.1.attention.wk all_reduce <- explicit parallel_style (ColwiseParallel on torch::nn::LinearImpl (input) backward), P(sum) -> R", 1},
      {"backward Transformer.layers.1.attention.wq all_reduce <- explicit parallel_style (ColwiseParallel on torch::nn::LinearImpl (input) backward), P(sum) -> R", 1},
      {"backward Transformer.layers.1.attention.wv all_reduce <- explicit parallel_style (ColwiseParallel on torch::nn::LinearImpl (input) backward), P(sum) -> R", 1},
      {"backward Transformer.layers.1.feed_forward.w1 all_reduce <- explicit parallel_style (ColwiseParallel on torch::nn::LinearImpl (input) backward), P(sum) -> R", 1},
      {"backward Transformer.output all_reduce <- explicit parallel_style (ColwiseParallel on torch::nn::LinearImpl (input) backward), P(sum) -> R", 1},
      {"forward Transformer.layers.0.attention.wo all_reduce <- explicit parallel_style (RowwiseParallel on torch::nn::LinearImpl (output)), P(sum) -> R", 1},
      {"forward Transformer.layers.0.feed_forward.w2 all_reduce <- explicit parallel_style (RowwiseParallel on torch::nn::LinearImpl (output)), P(sum) -> R", 1},
      {"forward Transformer.layers.1.attention.wo all_reduce <- explicit parallel_style (RowwiseParallel on torch::nn::LinearImpl (output)), P(sum) -> R", 1},
      {"forward Transformer.layers.1.feed_forward.w2 all_reduce <- explicit parallel_style (RowwiseParallel on torch::nn::LinearImpl (output)), P(sum) -> R", 1},
      {"forward Transformer.output all_gather_into_tensor <- explicit parallel_style (ColwiseParallel on torch::nn::LinearImpl (output)), S(2) -> R", 1},
      {"forward Transformer.pos_embeddings all_reduce <- explicit parallel_style (RowwiseParallel on torch::nn::EmbeddingImpl (output)), P(sum) -> R", 1},
      {"forward Transformer.tok_embeddings all_reduce <- explicit parallel_style (RowwiseParallel on torch::nn::EmbeddingImpl (output)), P(sum) -> R", 1},
  };
  EXPECT_EQ(actual, expected) << "actual:\n" << text(actual);
}

// With SP the boundaries gather and reduce-scatter along the sequence dim
// (PrepareModuleInput of attention, ColwiseParallel(input_layouts=S(1)) of w1
// and output, Rowwise(output_layouts=S(1))), backward the conjugates; still
// no implicit collective.
TEST(TransformerOriginsTest, EveryCollectiveWithSequenceParallelHasItsOrigin) {
  const OriginCounts actual = transformer_origins(/*sequence_parallel=*/true);
  const OriginCounts expected = {
      {"backward Transformer.layers.0.attention reduce_scatter_tensor <- explicit parallel_style (PrepareModuleInput(input_layouts=[S(1)], desired_input_layouts=[R], use_local_output=false) on dtensor::examples::AttentionImpl (input 0) backward), P(sum) -> S(1)", 1},
      {"backward Transformer.layers.0.attention.wo all_gather_into_tensor <- explicit parallel_style (RowwiseParallel on torch::nn::LinearImpl (output) backward), S(1) -> R", 1},
      {"backward Transformer.layers.0.feed_forward.w1 reduce_scatter_tensor <- explicit parallel_style (ColwiseParallel on torch::nn::LinearImpl (input) backward), P(sum) -> S(1)", 1},
      {"backward Transformer.layers.0.feed_forward.w2 all_gather_into_tensor <- explicit parallel_style (RowwiseParallel on torch::nn::LinearImpl (output) backward), S(1) -> R", 1},
      {"backward Transformer.layers.1.attention reduce_scatter_tensor <- explicit parallel_style (PrepareModuleInput(input_layouts=[S(1)], desired_input_layouts=[R], use_local_output=false) on dtensor::examples::AttentionImpl (input 0) backward), P(sum) -> S(1)", 1},
      {"backward Transformer.layers.1.attention.wo all_gather_into_tensor <- explicit parallel_style (RowwiseParallel on torch::nn::LinearImpl (output) backward), S(1) -> R", 1},
      {"backward Transformer.layers.1.feed_forward.w1 reduce_scatter_tensor <- explicit parallel_style (ColwiseParallel on torch::nn::LinearImpl (input) backward), P(sum) -> S(1)", 1},
      {"backward Transformer.layers.1.feed_forward.w2 all_gather_into_tensor <- explicit parallel_style (RowwiseParallel on torch::nn::LinearImpl (output) backward), S(1) -> R", 1},
      {"backward Transformer.output reduce_scatter_tensor <- explicit parallel_style (ColwiseParallel on torch::nn::LinearImpl (input) backward), P(sum) -> S(1)", 1},
      {"backward Transformer.pos_embeddings all_gather_into_tensor <- explicit parallel_style (RowwiseParallel on torch::nn::EmbeddingImpl (output) backward), S(0) -> R", 1},
      {"backward Transformer.tok_embeddings all_gather_into_tensor <- explicit parallel_style (RowwiseParallel on torch::nn::EmbeddingImpl (output) backward), S(1) -> R", 1},
      {"forward Transformer.layers.0.attention all_gather_into_tensor <- explicit parallel_style (PrepareModuleInput(input_layouts=[S(1)], desired_input_layouts=[R], use_local_output=false) on dtensor::examples::AttentionImpl (input 0)), S(1) -> R", 1},
      {"forward Transformer.layers.0.attention.wo reduce_scatter_tensor <- explicit parallel_style (RowwiseParallel on torch::nn::LinearImpl (output)), P(sum) -> S(1)", 1},
      {"forward Transformer.layers.0.feed_forward.w1 all_gather_into_tensor <- explicit parallel_style (ColwiseParallel on torch::nn::LinearImpl (input)), S(1) -> R", 1},
      {"forward Transformer.layers.0.feed_forward.w2 reduce_scatter_tensor <- explicit parallel_style (RowwiseParallel on torch::nn::LinearImpl (output)), P(sum) -> S(1)", 1},
      {"forward Transformer.layers.1.attention all_gather_into_tensor <- explicit parallel_style (PrepareModuleInput(input_layouts=[S(1)], desired_input_layouts=[R], use_local_output=false) on dtensor::examples::AttentionImpl (input 0)), S(1) -> R", 1},
      {"forward Transformer.layers.1.attention.wo reduce_scatter_tensor <- explicit parallel_style (RowwiseParallel on torch::nn::LinearImpl (output)), P(sum) -> S(1)", 1},
      {"forward Transformer.layers.1.feed_forward.w1 all_gather_into_tensor <- explicit parallel_style (ColwiseParallel on torch::nn::LinearImpl (input)), S(1) -> R", 1},
      {"forward Transformer.layers.1.feed_forward.w2 reduce_scatter_tensor <- explicit parallel_style (RowwiseParallel on torch::nn::LinearImpl (output)), P(sum) -> S(1)", 1},
      {"forward Transformer.output all_gather_into_tensor <- explicit parallel_style (ColwiseParallel on torch::nn::LinearImpl (input)), S(1) -> R", 1},
      {"forward Transformer.output all_gather_into_tensor <- explicit parallel_style (ColwiseParallel on torch::nn::LinearImpl (output)), S(2) -> R", 1},
      {"forward Transformer.pos_embeddings reduce_scatter_tensor <- explicit parallel_style (RowwiseParallel on torch::nn::EmbeddingImpl (output)), P(sum) -> S(0)", 1},
      {"forward Transformer.tok_embeddings reduce_scatter_tensor <- explicit parallel_style (RowwiseParallel on torch::nn::EmbeddingImpl (output)), P(sum) -> S(1)", 1},
  };
  EXPECT_EQ(actual, expected) << "actual:\n" << text(actual);
}

TEST(TransformerOriginsTest, StrictModePassesOnTheTpTransformer) {
  for (bool sp : {false, true}) {
    SCOPED_TRACE(sp ? "sequence parallel" : "tensor parallel");
    run_fake_world(4, [&](World&) {
      DeviceMesh mesh = DeviceMesh::init(c10::kCPU, {4}, {"tp"});
      const examples::ModelArgs args = examples::ModelArgs().dropout_p(0.0).seed(3);
      examples::Transformer model(args);
      examples::parallelize_transformer(*model, mesh, sp);
      at::Tensor tokens = at::randint(args.vocab_size_, {8, 8}, examples::make_generator(11));
      EXPECT_NO_IMPLICIT_REDISTRIBUTION(nn::call(model, tokens));
    });
  }
}

}  // namespace
}  // namespace dtensor
