// Operators on DTensors against the same operators on plain tensors: values
// and gradients, on 1-D and 2-D fake meshes, for every (or a seeded random
// sample of) input placements including Partial(sum). Plus targeted checks
// of the output placements the rules promise (Partial linearity, reductions
// over shards, in-place ops returning their DTensor).
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/utils.h>

#include <functional>
#include <random>

#include "backends/fake/fake_world.h"
#include "core/dtensor.h"
#include "tests/core/test_util.h"

namespace dtensor {
namespace {

using testing::all_placement_lists;
using testing::placement_alphabet;

using OpFn = std::function<at::Tensor(const std::vector<at::Tensor>&)>;

struct OpCase {
  std::string name;
  std::vector<std::vector<int64_t>> shapes;
  OpFn fn;
  bool differentiable = true;
  bool partial_inputs = true;  // include Partial(sum) among input placements
  double tolerance = 1e-10;
};

std::vector<OpCase> op_cases() {
  using T = std::vector<at::Tensor>;
  std::vector<OpCase> c;
  // Unary pointwise.
  c.push_back({"neg", {{6, 5}}, [](const T& x) { return -x[0]; }});
  c.push_back({"relu", {{6, 5}}, [](const T& x) { return x[0].relu(); }});
  c.push_back({"abs", {{6, 5}}, [](const T& x) { return x[0].abs(); }});
  c.push_back({"exp", {{6, 5}}, [](const T& x) { return x[0].exp(); }});
  c.push_back({"tanh", {{6, 5}}, [](const T& x) { return x[0].tanh(); }});
  c.push_back({"sigmoid", {{6, 5}}, [](const T& x) { return x[0].sigmoid(); }});
  c.push_back({"pow", {{6, 5}}, [](const T& x) { return x[0].pow(2); }});
  c.push_back({"sqrt", {{6, 5}}, [](const T& x) { return (x[0] * x[0] + 1).sqrt(); }});
  c.push_back({"gelu", {{6, 5}}, [](const T& x) { return at::gelu(x[0]); }});
  // Scalar variants.
  c.push_back({"mul_scalar", {{6, 5}}, [](const T& x) { return x[0] * 3.0; }});
  c.push_back({"add_scalar", {{6, 5}}, [](const T& x) { return x[0] + 2.5; }});
  c.push_back({"sub_scalar", {{6, 5}}, [](const T& x) { return x[0] - 1.5; }});
  c.push_back({"div_scalar", {{6, 5}}, [](const T& x) { return x[0] / 4.0; }});
  c.push_back({"add_alpha", {{6, 5}, {6, 5}}, [](const T& x) { return at::add(x[0], x[1], 2.0); }});
  c.push_back({"floor_divide_mode", {{6, 5}}, [](const T& x) { return at::div(x[0], 0.75, "floor"); },
               /*differentiable=*/false});
  c.push_back({"masked_fill", {{6, 5}}, [](const T& x) {
                 return x[0].masked_fill(x[0].detach() > 0.3, 1.0);
               }});
  c.push_back({"clamp", {{6, 5}}, [](const T& x) { return x[0].clamp(-0.5, 0.5); }});
  // Binary pointwise with broadcasting.
  c.push_back({"add", {{6, 5}, {6, 5}}, [](const T& x) { return x[0] + x[1]; }});
  c.push_back({"add_bcast_row", {{6, 5}, {5}}, [](const T& x) { return x[0] + x[1]; }});
  c.push_back({"sub_bcast_col", {{6, 1}, {6, 5}}, [](const T& x) { return x[0] - x[1]; }});
  c.push_back({"mul", {{6, 5}, {6, 5}}, [](const T& x) { return x[0] * x[1]; }});
  c.push_back({"mul_outer", {{6, 1}, {1, 5}}, [](const T& x) { return x[0] * x[1]; }});
  c.push_back({"div", {{6, 5}, {6, 5}}, [](const T& x) { return x[0] / (x[1] * x[1] + 1); }});
  c.push_back({"maximum", {{6, 5}, {6, 5}}, [](const T& x) { return at::maximum(x[0], x[1]); }});
  c.push_back({"gt", {{6, 5}, {6, 5}}, [](const T& x) { return (x[0] > x[1]).to(at::kDouble); },
               /*differentiable=*/false});
  c.push_back({"where", {{6, 5}, {6, 5}}, [](const T& x) {
                 return at::where(x[0].detach() > 0, x[0], x[1]);
               }});
  // In place (on a clone, so the inputs stay leaves).
  c.push_back({"add_", {{6, 5}, {5}}, [](const T& x) { return x[0].clone().add_(x[1]); }});
  c.push_back({"mul_", {{6, 5}, {6, 5}}, [](const T& x) { return x[0].clone().mul_(x[1]); }});
  c.push_back({"mul_scalar_", {{6, 5}}, [](const T& x) { return x[0].clone().mul_(0.5); }});
  c.push_back({"div_scalar_", {{6, 5}}, [](const T& x) { return x[0].clone().div_(2.0); }});
  c.push_back({"addcmul_", {{6, 5}, {6, 5}, {6, 5}}, [](const T& x) {
                 return x[0].clone().addcmul_(x[1], x[2], 0.5);
               }});
  c.push_back({"addcdiv_", {{6, 5}, {6, 5}, {6, 5}}, [](const T& x) {
                 return x[0].clone().addcdiv_(x[1], x[2] * x[2] + 1, -0.5);
               }});
  c.push_back({"copy_", {{6, 5}, {5}}, [](const T& x) { return x[0].clone().copy_(x[1]) * x[0]; }});
  c.push_back({"copy_same_shape_", {{6, 5}, {6, 5}}, [](const T& x) { return x[0].clone().copy_(x[1]) * 2.0; }});
  c.push_back({"fill_", {{6, 5}}, [](const T& x) { return x[0].clone().fill_(1.5) + x[0]; }});
  c.push_back({"zero_", {{6, 5}}, [](const T& x) { return x[0].clone().zero_() + x[0]; }});
  // Factory-like.
  c.push_back({"zeros_like", {{6, 5}}, [](const T& x) { return at::zeros_like(x[0]) + x[0]; }});
  c.push_back({"ones_like", {{6, 5}}, [](const T& x) { return at::ones_like(x[0]) * x[0]; }});
  c.push_back({"clone", {{6, 5}}, [](const T& x) { return x[0].clone(); }});
  c.push_back({"detach_mul", {{6, 5}}, [](const T& x) { return x[0] * x[0].detach(); }});
  c.push_back({"to_float_and_back", {{6, 5}}, [](const T& x) { return x[0].to(at::kFloat).to(at::kDouble); },
               true, true, 1e-6});
  // Reductions.
  c.push_back({"sum", {{6, 5}}, [](const T& x) { return x[0].sum(); }});
  c.push_back({"sum_dim0", {{6, 5}}, [](const T& x) { return x[0].sum(0); }});
  c.push_back({"sum_dim1_keepdim", {{6, 5}}, [](const T& x) { return x[0].sum(1, /*keepdim=*/true); }});
  c.push_back({"sum_dims", {{6, 5, 3}}, [](const T& x) { return x[0].sum(std::vector<int64_t>{0, 2}); }});
  c.push_back({"mean", {{6, 5}}, [](const T& x) { return x[0].mean(); }});
  c.push_back({"mean_uneven", {{5, 3}}, [](const T& x) { return x[0].mean(); }});
  c.push_back({"mean_dim1", {{6, 4}}, [](const T& x) { return x[0].mean(1); }});
  c.push_back({"mean_dim0_keepdim", {{8, 3}}, [](const T& x) { return x[0].mean(0, true); }});
  c.push_back({"amax_dim0", {{6, 5}}, [](const T& x) { return x[0].amax(0); }});
  c.push_back({"max", {{6, 5}}, [](const T& x) { return x[0].max(); }});
  c.push_back({"max_uneven_empty_shard", {{3, 2}}, [](const T& x) { return x[0].max(); }});
  // Matrix products and views.
  c.push_back({"mm", {{6, 4}, {4, 5}}, [](const T& x) { return at::mm(x[0], x[1]); }});
  c.push_back({"addmm", {{5}, {6, 4}, {4, 5}}, [](const T& x) { return at::addmm(x[0], x[1], x[2]); }});
  c.push_back({"linear", {{6, 4}, {5, 4}, {5}}, [](const T& x) { return at::linear(x[0], x[1], x[2]); }});
  c.push_back({"linear_3d", {{2, 6, 4}, {5, 4}, {5}}, [](const T& x) { return at::linear(x[0], x[1], x[2]); },
               true, /*partial_inputs=*/false});
  c.push_back({"matmul_vec", {{6, 4}, {4}}, [](const T& x) { return at::matmul(x[0], x[1]); }});
  c.push_back({"bmm", {{2, 3, 4}, {2, 4, 5}}, [](const T& x) { return at::bmm(x[0], x[1]); }, true, false});
  c.push_back({"t", {{6, 4}}, [](const T& x) { return x[0].t() * 1.0; }});
  c.push_back({"transpose", {{6, 4, 2}}, [](const T& x) { return x[0].transpose(0, 2).contiguous(); }});
  c.push_back({"view_merge", {{8, 3}}, [](const T& x) { return x[0].view({24}); }});
  c.push_back({"view_split", {{8, 3}}, [](const T& x) { return x[0].view({4, 2, 3}); }});
  c.push_back({"reshape", {{6, 4}}, [](const T& x) { return x[0].reshape({3, 8}); }});
  c.push_back({"unsqueeze_expand", {{6}}, [](const T& x) { return x[0].unsqueeze(0).expand({3, 6}); }});
  c.push_back({"permute", {{2, 3, 4}}, [](const T& x) { return x[0].permute({2, 0, 1}); }});
  c.push_back({"relu_mm_chain", {{6, 4}, {4, 5}}, [](const T& x) { return at::mm(x[0], x[1]).relu().sum(1); }});
  return c;
}

// The single-device result and gradients of `c` for `inputs`.
struct Reference {
  at::Tensor out;
  at::Tensor grad_out;
  std::vector<at::Tensor> grads;
};

Reference reference(const OpCase& c, const std::vector<at::Tensor>& inputs) {
  Reference r;
  std::vector<at::Tensor> leaves;
  for (const auto& x : inputs) leaves.push_back(x.clone().requires_grad_(c.differentiable));
  r.out = c.fn(leaves);
  r.grad_out = at::randn(r.out.sizes(), at::kDouble);
  if (c.differentiable) {
    r.grads = torch::autograd::grad({r.out}, leaves, {r.grad_out}, /*retain_graph=*/false,
                                    /*create_graph=*/false, /*allow_unused=*/true);
  }
  r.out = r.out.detach();
  return r;
}

void expect_close(const at::Tensor& actual, const at::Tensor& expected, double tol, const std::string& what) {
  ASSERT_EQ(actual.sizes(), expected.sizes()) << what;
  EXPECT_TRUE(at::allclose(actual.to(at::kDouble), expected.to(at::kDouble), tol, tol))
      << what << "\nactual\n" << actual << "\nexpected\n" << expected;
}

// Runs `c` on DTensors with `placements` (one list per input) and compares.
void check_case(const OpCase& c, const DeviceMesh& mesh, const std::vector<at::Tensor>& inputs,
                const Reference& ref, const std::vector<Placements>& placements) {
  std::string what = c.name + " inputs";
  for (const auto& p : placements) what += " " + to_string(p);
  SCOPED_TRACE(what + " on " + mesh.to_string() + " rank " + std::to_string(mesh.global_rank()));
  std::vector<at::Tensor> dinputs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    DTensor d = distribute_tensor(inputs[i], mesh, placements[i]);
    d.set_requires_grad(c.differentiable);
    dinputs.push_back(d);
  }
  at::Tensor out;
  try {
    out = c.fn(dinputs);
  } catch (const c10::Error& e) {
    // In-place ops cannot change the placement of the tensor they write (as in
    // PyTorch): a Partial self that the op cannot keep Partial is refused.
    const std::string msg = e.what_without_backtrace();
    const bool refused_in_place = c.name.back() == '_' && msg.find("written in place") != std::string::npos;
    bool self_partial = false;
    for (const auto& p : placements[0]) self_partial = self_partial || p.is_partial();
    if (refused_in_place && self_partial) return;
    ADD_FAILURE() << what << " threw: " << msg;
    return;
  }
  ASSERT_TRUE(is_dtensor(out)) << what;
  DTensor dout(out);
  ASSERT_EQ(dout.local_tensor().sizes().vec(), dout.spec().local_shape()) << what;
  expect_close(dout.full_tensor(), ref.out, c.tolerance, what + " value");
  if (!c.differentiable) return;
  DTensor dgrad = distribute_tensor(ref.grad_out, mesh,
                                    Placements(static_cast<size_t>(mesh.ndim()), Replicate()));
  auto grads = torch::autograd::grad({out}, dinputs, {dgrad}, false, false, /*allow_unused=*/true);
  for (size_t i = 0; i < grads.size(); ++i) {
    const std::string which = what + " grad of input " + std::to_string(i);
    if (!ref.grads[i].defined()) {
      EXPECT_FALSE(grads[i].defined()) << which;
      continue;
    }
    ASSERT_TRUE(grads[i].defined()) << which;
    ASSERT_TRUE(is_dtensor(grads[i])) << which;
    expect_close(DTensor(grads[i]).full_tensor(), ref.grads[i], c.tolerance, which);
  }
}

// Every placement combination when there are at most `limit`, else a sample.
std::vector<std::vector<Placements>> placement_combos(const OpCase& c, int mesh_ndim, std::mt19937_64& rng,
                                                      size_t limit) {
  std::vector<std::vector<Placements>> per_input;
  for (const auto& shape : c.shapes) {
    Placements alphabet = placement_alphabet(static_cast<int64_t>(shape.size()),
                                             c.partial_inputs ? std::vector<ReduceOp>{ReduceOp::kSum}
                                                              : std::vector<ReduceOp>{});
    per_input.push_back(all_placement_lists(mesh_ndim, alphabet));
  }
  size_t total = 1;
  for (const auto& options : per_input) total *= options.size();
  std::vector<std::vector<Placements>> combos;
  if (total <= limit) {
    for (size_t k = 0; k < total; ++k) {
      std::vector<Placements> combo;
      size_t rest = k;
      for (const auto& options : per_input) {
        combo.push_back(options[rest % options.size()]);
        rest /= options.size();
      }
      combos.push_back(combo);
    }
    return combos;
  }
  for (size_t k = 0; k < limit; ++k) {
    std::vector<Placements> combo;
    for (const auto& options : per_input) combo.push_back(options[rng() % options.size()]);
    combos.push_back(combo);
  }
  return combos;
}

class DispatchOpsTest : public ::testing::TestWithParam<std::vector<int64_t>> {};

TEST_P(DispatchOpsTest, EveryOpMatchesSingleDeviceValuesAndGradients) {
  const std::vector<int64_t> mesh_shape = GetParam();
  int64_t world_size = 1;
  for (int64_t s : mesh_shape) world_size *= s;
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed) + " (rerun with DTENSOR_TEST_SEED=" + std::to_string(seed) + ")");
  std::mt19937_64 rng(seed);
  for (const OpCase& c : op_cases()) {
    torch::manual_seed(static_cast<uint64_t>(rng() % 100000));
    std::vector<at::Tensor> inputs;
    for (const auto& shape : c.shapes) inputs.push_back(at::randn(shape, at::kDouble));
    const Reference ref = reference(c, inputs);
    const auto combos = placement_combos(c, static_cast<int>(mesh_shape.size()), rng,
                                         mesh_shape.size() == 1 ? 64 : 24);
    run_fake_world(world_size, [&](World&) {
      auto mesh = DeviceMesh::init(c10::kCPU, mesh_shape);
      for (const auto& combo : combos) check_case(c, mesh, inputs, ref, combo);
    });
  }
}

INSTANTIATE_TEST_SUITE_P(Meshes, DispatchOpsTest,
                         ::testing::Values(std::vector<int64_t>{4}, std::vector<int64_t>{3},
                                           std::vector<int64_t>{2, 2}),
                         [](const ::testing::TestParamInfo<std::vector<int64_t>>& info) {
                           std::string name = "mesh";
                           for (int64_t s : info.param) name += "_" + std::to_string(s);
                           return name;
                         });

// ---- Output placements the rules promise. ----

DTensor dist(const at::Tensor& t, const DeviceMesh& mesh, const char* placements) {
  return distribute_tensor(t, mesh, parse_placements(placements));
}

TEST(DispatchPlacementsTest, PartialLinearity) {
  run_fake_world(2, [](World& world) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    at::Tensor a = testing::seeded_randn({4, 3}, 1), b = testing::seeded_randn({4, 3}, 2);
    DTensor pa = dist(a, mesh, "P"), pb = dist(b, mesh, "P"), rb = dist(b, mesh, "R");
    testing::CollectiveCounter counter(world);
    DTensor sum = pa + pb;
    EXPECT_EQ(sum.placements(), parse_placements("P"));
    DTensor diff = pa - pb;
    EXPECT_EQ(diff.placements(), parse_placements("P"));
    DTensor prod = pa * rb;
    EXPECT_EQ(prod.placements(), parse_placements("P"));
    DTensor scaled = pa * 3.0;
    EXPECT_EQ(scaled.placements(), parse_placements("P"));
    DTensor halved = pa / 2.0;
    EXPECT_EQ(halved.placements(), parse_placements("P"));
    DTensor negated = -pa;
    EXPECT_EQ(negated.placements(), parse_placements("P"));
    EXPECT_EQ(counter.total(), 0);
    EXPECT_TRUE(at::allclose(sum.full_tensor(), a + b));
    EXPECT_TRUE(at::allclose(prod.full_tensor(), a * b));
    // Not linear: the Partial is reduced first.
    DTensor shifted = pa + 1.0;
    EXPECT_FALSE(shifted.spec().has_partial());
    EXPECT_TRUE(at::allclose(shifted.full_tensor(), a + 1.0));
    // P * P: one operand is reduced, the product stays Partial (as PyTorch).
    counter.clear();
    DTensor squared = pa * pa;
    EXPECT_EQ(squared.placements(), parse_placements("P"));
    EXPECT_EQ(counter.counts(), (testing::Counts{{"all_reduce", 1}}));
    EXPECT_TRUE(at::allclose(squared.full_tensor(), a * a));
    DTensor mixed = pa + rb;
    EXPECT_TRUE(at::allclose(mixed.full_tensor(), a + b));
  });
}

TEST(DispatchPlacementsTest, PartialMaxThroughNonLinearOpIsReducedFirst) {
  run_fake_world(2, [](World& world) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    // Global value: elementwise max over ranks = [-1, 2, -3, 4] on rank 1's side.
    at::Tensor local = world.rank() == 0 ? at::tensor({-5.0, 2.0, -9.0, 0.0}) : at::tensor({-1.0, 1.0, -3.0, 4.0});
    DTensor p = DTensor::from_local(local, mesh, {Partial(ReduceOp::kMax)});
    testing::CollectiveCounter counter(world);
    DTensor r = p.abs();  // not monotone: the max must be taken first
    EXPECT_EQ(r.placements(), parse_placements("R"));
    EXPECT_EQ(counter.counts(), (testing::Counts{{"all_reduce", 1}}));
    EXPECT_TRUE(at::equal(r.full_tensor(), at::tensor({1.0, 2.0, 3.0, 4.0})));
    // Non-decreasing ops commute with max: relu(max_r x_r) = max_r relu(x_r),
    // so PyTorch 2.15 (and dtensor) keep the P(max).
    DTensor kept = p.relu();
    EXPECT_EQ(kept.placements(), parse_placements("P(max)"));
    EXPECT_EQ(counter.counts(), (testing::Counts{{"all_reduce", 1}}));
    EXPECT_TRUE(at::equal(kept.full_tensor(), at::tensor({0.0, 2.0, 0.0, 4.0})));
    DTensor doubled = p * 2.0;  // scaling a max-partial is not a sum-linear op
    EXPECT_TRUE(at::equal(doubled.full_tensor(), at::tensor({-2.0, 4.0, -6.0, 8.0})));
    DTensor added = p + p;
    EXPECT_TRUE(at::equal(added.full_tensor(), at::tensor({-2.0, 4.0, -6.0, 8.0})));
    DTensor m = p.max();  // max of a max-partial stays max-partial
    EXPECT_EQ(m.placements(), parse_placements("P(max)"));
    EXPECT_EQ(m.full_tensor().item<double>(), 4.0);
  });
}

TEST(DispatchPlacementsTest, ReductionsOverShardsArePartial) {
  run_fake_world(4, [](World& world) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2, 2});
    at::Tensor g = testing::seeded_randn({8, 6}, 3);
    DTensor x = dist(g, mesh, "S(0),S(1)");
    testing::CollectiveCounter counter(world);
    DTensor total = x.sum();
    EXPECT_EQ(total.placements(), parse_placements("P,P"));
    DTensor rows = x.sum(1);
    EXPECT_EQ(rows.placements(), parse_placements("S(0),P"));
    DTensor cols = x.sum(0, /*keepdim=*/true);
    EXPECT_EQ(cols.placements(), parse_placements("P,S(1)"));
    DTensor avg = x.mean();
    EXPECT_EQ(avg.placements(), parse_placements("P(avg),P(avg)"));
    DTensor mx = x.amax(1);
    EXPECT_EQ(mx.placements(), parse_placements("S(0),P(max)"));
    EXPECT_EQ(counter.total(), 0);
    EXPECT_TRUE(at::allclose(total.full_tensor(), g.sum()));
    EXPECT_TRUE(at::allclose(rows.full_tensor(), g.sum(1)));
    EXPECT_TRUE(at::allclose(cols.full_tensor(), g.sum(0, true)));
    EXPECT_TRUE(at::allclose(avg.full_tensor(), g.mean()));
    EXPECT_TRUE(at::allclose(mx.full_tensor(), g.amax(1)));
  });
}

TEST(DispatchPlacementsTest, MatmulFamilyPlacements) {
  run_fake_world(2, [](World& world) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    at::Tensor a = testing::seeded_randn({4, 6}, 4), b = testing::seeded_randn({6, 3}, 5);
    DTensor a_s0 = dist(a, mesh, "S(0)"), a_r = dist(a, mesh, "R"), a_s1 = dist(a, mesh, "S(1)");
    DTensor b_r = dist(b, mesh, "R"), b_s1 = dist(b, mesh, "S(1)"), b_s0 = dist(b, mesh, "S(0)");
    testing::CollectiveCounter counter(world);
    EXPECT_EQ(DTensor(at::mm(a_s0, b_r)).placements(), parse_placements("S(0)"));
    EXPECT_EQ(DTensor(at::mm(a_r, b_s1)).placements(), parse_placements("S(1)"));
    DTensor k = at::mm(a_s1, b_s0);
    EXPECT_EQ(k.placements(), parse_placements("P"));
    EXPECT_EQ(counter.total(), 0);
    EXPECT_TRUE(at::allclose(k.full_tensor(), at::mm(a, b)));
    DTensor t = dist(a, mesh, "S(0)").t();
    EXPECT_EQ(t.placements(), parse_placements("S(1)"));
    DTensor tr = dist(testing::seeded_randn({2, 3, 4}, 6), mesh, "S(2)").transpose(0, 2);
    EXPECT_EQ(tr.placements(), parse_placements("S(0)"));
    at::Tensor bias = testing::seeded_randn({3}, 7);
    DTensor y = at::addmm(dist(bias, mesh, "R"), dist(a, mesh, "S(1)"), dist(b, mesh, "S(0)"));
    EXPECT_EQ(y.placements(), parse_placements("P"));
    EXPECT_TRUE(at::allclose(y.full_tensor(), at::addmm(bias, a, b)));
  });
}

TEST(DispatchPlacementsTest, InPlaceOpsReturnTheirDTensor) {
  run_fake_world(2, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    at::Tensor g = testing::seeded_randn({4, 2}, 8);
    DTensor x = dist(g, mesh, "S(0)");
    at::Tensor same = x.add_(1.0);
    EXPECT_TRUE(same.is_same(x));
    EXPECT_TRUE(at::allclose(x.full_tensor(), g + 1.0));
    x.mul_(dist(g, mesh, "R"));
    EXPECT_EQ(x.placements(), parse_placements("S(0)"));
    EXPECT_TRUE(at::allclose(x.full_tensor(), (g + 1.0) * g));
    DTensor p = dist(g, mesh, "P");
    p.fill_(2.0);  // every rank holds 2: Replicate
    EXPECT_EQ(p.placements(), parse_placements("R"));
    EXPECT_TRUE(at::equal(p.full_tensor(), at::full({4, 2}, 2.0, at::kDouble)));
    DTensor q = dist(g, mesh, "P");
    q.zero_();
    EXPECT_EQ(q.placements(), parse_placements("P"));
    EXPECT_TRUE(at::equal(q.full_tensor(), at::zeros({4, 2}, at::kDouble)));
    DTensor e = at::empty_like(dist(g, mesh, "S(1)"));
    EXPECT_EQ(e.placements(), parse_placements("S(1)"));
    EXPECT_EQ(e.local_tensor().sizes(), (c10::IntArrayRef{4, 1}));
    DTensor z = at::zeros_like(dist(g, mesh, "P"));
    EXPECT_EQ(z.placements(), parse_placements("R"));
    DTensor c = dist(g, mesh, "S(0)");
    c.copy_(dist(g * 2, mesh, "R"));
    EXPECT_EQ(c.placements(), parse_placements("S(0)"));
    EXPECT_TRUE(at::equal(c.full_tensor(), g * 2));
    DTensor d = dist(g, mesh, "S(0)").detach();
    EXPECT_FALSE(d.requires_grad());
    EXPECT_EQ(d.placements(), parse_placements("S(0)"));
  });
}

TEST(DispatchPlacementsTest, ScalarTensorsMixWithDTensors) {
  run_fake_world(2, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    at::Tensor g = testing::seeded_randn({4, 2}, 9);
    DTensor p = dist(g, mesh, "P");
    DTensor y = p + at::scalar_tensor(3.0, at::kDouble);
    EXPECT_TRUE(at::allclose(y.full_tensor(), g + 3.0));
    DTensor z = p * at::scalar_tensor(3.0, at::kDouble);
    EXPECT_TRUE(at::allclose(z.full_tensor(), g * 3.0));
  });
}

}  // namespace
}  // namespace dtensor
