// Tests of parallelize_module and the parallel styles on single modules:
// wildcard paths, parameter placements, boundary layouts, collectives issued,
// and the errors users see.
#include "core/parallel/parallelize.h"

#include <gtest/gtest.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/utils.h>

#include <map>
#include <string>
#include <vector>

#include "backends/fake/fake_world.h"
#include "core/dtensor_impl.h"
#include "core/nn/module_call.h"
#include "testing/collective_counter.h"
#include "testing/error_of.h"

namespace dtensor {
namespace {

using testing::error_of;

using testing::CollectiveCounter;
using testing::Counts;

void expect_contains(const std::string& text, const std::vector<std::string>& parts) {
  EXPECT_FALSE(text.empty()) << "expected an error";
  for (const auto& part : parts)
    EXPECT_NE(text.find(part), std::string::npos) << "'" << part << "' not in: " << text;
}

TEST(FnmatchTest, MatchesLikePythonFnmatch) {
  struct Case {
    const char* name;
    const char* pattern;
    bool expected;
  };
  const std::vector<Case> cases = {
      {"layers", "layers", true},
      {"layers", "layer", false},
      {"0", "*", true},
      {"", "*", true},
      {"wq", "w?", true},
      {"w", "w?", false},
      {"w1", "w[12]", true},
      {"w3", "w[12]", false},
      {"w3", "w[!12]", true},
      {"w1", "w[!12]", false},
      {"wb", "w[a-c]", true},
      {"attention", "att*n", true},
      {"attention", "*tion", true},
      {"attn", "a*b", false},
      {"w[", "w[", true},
      {"a.b", "a*", true},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.name) + " ~ " + c.pattern);
    EXPECT_EQ(fnmatch(c.name, c.pattern), c.expected);
  }
}

struct BlockImpl : torch::nn::Module {
  BlockImpl() {
    attention = register_module("attention", torch::nn::Sequential());
    attention->push_back("wq", torch::nn::Linear(4, 4));
    attention->push_back("wk", torch::nn::Linear(4, 4));
    norm = register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({4})));
  }
  torch::nn::Sequential attention{nullptr};
  torch::nn::LayerNorm norm{nullptr};
};
TORCH_MODULE(Block);

struct StackImpl : torch::nn::Module {
  StackImpl() {
    layers = register_module("layers", torch::nn::ModuleList());
    layers->push_back(Block());
    layers->push_back(Block());
    head = register_module("head", torch::nn::Linear(4, 2));
  }
  torch::nn::ModuleList layers{nullptr};
  torch::nn::Linear head{nullptr};
};
TORCH_MODULE(Stack);

TEST(ParallelizeModuleTest, WildcardPathsResolveInChildOrder) {
  Stack stack;
  EXPECT_EQ(match_module_paths(*stack, "layers.*.attention.wq"),
            (std::vector<std::string>{"layers.0.attention.wq", "layers.1.attention.wq"}));
  EXPECT_EQ(match_module_paths(*stack, "layers.1.attention.w?"),
            (std::vector<std::string>{"layers.1.attention.wq", "layers.1.attention.wk"}));
  EXPECT_EQ(match_module_paths(*stack, "head"), (std::vector<std::string>{"head"}));
  EXPECT_EQ(match_module_paths(*stack, ""), (std::vector<std::string>{""}));
  expect_contains(error_of([&] { match_module_paths(*stack, "layers.*.attn.wq"); }),
                  {"'layers.*.attn.wq'", "no child matches 'attn'", "attention, norm"});
}

TEST(ParallelizeModuleTest, AppliesStylesToEveryMatch) {
  run_fake_world(2, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    Stack stack;
    parallelize_module(*stack, mesh,
                       {{"layers.*.attention.wq", ColwiseParallel()},
                        {"layers.*.attention.wk", RowwiseParallel()},
                        {"layers.*.norm", SequenceParallel()}});
    for (const auto& item : stack->named_parameters()) {
      const std::string& name = item.key();
      SCOPED_TRACE(name);
      if (name.find("head") == 0) {
        EXPECT_FALSE(is_dtensor(item.value()));  // not in the plan: untouched
        continue;
      }
      ASSERT_TRUE(is_dtensor(item.value()));
      Placements expected = {Replicate()};  // wk.bias, norm.*
      if (name.find("wq.") != std::string::npos) expected = {Shard(0)};
      if (name.find("wk.weight") != std::string::npos) expected = {Shard(1)};
      EXPECT_EQ(DTensor(item.value()).placements(), expected);
    }
  });
}

TEST(ParallelizeModuleTest, ErrorsNameTheEntryAndWhatToDo) {
  run_fake_world(4, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2, 2}, {"dp", "tp"});
    Stack stack;
    expect_contains(error_of([&] {
                      parallelize_module(*stack, mesh, {{"head", ColwiseParallel()}});
                    }),
                    {"1-D mesh", "mesh[\"tp\"]"});
    expect_contains(error_of([&] {
                      parallelize_module(*stack, mesh["tp"], {{"layers.0.norm", ColwiseParallel()}});
                    }),
                    {"plan entry {\"layers.0.norm\", ColwiseParallel(", "'layers.0.norm'",
                     "torch::nn::Linear and torch::nn::Embedding", "LayerNorm"});
    expect_contains(error_of([&] {
                      parallelize_module(*stack, mesh["tp"], {{"layers.2", SequenceParallel()}});
                    }),
                    {"'layers.2'", "no child matches '2'", "0, 1"});
  });
}

TEST(ParallelStyleTest, ToStringShowsOptions) {
  EXPECT_EQ(ColwiseParallel().to_string(),
            "ColwiseParallel(input_layouts=R, output_layouts=S(-1), use_local_output=true)");
  EXPECT_EQ(RowwiseParallel().output_layouts(Shard(1)).use_local_output(false).to_string(),
            "RowwiseParallel(input_layouts=S(-1), output_layouts=S(1), use_local_output=false)");
  EXPECT_EQ(SequenceParallel().to_string(), "SequenceParallel(sequence_dim=1, use_local_output=false)");
  EXPECT_EQ(PrepareModuleInput()
                .input_layouts({Shard(1), std::nullopt})
                .desired_input_layouts({Replicate(), std::nullopt})
                .to_string(),
            "PrepareModuleInput(input_layouts=[S(1), None], desired_input_layouts=[R, None], "
            "use_local_output=false)");
  EXPECT_EQ(PrepareModuleOutput().output_layouts(Shard(0)).to_string(),
            "PrepareModuleOutput(output_layouts=S(0), desired_output_layouts=R, use_local_output=true)");
}

TEST(ColwiseRowwiseTest, LinearPairComputesTheMlpWithOneAllReduce) {
  torch::manual_seed(0);
  torch::nn::Linear ref1(6, 8), ref2(8, 6);
  at::Tensor x = torch::randn({5, 6});
  at::Tensor expected = ref2(ref1(x).relu());
  run_fake_world(4, [&](World& world) {
    auto mesh = DeviceMesh::init(c10::kCPU, {4});
    torch::nn::Linear l1(6, 8), l2(8, 6);
    {
      torch::NoGradGuard no_grad;
      for (auto [dst, src] : {std::pair{l1, ref1}, std::pair{l2, ref2}}) {
        dst->weight.copy_(src->weight);
        dst->bias.copy_(src->bias);
      }
    }
    ColwiseParallel().apply(*l1, mesh);
    RowwiseParallel().apply(*l2, mesh);
    EXPECT_EQ(DTensor(l1->weight).local_tensor().sizes(), (std::vector<int64_t>{2, 6}));
    EXPECT_EQ(DTensor(l2->weight).local_tensor().sizes(), (std::vector<int64_t>{6, 2}));
    CollectiveCounter counter(world);
    at::Tensor h = nn::call(l1, x);
    EXPECT_FALSE(is_dtensor(h));  // use_local_output
    EXPECT_EQ(h.sizes(), (std::vector<int64_t>{5, 2}));
    at::Tensor y = nn::call(l2, h.relu());
    EXPECT_FALSE(is_dtensor(y));
    EXPECT_TRUE(torch::allclose(y, expected, 1e-5, 1e-6));
    EXPECT_EQ(counter.counts(), (Counts{{"all_reduce", 1}}));
  });
}

TEST(ColwiseRowwiseTest, EmbeddingPlacements) {
  run_fake_world(2, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    torch::nn::Embedding colwise(8, 4), rowwise(8, 4);
    ColwiseParallel().apply(*colwise, mesh);
    RowwiseParallel().input_layouts(Replicate()).apply(*rowwise, mesh);
    EXPECT_EQ(DTensor(colwise->weight).placements(), (Placements{Shard(1)}));
    EXPECT_EQ(DTensor(rowwise->weight).placements(), (Placements{Shard(0)}));
  });
}

// Records what its forward received.
struct ProbeImpl : torch::nn::Module {
  at::Tensor forward(const at::Tensor& x) {
    seen = x;
    return x;
  }
  at::Tensor seen;
};
TORCH_MODULE(Probe);

TEST(PrepareModuleTest, InputAndOutputLayouts) {
  run_fake_world(4, [](World& world) {
    auto mesh = DeviceMesh::init(c10::kCPU, {4});
    at::Tensor full = torch::arange(16, torch::kFloat).reshape({8, 2});
    at::Tensor shard = full.chunk(4, 0)[static_cast<size_t>(world.rank())];
    Probe in_probe, out_probe;
    PrepareModuleInput().input_layouts({Shard(0)}).desired_input_layouts({Replicate()}).apply(*in_probe, mesh);
    PrepareModuleOutput().output_layouts(Shard(0)).desired_output_layouts(Replicate()).apply(*out_probe, mesh);
    CollectiveCounter counter(world);
    at::Tensor y = nn::call(in_probe, shard);
    ASSERT_TRUE(is_dtensor(in_probe->seen));
    EXPECT_EQ(DTensor(in_probe->seen).placements(), (Placements{Replicate()}));
    EXPECT_TRUE(torch::equal(DTensor(y).to_local(), full));
    at::Tensor z = nn::call(out_probe, shard);
    EXPECT_FALSE(is_dtensor(z));
    EXPECT_TRUE(torch::equal(z, full));
    EXPECT_EQ(counter.counts(), (Counts{{"all_gather_into_tensor", 2}}));
    expect_contains(error_of([&] {
                      Probe p;
                      PrepareModuleInput()
                          .input_layouts({Shard(0), Replicate()})
                          .desired_input_layouts({Replicate()})
                          .apply(*p, mesh);
                    }),
                    {"same length"});
  });
}

// As PyTorch 2.11 (Note [Declared layouts decide]): a DTensor input is used as
// it is laid out, and only a declared conversion (input_layouts !=
// desired_input_layouts) redistributes; that conversion, even a no-op
// forward, lays the gradient out like the input.
TEST(PrepareModuleTest, DeclaredLayoutsDecide) {
  run_fake_world(4, [](World& world) {
    auto mesh = DeviceMesh::init(c10::kCPU, {4});
    DTensor s0 = distribute_tensor(torch::ones({8, 2}), mesh, {Shard(0)});
    DTensor r = distribute_tensor(torch::ones({8, 2}), mesh, {Replicate()});
    r.set_requires_grad(true);
    CollectiveCounter counter(world);
    // Declared R -> R: an S(0) DTensor passes through unchanged.
    Probe same;
    PrepareModuleInput().input_layouts({Replicate()}).desired_input_layouts({Replicate()}).apply(*same, mesh);
    nn::call(same, at::Tensor(s0));
    EXPECT_EQ(DTensor(same->seen).placements(), (Placements{Shard(0)}));
    EXPECT_TRUE(counter.counts().empty());

    // Declared S(0) -> R on a Replicate DTensor: no collective forward, but
    // the Partial gradient is all_reduced back to the input's Replicate.
    Probe conv;
    PrepareModuleInput().input_layouts({Shard(0)}).desired_input_layouts({Replicate()}).apply(*conv, mesh);
    at::Tensor y = nn::call(conv, at::Tensor(r));
    EXPECT_EQ(DTensor(y).placements(), (Placements{Replicate()}));
    EXPECT_TRUE(counter.counts().empty());
    DTensor(y).to_local(Placements{Partial()}).sum().backward();
    EXPECT_EQ(counter.counts(), (Counts{{"all_reduce", 1}}));
    EXPECT_EQ(DTensor(r.grad()).placements(), (Placements{Replicate()}));
    EXPECT_TRUE(torch::equal(DTensor(r.grad()).full_tensor(), torch::full({8, 2}, 4.0)));
  });
}

TEST(SequenceParallelTest, ReplicatesParametersWithoutCommunication) {
  run_fake_world(2, [](World& world) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    torch::nn::LayerNorm norm(torch::nn::LayerNormOptions({4}));
    CollectiveCounter counter(world);
    SequenceParallel().apply(*norm, mesh);
    EXPECT_TRUE(counter.counts().empty());
    EXPECT_EQ(DTensor(norm->weight).placements(), (Placements{Replicate()}));
    EXPECT_TRUE(norm->weight.requires_grad());
  });
}

TEST(SequenceParallelTest, LayerNormOnSequenceShards) {
  at::Tensor full = torch::randn({2, 8, 4});
  at::Tensor expected = torch::layer_norm(full, {4});
  run_fake_world(2, [&](World& world) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    torch::nn::LayerNorm norm(torch::nn::LayerNormOptions({4}));
    SequenceParallel().apply(*norm, mesh);
    at::Tensor local = full.chunk(2, 1)[static_cast<size_t>(world.rank())];
    CollectiveCounter counter(world);
    at::Tensor y = nn::call(norm, local);
    ASSERT_TRUE(is_dtensor(y));
    EXPECT_EQ(DTensor(y).placements(), (Placements{Shard(1)}));
    EXPECT_TRUE(counter.counts().empty());
    EXPECT_TRUE(torch::allclose(DTensor(y).full_tensor(), expected, 1e-5, 1e-6));
  });
}

}  // namespace
}  // namespace dtensor
