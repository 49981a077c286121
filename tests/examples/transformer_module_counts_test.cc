// Per-module collective counts of the tensor-parallel Transformer under
// CommDebugMode equal PyTorch's test_comm_mode_features
// (test_transformer_module_tracing, mesh of 4, no sequence parallel): the
// collectives a TP style issues in its module's input/output transforms are
// attributed to that module, as PyTorch's module tracker does.
#include <gtest/gtest.h>
#include <torch/utils.h>

#include <string>

#include "backends/fake/fake_world.h"
#include "core/dtensor.h"
#include "core/nn/module_call.h"
#include "debug/comm_debug_mode.h"
#include "testing/dtensor_test.h"
#include "examples/models/seeded_init.h"
#include "examples/models/transformer.h"

namespace dtensor {
namespace {

TEST(TransformerModuleCountsTest, ForwardCountsPerModuleMatchPyTorch) {
  run_fake_world(4, [](World&) {
    DeviceMesh mesh = DeviceMesh::init(c10::kCPU, {4}, {"tp"});
    const examples::ModelArgs args = examples::ModelArgs().dropout_p(0.0).seed(3);
    examples::Transformer model(args);
    examples::parallelize_transformer(*model, mesh, /*sequence_parallel=*/false);
    at::Tensor tokens = at::randint(args.vocab_size_, {8, 8}, examples::make_generator(11));
    debug::CommDebugMode comm;
    {
      auto guard = comm.enter(*model);
      nn::call(model, tokens);  // through the hooks, as PyTorch's model(inp)
    }
    EXPECT_COMM_MODULE_COUNTS(comm, "Global", "forward", {{"all_reduce", 6}, {"all_gather_into_tensor", 1}});
    EXPECT_COMM_MODULE_COUNTS(comm, "Transformer", "forward", {{"all_reduce", 6}, {"all_gather_into_tensor", 1}});
    ASSERT_EQ(args.n_layers_, 2);
    for (int layer = 0; layer < args.n_layers_; ++layer) {
      const std::string prefix = "Transformer.layers." + std::to_string(layer);
      SCOPED_TRACE(prefix);
      EXPECT_COMM_MODULE_COUNTS(comm, prefix, "forward", {{"all_reduce", 2}});
      EXPECT_COMM_MODULE_COUNTS(comm, prefix + ".attention", "forward", {{"all_reduce", 1}});
      EXPECT_COMM_MODULE_COUNTS(comm, prefix + ".attention.wo", "forward", {{"all_reduce", 1}});
      EXPECT_COMM_MODULE_COUNTS(comm, prefix + ".feed_forward", "forward", {{"all_reduce", 1}});
      EXPECT_COMM_MODULE_COUNTS(comm, prefix + ".feed_forward.w2", "forward", {{"all_reduce", 1}});
      EXPECT_COMM_MODULE_COUNTS(comm, prefix + ".attention.wq", "forward", {});
    }
    EXPECT_COMM_MODULE_COUNTS(comm, "Transformer.tok_embeddings", "forward", {{"all_reduce", 1}});
    EXPECT_COMM_MODULE_COUNTS(comm, "Transformer.pos_embeddings", "forward", {{"all_reduce", 1}});
    EXPECT_COMM_MODULE_COUNTS(comm, "Transformer.output", "forward", {{"all_gather_into_tensor", 1}});
    EXPECT_COMM_MODULE_COUNTS(comm, "Transformer.norm", "forward", {});
  });
}

// With sequence parallelism the input transforms (PrepareModuleInput,
// SequenceParallel) gather inside the module they prepare: each layer's
// attention and feed_forward start with an all_gather, and each block ends
// with a reduce_scatter inside wo / w2 (PyTorch's SP Transformer:
// forward all_gather 5, reduce_scatter 5 with 2 layers).
TEST(TransformerModuleCountsTest, SequenceParallelInputTransformsCountInTheirModule) {
  run_fake_world(4, [](World&) {
    DeviceMesh mesh = DeviceMesh::init(c10::kCPU, {4}, {"tp"});
    const examples::ModelArgs args = examples::ModelArgs().dropout_p(0.0).seed(3);
    examples::Transformer model(args);
    examples::parallelize_transformer(*model, mesh, /*sequence_parallel=*/true);
    at::Tensor tokens = at::randint(args.vocab_size_, {8, 8}, examples::make_generator(11));
    debug::CommDebugMode comm;
    {
      auto guard = comm.enter(*model);
      nn::call(model, tokens);  // through the hooks, as PyTorch's model(inp)
    }
    for (int layer = 0; layer < args.n_layers_; ++layer) {
      const std::string prefix = "Transformer.layers." + std::to_string(layer);
      SCOPED_TRACE(prefix);
      EXPECT_COMM_MODULE_COUNTS(comm, prefix + ".attention", "forward",
                                {{"all_gather_into_tensor", 1}, {"reduce_scatter_tensor", 1}});
      EXPECT_COMM_MODULE_COUNTS(comm, prefix + ".feed_forward", "forward",
                                {{"all_gather_into_tensor", 1}, {"reduce_scatter_tensor", 1}});
      // ColwiseParallel(input_layouts=Shard(1)) gathers in w1's own pre-hook.
      EXPECT_COMM_MODULE_COUNTS(comm, prefix + ".feed_forward.w1", "forward", {{"all_gather_into_tensor", 1}});
    }
  });
}

}  // namespace
}  // namespace dtensor
