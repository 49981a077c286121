// Op-by-op checks of the neural-network family: embedding (row-, column- and
// batch-sharded), layer norm and its backward, the RMS-norm composition, and
// dropout (random: checked for consistency rather than against one device).
#include <gtest/gtest.h>
#include <torch/utils.h>

#include <cmath>
#include <functional>
#include <string>
#include <utility>

#include "backends/fake/fake_world.h"
#include "backends/solo/solo_world.h"
#include "core/init.h"
#include "core/compat/torch_compat.h"
#include "core/random.h"
#include "tests/core/ops/op_harness.h"

namespace dtensor::testing {
namespace {

TEST(NnOpsTest, EmbeddingEveryLayout) {
  check_all_placements(OpCase("embedding", {Input::floats({16, 8}), Input::indices({4, 8}, 16)},
                              [](const Tensors& x) { return Tensors{torch::embedding(x[0], x[1])}; }));
  check_all_placements(OpCase("embedding_padding_idx", {Input::floats({16, 8}), Input::indices({8}, 16)},
                              [](const Tensors& x) { return Tensors{torch::embedding(x[0], x[1], /*padding_idx=*/3)}; }));
}

TEST(NnOpsTest, LayerNormAndItsBackward) {
  auto layer_norm = [](const Tensors& x) { return Tensors{torch::layer_norm(x[0], {8}, x[1], x[2])}; };
  check_all_placements(OpCase("layer_norm", {Input::floats({4, 8, 8}), Input::floats({8}), Input::floats({8})}, layer_norm),
                       /*max_combos=*/150);
  check_all_placements(OpCase("layer_norm_2d_shape", {Input::floats({4, 4, 8})}, [](const Tensors& x) {
    return Tensors{torch::layer_norm(x[0], {4, 8})};
  }));
}

TEST(NnOpsTest, RmsNormComposition) {
  check_all_placements(OpCase("rms_norm", {Input::floats({4, 8, 8}), Input::floats({8})}, [](const Tensors& x) {
    return Tensors{x[0] * torch::rsqrt(x[0].pow(2).mean(-1, true) + 1e-6) * x[1]};
  }));
}

TEST(NnOpsTest, ActivationMlpBlock) {
  // gelu(x @ w1^T) @ w2^T, the tensor-parallel MLP: w1 column-wise, w2 row-wise.
  OpCase mlp("mlp", {Input::floats({8, 4}), Input::floats({16, 4}), Input::floats({4, 16})}, [](const Tensors& x) {
    return Tensors{torch::gelu(x[0].mm(x[1].t())).mm(x[2].t())};
  });
  check_all_placements(mlp, /*max_combos=*/100);
}

// exponential_, geometric_ and log_normal_ draw through the DTensor RNG too:
// for a seed the global tensor does not depend on the placements, replicas
// agree, and the values follow the distribution (mean of 4,096 draws).
TEST(NnOpsTest, RandomFillsAreConsistentAcrossPlacements) {
  struct Fill {
    const char* name;
    std::function<void(at::Tensor&)> fill;
    double mean;  // of the distribution
  };
  const std::vector<Fill> fills = {
      {"exponential_", [](at::Tensor& t) { t.exponential_(2.0); }, 0.5},
      {"geometric_", [](at::Tensor& t) { t.geometric_(0.25); }, 4.0},
      {"log_normal_", [](at::Tensor& t) { t.log_normal_(0.0, 0.5); }, std::exp(0.125)}};
  for (const Fill& f : fills) {
    SCOPED_TRACE(f.name);
    at::Tensor first;
    for (const Placements& placements : std::vector<Placements>{{Replicate()}, {Shard(0)}, {Shard(1)}}) {
      SCOPED_TRACE(to_string(placements));
      at::Tensor full;
      run_fake_world(4, [&](World& world) {
        auto mesh = DeviceMesh::init(c10::kCPU, {4});
        dtensor::manual_seed(5);
        DTensor t = distribute_tensor(at::zeros({64, 64}, at::kDouble), mesh, placements);
        f.fill(t);
        EXPECT_EQ(t.placements(), placements);
        at::Tensor whole = t.full_tensor();
        if (world.rank() == 0) full = whole;
      });
      if (!first.defined()) {
        first = full;
        EXPECT_NEAR(full.mean().item<double>(), f.mean, 0.1 * f.mean);
        EXPECT_GT(full.min().item<double>(), 0.0);
      } else {
        EXPECT_TRUE(at::equal(full, first));
      }
    }
  }
}

// rrelu_with_noise (Note [Randomized leaky ReLU]): in eval mode it runs on
// the shards and equals the plain op; in training mode the slopes come from
// the DTensor RNG, so for a seed the result and the noise are the same on
// every placement (PyTorch 2.15's pointwise rule lets replicas draw their
// own), negative elements scaled by a slope in [lower, upper], the others
// kept. The functional form returns the noise; the out= form writes out.
// No collective for a sharded input (PyTorch 2.15: none either).
TEST(NnOpsTest, RreluWithNoiseDrawsTheSameSlopesOnEveryPlacement) {
  const at::Tensor x = at::randn({8, 6}, at::make_generator<at::CPUGeneratorImpl>(4), at::kDouble);
  const double lower = 0.1, upper = 0.3;
  at::Tensor first_result, first_noise;
  for (const Placements& placements : std::vector<Placements>{{Replicate()}, {Shard(0)}, {Shard(1)}}) {
    SCOPED_TRACE(to_string(placements));
    at::Tensor result, noise, functional_noise, eval;
    run_fake_world(4, [&](World& world) {
      auto mesh = DeviceMesh::init(c10::kCPU, {4});
      DTensor dx = distribute_tensor(x, mesh, placements);
      DTensor dnoise = distribute_tensor(at::zeros({8, 6}, at::kDouble), mesh, placements);
      CollectiveCounter counter(world);
      dtensor::manual_seed(21);
      DTensor r = at::rrelu_with_noise(dx, dnoise, lower, upper, /*training=*/true);
      EXPECT_EQ(counter.counts(), Counts{});
      EXPECT_EQ(r.placements(), placements);
#if DTENSOR_TORCH_AT_LEAST(2, 15)  // rrelu_with_noise_functional
      dtensor::manual_seed(21);
      auto [r2, n2] = at::rrelu_with_noise_functional(dx, dnoise.detach().clone(), lower, upper, true);
#else
      DTensor r2 = r, n2 = dnoise;
#endif
      DTensor out = distribute_tensor(at::zeros({8, 6}, at::kDouble), mesh, placements);
      at::rrelu_with_noise_out(out, dx, dnoise, lower, upper, /*training=*/false);
      at::Tensor whole = r.full_tensor(), whole_noise = dnoise.full_tensor(), whole_n2 = DTensor(n2).full_tensor();
      at::Tensor whole_r2 = DTensor(r2).full_tensor(), whole_eval = out.full_tensor();
      if (world.rank() == 0) {
        result = whole;
        noise = whole_noise;
        functional_noise = whole_n2;
        eval = whole_eval;
        EXPECT_TRUE(at::equal(whole_r2, whole));
      }
    });
    at::Tensor plain_noise = at::zeros({8, 6}, at::kDouble);
    EXPECT_TRUE(at::allclose(eval, at::rrelu_with_noise(x, plain_noise, lower, upper, false)));
    EXPECT_TRUE(at::equal(functional_noise, noise));
    EXPECT_TRUE(at::allclose(result, x * noise));
    const at::Tensor negative = x.lt(0);
    EXPECT_TRUE(noise.masked_select(negative.logical_not()).eq(1).all().item<bool>());
    const at::Tensor slopes = noise.masked_select(negative);
    EXPECT_TRUE(slopes.ge(lower).all().item<bool>() && slopes.le(upper).all().item<bool>());
    if (!first_result.defined()) {
      first_result = result;
      first_noise = noise;
    } else {
      EXPECT_TRUE(at::equal(result, first_result));
      EXPECT_TRUE(at::equal(noise, first_noise));
    }
  }
}

// uniform_ and normal_ in the default exact mode give, for a seed, the
// values one device's uniform_ / normal_ give bit for bit (float and
// double), whatever the placements; a replicated DTensor draws straight into
// its shard.
TEST(NnOpsTest, UniformAndNormalFillsEqualOneDeviceExactly) {
  const std::vector<std::pair<const char*, std::function<void(at::Tensor&)>>> fills = {
      {"uniform_", [](at::Tensor& t) { t.uniform_(-2, 3); }}, {"normal_", [](at::Tensor& t) { t.normal_(1, 2); }}};
  for (const auto& [name, fill] : fills) {
    for (const at::ScalarType dtype : {at::kFloat, at::kDouble}) {
      SCOPED_TRACE(std::string(name) + " " + c10::toString(dtype));
      at::manual_seed(11);
      at::Tensor expected = at::zeros({10, 6}, dtype);
      fill(expected);
      for (const Placements& placements : std::vector<Placements>{{Replicate(), Replicate()},
                                                                  {Shard(0), Replicate()},
                                                                  {Shard(1), Shard(0)}}) {
        SCOPED_TRACE(to_string(placements));
        at::Tensor got;
        run_fake_world(4, [&](World& world) {
          auto mesh = DeviceMesh::init(c10::kCPU, {2, 2});
          DTensor t = distribute_tensor(at::zeros({10, 6}, dtype), mesh, placements);
          dtensor::manual_seed(11);
          fill(t);
          at::Tensor whole = t.full_tensor();
          if (world.rank() == 0) got = whole;
        });
        EXPECT_TRUE(at::equal(got, expected));
      }
    }
  }
}

#if DTENSOR_TORCH_AT_LEAST(2, 1)
// The out= and functional forms of the random fills draw what the in-place
// fill draws for the same seed (so the global tensor is the same whatever the
// placements): uniform.out, normal.out, exponential.out, geometric.out,
// log_normal.out, bernoulli.float_out into `out`; normal_functional and
// bernoulli(probabilities) as new tensors laid out like self; bernoulli.out.
TEST(NnOpsTest, RandomOutAndFunctionalFormsDrawAsTheFills) {
  struct Form {
    const char* name;
    std::function<void(at::Tensor&)> fill;                                   // in place
    std::function<at::Tensor(const at::Tensor&, at::Tensor&)> other;          // (self, out) -> result
  };
  const std::vector<Form> forms = {
      {"uniform.out", [](at::Tensor& t) { t.uniform_(2, 3); },
       [](const at::Tensor& self, at::Tensor& out) { return at::uniform_out(out, self, 2, 3); }},
      {"normal.out", [](at::Tensor& t) { t.normal_(1, 2); },
       [](const at::Tensor& self, at::Tensor& out) { return at::normal_out(out, self, 1, 2); }},
      {"exponential.out", [](at::Tensor& t) { t.exponential_(2.0); },
       [](const at::Tensor& self, at::Tensor& out) { return at::exponential_out(out, self, 2.0); }},
      {"geometric.out", [](at::Tensor& t) { t.geometric_(0.25); },
       [](const at::Tensor& self, at::Tensor& out) { return at::geometric_out(out, self, 0.25); }},
      {"log_normal.out", [](at::Tensor& t) { t.log_normal_(0.0, 0.5); },
       [](const at::Tensor& self, at::Tensor& out) { return at::log_normal_out(out, self, 0.0, 0.5); }},
      {"bernoulli.float_out", [](at::Tensor& t) { t.bernoulli_(0.3); },
       [](const at::Tensor& self, at::Tensor& out) { return at::bernoulli_out(out, self, 0.3); }},
      {"normal_functional", [](at::Tensor& t) { t.normal_(1, 2); },
       [](const at::Tensor& self, at::Tensor&) { return at::normal_functional(self, 1, 2); }},
      {"bernoulli", [](at::Tensor& t) { t.bernoulli_(0.3); },
       [](const at::Tensor& self, at::Tensor&) { return at::bernoulli(at::full_like(self, 0.3)); }},
      {"bernoulli.out", [](at::Tensor& t) { t.bernoulli_(0.3); },
       [](const at::Tensor& self, at::Tensor& out) { return at::bernoulli_out(out, at::full_like(self, 0.3), c10::optional<at::Generator>()); }},
  };
  for (const Form& f : forms) {
    SCOPED_TRACE(f.name);
    at::Tensor first;
    for (const Placements& placements : std::vector<Placements>{{Replicate()}, {Shard(0)}, {Shard(1)}}) {
      SCOPED_TRACE(to_string(placements));
      at::Tensor expected, got;
      run_fake_world(4, [&](World& world) {
        auto mesh = DeviceMesh::init(c10::kCPU, {4});
        DTensor filled = distribute_tensor(at::zeros({16, 12}, at::kDouble), mesh, placements);
        DTensor self = distribute_tensor(at::zeros({16, 12}, at::kDouble), mesh, placements);
        DTensor out = distribute_tensor(at::zeros({16, 12}, at::kDouble), mesh, placements);
        dtensor::manual_seed(9);
        f.fill(filled);
        dtensor::manual_seed(9);
        at::Tensor result = f.other(self, out);
        EXPECT_EQ(DTensor(result).placements(), placements);
        at::Tensor a = filled.full_tensor(), b = DTensor(result).full_tensor();
        if (world.rank() == 0) expected = a, got = b;
      });
      EXPECT_TRUE(at::equal(got, expected));
      if (!first.defined()) {
        first = got;
      } else {
        EXPECT_TRUE(at::equal(got, first));
      }
    }
  }
  // A tensor of probabilities as `p` has no rule: the message says what to call.
  run_fake_world(2, [&](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    DTensor t = distribute_tensor(at::zeros({4, 4}), mesh, {Shard(0)});
    try {
      (void)at::bernoulli(t, distribute_tensor(at::full({4, 4}, 0.5), mesh, {Replicate()}));
      ADD_FAILURE() << "no error";
    } catch (const c10::Error& e) {
      EXPECT_NE(std::string(e.what()).find("pass the probabilities as self"), std::string::npos) << e.what_without_backtrace();
    }
  });
}
#endif

// Dropout draws through the DTensor RNG: for a seed, the global mask does
// not depend on the placements, replicas agree, and the gradient uses the
// forward's mask.
TEST(NnOpsTest, DropoutIsConsistentAcrossPlacements) {
  const at::Tensor x = at::rand({8, 12}, at::kDouble).add_(1);
  at::Tensor first;
  for (const Placements& placements : std::vector<Placements>{{Replicate()}, {Shard(0)}, {Shard(1)}}) {
    SCOPED_TRACE(to_string(placements));
    at::Tensor out_full, grad_full;
    run_fake_world(4, [&](World& world) {
      auto mesh = DeviceMesh::init(c10::kCPU, {4});
      dtensor::manual_seed(11);
      DTensor dx = distribute_tensor(x, mesh, placements, DistributeOptions{std::nullopt});
      dx.requires_grad_(true);
      at::Tensor y = torch::dropout(dx, 0.5, /*train=*/true);
      EXPECT_EQ(DTensor(y).placements(), placements);
      y.sum().backward();
      at::Tensor out = DTensor(y).full_tensor(), grad = DTensor(dx.grad()).full_tensor();
      if (world.rank() == 0) {
        out_full = out;
        grad_full = grad;
      }
    });
    // Kept elements are x / (1 - p), dropped ones 0; the gradient is the mask / (1 - p).
    at::Tensor kept = out_full.ne(0);
    EXPECT_TRUE(at::allclose(out_full, kept * x * 2));
    EXPECT_TRUE(at::allclose(grad_full, kept.to(at::kDouble) * 2));
    const double fraction = kept.to(at::kDouble).mean().item<double>();
    EXPECT_GT(fraction, 0.2);
    EXPECT_LT(fraction, 0.8);
    if (!first.defined()) {
      first = kept;
    } else {
      EXPECT_TRUE(at::equal(first, kept)) << "the mask depends on the placements";
    }
  }
}

// native_dropout (what dropout is on CUDA) draws the mask CPU dropout draws
// (bernoulli(1 - p) through the DTensor RNG): for a seed the same global
// mask whatever the placements, replicas agreeing, a Partial input reduced
// first (as PyTorch 2.15), and a bool mask on every rank, an empty shard's
// too (LibTorch's kernel returns one of the input's dtype there).
TEST(NnOpsTest, NativeDropoutDrawsDropoutsMask) {
  const at::Tensor x = at::rand({2, 3, 4}, at::kDouble).add_(1);
  at::Tensor dropout_mask;
  run_fake_world(4, [&](World& world) {
    auto mesh = DeviceMesh::init(c10::kCPU, {4});
    dtensor::manual_seed(5);
    at::Tensor y = DTensor(torch::dropout(distribute_tensor(x, mesh, {Shard(2)}), 0.25, /*train=*/true)).full_tensor();
    if (world.rank() == 0) dropout_mask = y.ne(0);
  });
  for (const Placements& placements :
       std::vector<Placements>{{Replicate(), Replicate()}, {Shard(1), Shard(1)}, {Partial(), Shard(0)}}) {
    SCOPED_TRACE(to_string(placements));
    at::Tensor out_full, mask_full;
    run_fake_world(4, [&](World& world) {
      auto mesh = DeviceMesh::init(c10::kCPU, {2, 2});
      dtensor::manual_seed(5);
      DTensor dx = distribute_tensor(x, mesh, placements[0].is_partial() ? Placements{Replicate(), Shard(0)} : placements);
      if (placements[0].is_partial()) dx = DTensor::from_local(dx.to_local() / 2, mesh, placements);
      auto [out, mask] = at::native_dropout(dx, 0.25, true);
      const Placements want = placements[0].is_partial() ? Placements{Replicate(), Shard(0)} : placements;
      EXPECT_EQ(DTensor(out).placements(), want);
      EXPECT_EQ(DTensor(mask).placements(), want);
      EXPECT_EQ(DTensor(mask).to_local().scalar_type(), at::kBool) << "rank " << world.rank();
      at::Tensor o = DTensor(out).full_tensor(), m = DTensor(mask).full_tensor();
      if (world.rank() == 0) out_full = o, mask_full = m;
    });
    EXPECT_TRUE(at::equal(mask_full, dropout_mask)) << "native_dropout's mask is not dropout's";
    EXPECT_TRUE(at::allclose(out_full, x * mask_full / 0.75));
  }
}

// rand_like, randn_like and randint_like draw through the DTensor RNG: for a
// seed the same global tensor whatever the placements, every replica
// holding its block of it (LibTorch's kernels would draw per rank).
TEST(NnOpsTest, RandomLikeOpsAgreeAcrossReplicasAndPlacements) {
  const at::Tensor x = at::zeros({6, 4}, at::kDouble);
  using Draw = std::function<at::Tensor(const at::Tensor&)>;
  const std::vector<std::pair<std::string, Draw>> draws = {
      {"rand_like", [](const at::Tensor& t) { return at::rand_like(t); }},
      {"randn_like", [](const at::Tensor& t) { return at::randn_like(t); }},
      {"randint_like.low_dtype", [](const at::Tensor& t) { return at::randint_like(t, -3, 4); }},
  };
  for (const auto& [name, draw] : draws) {
    SCOPED_TRACE(name);
    at::Tensor first;
    for (const Placements& placements : std::vector<Placements>{{Shard(0)}, {Replicate()}, {Shard(1)}, {Partial()}}) {
      SCOPED_TRACE(to_string(placements));
      std::vector<at::Tensor> locals(4);
      run_fake_world(4, [&](World& world) {
        auto mesh = DeviceMesh::init(c10::kCPU, {4});
        dtensor::manual_seed(3);
        DTensor dx = placements[0].is_partial() ? DTensor::from_local(at::zeros({6, 4}, at::kDouble), mesh, placements)
                                                : distribute_tensor(x, mesh, placements);
        DTensor out(draw(dx));
        EXPECT_EQ(out.placements(), placements[0].is_partial() ? Placements{Replicate()} : placements);
        locals[static_cast<size_t>(world.rank())] = out.to_local();
      });
      if (!first.defined()) {
        first = at::cat(locals, 0);  // Shard(0): the global tensor
        if (name == "randint_like.low_dtype") {
          EXPECT_TRUE(first.ge(-3).all().item<bool>() && first.lt(4).all().item<bool>());
          EXPECT_GT(std::get<0>(at::unique_consecutive(std::get<0>(first.flatten().sort()))).numel(), 4) << first;
        }
        continue;
      }
      for (int r = 0; r < 4; ++r) {
        const at::Tensor want =
            placements[0].is_shard() ? first.tensor_split(4, 1)[static_cast<size_t>(r)] : first;
        EXPECT_TRUE(at::equal(locals[static_cast<size_t>(r)], want)) << "rank " << r;
      }
    }
  }
}

// Uneven shards (torch.chunk sizes, some ranks empty): 6 over 4 is 2, 2, 2, 0.
TEST(NnOpsTest, UnevenShards) {
  check_all_placements(OpCase("embedding_uneven", {Input::floats({10, 6}), Input::indices({3, 5}, 10)},
                              [](const Tensors& x) { return Tensors{torch::embedding(x[0], x[1])}; }));
  check_all_placements(OpCase("layer_norm_uneven", {Input::floats({6, 3, 5}), Input::floats({5}), Input::floats({5})},
                              [](const Tensors& x) { return Tensors{torch::layer_norm(x[0], {5}, x[1], x[2])}; }),
                       /*max_combos=*/120);
}

#if DTENSOR_TORCH_AT_LEAST(2, 9)
// RMSNorm's fused backward (core/ops/norm_rules.cc) has no CPU kernel: its
// propagation runs on a solo world's meta rank (core/ops/meta_kernels.cc).
// A leading dim shards everything but the weight, whose gradient is then a
// partial sum, without a collective (the solo world refuses any); a shard
// of the normalized dim must be gathered.
TEST(NnOpsTest, FusedRmsNormBackwardOnMetaRanks) {
  init();
  SoloOptions options;
  options.error_on_collective = true;
  options.device = c10::kMeta;
  run_solo_world(8, 5, [&](World& world) {
    auto mesh = DeviceMesh::init(c10::kMeta, {world.size()});
    auto meta = [](std::vector<int64_t> shape) { return at::empty(shape, at::TensorOptions().device(c10::kMeta)); };
    DTensor x = DTensor::from_local(meta({2, 4, 8}), mesh, {Shard(0)});
    DTensor grad = DTensor::from_local(meta({2, 4, 8}), mesh, {Shard(0)});
    DTensor weight = DTensor::from_local(meta({8}), mesh, {Replicate()});
    DTensor rstd = DTensor::from_local(meta({2, 4, 1}), mesh, {Shard(0)});
    auto [grad_input, grad_weight] = at::_fused_rms_norm_backward(grad, x, {8}, rstd, weight, {true, true});
    EXPECT_EQ(DTensor(grad_input).placements(), Placements{Shard(0)});
    EXPECT_EQ(DTensor(grad_input).sizes().vec(), (std::vector<int64_t>{16, 4, 8}));
    EXPECT_EQ(DTensor(grad_weight).placements(), Placements{Partial()});
    DTensor x2 = DTensor::from_local(meta({16, 4, 1}), mesh, {Shard(2)});
    DTensor rstd2 = DTensor::from_local(meta({16, 4, 1}), mesh, {Replicate()});
    EXPECT_THROW(at::_fused_rms_norm_backward(x2, x2, {8}, rstd2, weight, {true, true}), c10::Error);
  }, options);
}
#endif

// Note [Multinomial on DTensors]: rows shard, the categories are gathered;
// for a seed the samples do not depend on the placements; their frequencies
// follow the probabilities; without replacement no category repeats in a row.
TEST(NnOpsTest, MultinomialDrawsTheSameSamplesOnEveryPlacement) {
  at::Tensor probs = at::rand({6, 5}, at::kDouble).add_(0.1);
  probs.select(1, 2).zero_();  // category 2 is never drawn
  for (bool replacement : {true, false}) {
    SCOPED_TRACE(replacement ? "with replacement" : "without");
    const int64_t samples = replacement ? 4000 : 4;
    at::Tensor first;
    for (const Placements& placements : std::vector<Placements>{{Replicate()}, {Shard(0)}, {Shard(1)}, {Partial()}}) {
      SCOPED_TRACE(to_string(placements));
      at::Tensor full;
      run_fake_world(3, [&](World& world) {
        auto mesh = DeviceMesh::init(c10::kCPU, {3});
        DTensor p = placements[0].is_partial()
                        ? DTensor::from_local(world.rank() == 0 ? probs : at::zeros_like(probs), mesh, placements)
                        : distribute_tensor(probs, mesh, placements);
        dtensor::manual_seed(13);
        DTensor drawn(at::multinomial(p, samples, replacement));
        EXPECT_EQ(drawn.placements(), placements[0].is_shard(0) ? placements : Placements{Replicate()});
        at::Tensor whole = drawn.full_tensor();
        if (world.rank() == 0) full = whole;
      });
      ASSERT_EQ(full.sizes().vec(), (std::vector<int64_t>{6, samples}));
      EXPECT_FALSE(full.eq(2).any().item<bool>());
      if (!first.defined()) {
        first = full;
      } else {
        EXPECT_TRUE(at::equal(full, first));
      }
    }
    if (replacement) {
      const at::Tensor expected = probs / probs.sum(-1, true);
      const at::Tensor counts = at::one_hot(first, 5).sum(1).to(at::kDouble) / samples;
      EXPECT_LT((counts - expected).abs().max().item<double>(), 0.04);
    } else {
      EXPECT_TRUE(std::get<0>(first.sort(-1)).diff(1, -1).ne(0).all().item<bool>());
    }
  }
  run_fake_world(2, [&](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    DTensor p = distribute_tensor(at::ones({4, 3}), mesh, {Shard(0)});
    EXPECT_THROW(at::multinomial(p, 4, /*replacement=*/false), c10::Error);  // 4 of 3 categories
    DTensor out = distribute_tensor(at::zeros({4, 2}, at::kLong), mesh, {Shard(0)});
    dtensor::manual_seed(3);
    at::multinomial_out(out, p, 2, /*replacement=*/true);
    dtensor::manual_seed(3);
    EXPECT_TRUE(at::equal(out.full_tensor(), DTensor(at::multinomial(p, 2, true)).full_tensor()));
  });
}

}  // namespace
}  // namespace dtensor::testing
