// Tests of context_parallel: attention on sequence-sharded q/k/v equals the
// single-device attention in values and gradients (float64) on meshes of 2
// and 4, causal or not, even or uneven sequence shards, with 2 all_gathers
// forward and 2 reduce_scatters backward; the example Transformer's
// attention under it; what runs outside it; the errors users see.
#include "core/experimental/context_parallel.h"

#include <gtest/gtest.h>
#include <torch/utils.h>

#include <string>
#include <vector>

#include "backends/fake/fake_world.h"
#include "core/compat/torch_compat.h"
#include "core/dtensor.h"
#include "core/nn/module_call.h"
#include "core/parallel/distribute_module.h"
#include "examples/models/transformer.h"
#include "testing/collective_counter.h"
#include "testing/error_of.h"

namespace dtensor {
namespace {

#if DTENSOR_TORCH_AT_LEAST(2, 0)

using experimental::context_parallel;
using testing::CollectiveCounter;
using testing::Counts;
using testing::error_of;

constexpr double kTol = 1e-10;

bool close(const at::Tensor& actual, const at::Tensor& expected) {
  return torch::allclose(actual, expected, /*rtol=*/0, /*atol=*/kTol);
}

at::Tensor attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, bool causal) {
  return at::scaled_dot_product_attention(q, k, v, /*attn_mask=*/{}, /*dropout_p=*/0.0, causal);
}

struct Case {
  int64_t world_size;
  int64_t seq;
  bool causal;
};

TEST(ContextParallelTest, AttentionMatchesOneDeviceWithGatheredKeysAndValues) {
  std::vector<Case> cases;
  for (int64_t world_size : {2, 4}) {
    for (int64_t seq : {16, 10}) {  // 10 over 4 ranks: 3, 3, 3, 1
      for (bool causal : {false, true}) cases.push_back({world_size, seq, causal});
    }
  }
  for (const Case& c : cases) {
    SCOPED_TRACE(c10::str("world ", c.world_size, " seq ", c.seq, " causal ", c.causal));
    torch::manual_seed(0);
    const std::vector<int64_t> shape{2, 3, c.seq, 8};
    const at::Tensor q = torch::randn(shape, torch::kDouble), k = torch::randn(shape, torch::kDouble),
                     v = torch::randn(shape, torch::kDouble), grad = torch::randn(shape, torch::kDouble);
    std::vector<at::Tensor> ref{q.clone().requires_grad_(true), k.clone().requires_grad_(true),
                                v.clone().requires_grad_(true)};
    const at::Tensor expected = attention(ref[0], ref[1], ref[2], c.causal);
    expected.backward(grad);

    run_fake_world(c.world_size, [&](World& world) {
      auto mesh = DeviceMesh::init(c10::kCPU, {c.world_size});
      std::vector<DTensor> in;
      for (const at::Tensor& t : {q, k, v}) in.push_back(distribute_tensor(t.clone().requires_grad_(true), mesh, {Shard(2)}));
      const DTensor g = distribute_tensor(grad, mesh, {Shard(2)});
      CollectiveCounter counter(world);
      auto guard = context_parallel();
      at::Tensor out = attention(in[0], in[1], in[2], c.causal);
      EXPECT_EQ(counter.take(), (Counts{{"all_gather_into_tensor", 2}}));
      ASSERT_TRUE(is_dtensor(out));
      EXPECT_EQ(DTensor(out).placements(), (Placements{Shard(2)}));
      out.backward(g);
      EXPECT_EQ(counter.take(), (Counts{{"reduce_scatter_tensor", 2}}));
      EXPECT_TRUE(close(DTensor(out).full_tensor(), expected))
          << "world " << c.world_size << " seq " << c.seq << " causal " << c.causal << " max diff "
          << (DTensor(out).full_tensor() - expected).abs().max().item<double>();
      for (size_t i = 0; i < 3; ++i) {
        SCOPED_TRACE(c10::str("gradient of input ", i));
        ASSERT_TRUE(in[i].grad().defined());
        EXPECT_EQ(DTensor(in[i].grad()).placements(), (Placements{Shard(2)}));
        EXPECT_TRUE(close(DTensor(in[i].grad()).full_tensor(), ref[i].grad()));
      }
    });
  }
}

TEST(ContextParallelTest, BatchShardedOnAnotherMeshDim) {
  torch::manual_seed(1);
  const std::vector<int64_t> shape{4, 2, 12, 4};
  const at::Tensor q = torch::randn(shape, torch::kDouble), k = torch::randn(shape, torch::kDouble),
                   v = torch::randn(shape, torch::kDouble);
  const at::Tensor expected = attention(q, k, v, /*causal=*/true);
  run_fake_world(4, [&](World& world) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2, 2}, {"dp", "cp"});
    const Placements placements{Shard(0), Shard(2)};
    DTensor dq = distribute_tensor(q, mesh, placements), dk = distribute_tensor(k, mesh, placements),
            dv = distribute_tensor(v, mesh, placements);
    CollectiveCounter counter(world);
    auto guard = context_parallel();
    at::Tensor out = attention(dq, dk, dv, /*causal=*/true);
    EXPECT_EQ(counter.take(), (Counts{{"all_gather_into_tensor", 2}}));
    EXPECT_EQ(DTensor(out).placements(), placements);
    EXPECT_TRUE(close(DTensor(out).full_tensor(), expected));
  });
}

// Outside the guard, and inside it for a query not sharded on the sequence,
// attention runs as before (values right, not the context-parallel comms).
TEST(ContextParallelTest, OtherwiseAttentionRunsAsBefore) {
  torch::manual_seed(2);
  const std::vector<int64_t> shape{2, 4, 8, 4};
  const at::Tensor q = torch::randn(shape, torch::kDouble), k = torch::randn(shape, torch::kDouble),
                   v = torch::randn(shape, torch::kDouble);
  const at::Tensor expected = attention(q, k, v, /*causal=*/true);
  run_fake_world(2, [&](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    DTensor sq = distribute_tensor(q, mesh, {Shard(2)}), sk = distribute_tensor(k, mesh, {Shard(2)}),
            sv = distribute_tensor(v, mesh, {Shard(2)});
    EXPECT_TRUE(close(DTensor(attention(sq, sk, sv, true)).full_tensor(), expected));
    DTensor hq = distribute_tensor(q, mesh, {Shard(1)}), hk = distribute_tensor(k, mesh, {Shard(1)}),
            hv = distribute_tensor(v, mesh, {Shard(1)});
    auto guard = context_parallel();
    at::Tensor heads = attention(hq, hk, hv, true);
    EXPECT_EQ(DTensor(heads).placements(), (Placements{Shard(1)}));
    EXPECT_TRUE(close(DTensor(heads).full_tensor(), expected));
  });
}

void expect_contains(const std::string& text, const std::vector<std::string>& parts) {
  EXPECT_FALSE(text.empty()) << "expected an error";
  for (const auto& part : parts) EXPECT_NE(text.find(part), std::string::npos) << "'" << part << "' not in: " << text;
}

TEST(ContextParallelTest, ErrorsSayWhatToDo) {
  const at::Tensor t = torch::randn({1, 2, 8, 4}, torch::kDouble);
  run_fake_world(2, [&](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    DTensor q = distribute_tensor(t, mesh, {Shard(2)}), r = distribute_tensor(t, mesh, {Replicate()});
    auto guard = context_parallel();
    expect_contains(error_of([&] { attention(q, r, q, false); }), {"sharded like the query", "[R]"});
    expect_contains(error_of([&] { at::scaled_dot_product_attention(q, q, q, q.select(-1, 0), 0.0, false); }),
                    {"attn_mask is not supported"});
    expect_contains(error_of([&] { at::scaled_dot_product_attention(q, q, q, {}, 0.5, false); }),
                    {"dropout_p=0.5"});
  });
}

// The example Transformer's attention (ModelArgs::use_sdpa) on an input
// sharded on the sequence: replicated weights, output and every gradient as
// on one device, and the collectives of the attention alone.
TEST(ContextParallelTest, ExampleTransformerAttention) {
  for (int64_t world_size : {2, 4}) {
    for (int64_t seq : {8, 6}) {
      SCOPED_TRACE(c10::str("world ", world_size, " seq ", seq));
      const auto args = examples::ModelArgs().dim(16).n_heads(4).dropout_p(0.0).use_sdpa(true);
      torch::manual_seed(3);
      examples::Attention ref(args);
      ref->to(torch::kDouble);
      ref->eval();
      // Batch 1: the projections' matmul flattens [batch, seq] and keeps a
      // sequence shard only when the batch is 1 (Note [Shards through
      // reshapes] in core/ops/view_reshape_rule.cc).
      const at::Tensor x = torch::randn({1, seq, 16}, torch::kDouble);
      at::Tensor ref_x = x.clone().requires_grad_(true);
      const at::Tensor expected = nn::call(ref, ref_x);
      const at::Tensor grad = torch::randn(expected.sizes(), torch::kDouble);
      expected.backward(grad);

      run_fake_world(world_size, [&](World& world) {
        auto mesh = DeviceMesh::init(c10::kCPU, {world_size});
        examples::Attention attn(args);
        attn->to(torch::kDouble);
        attn->eval();
        {
          torch::NoGradGuard no_grad;
          for (const auto& p : ref->named_parameters()) attn->named_parameters()[p.key()].copy_(p.value());
        }
        distribute_module(*attn, mesh);
        DTensor dx = distribute_tensor(x.clone().requires_grad_(true), mesh, {Shard(1)});
        const DTensor g = distribute_tensor(grad, mesh, {Shard(1)});
        CollectiveCounter counter(world);
        auto guard = context_parallel();
        at::Tensor out = nn::call(attn, dx);
        EXPECT_EQ(counter.take(), (Counts{{"all_gather_into_tensor", 2}}));
        EXPECT_EQ(DTensor(out).placements(), (Placements{Shard(1)}));
        out.backward(g);
        EXPECT_EQ(counter.take(), (Counts{{"reduce_scatter_tensor", 2}}));
        EXPECT_TRUE(close(DTensor(out).full_tensor(), expected));
        EXPECT_TRUE(close(DTensor(dx.grad()).full_tensor(), ref_x.grad()));
        for (const auto& p : ref->named_parameters()) {
          SCOPED_TRACE(p.key());
          EXPECT_TRUE(close(DTensor(attn->named_parameters()[p.key()].grad()).full_tensor(), p.value().grad()));
        }
      });
    }
  }
}

#else  // LibTorch 1.13: no hook in its attention op, so the guard refuses.

TEST(ContextParallelTest, RefusedOnLibTorch1) {
  EXPECT_NE(testing::error_of([] { auto guard = experimental::context_parallel(); })
                .find("context_parallel needs LibTorch 2.x"),
            std::string::npos);
}

#endif

}  // namespace
}  // namespace dtensor
