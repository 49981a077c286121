// The op-by-op harness: reference run, placement enumeration, DTensor run.
#include "tests/core/ops/op_harness.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <random>
#include <sstream>

#include "backends/fake/fake_world.h"
#include "core/dtensor_impl.h"
#include "core/init.h"
#include "layout/mesh_shape.h"
#include "layout/shard_layout.h"
#include "testing/seed.h"

namespace dtensor::testing {
namespace {

// The block of `global` this rank holds under `spec` (Partial dims ignored).
at::Tensor block_of(const at::Tensor& global, const DTensorSpec& spec) {
  std::vector<int64_t> shape = spec.local_shape(), offset = spec.global_offset();
  at::Tensor out = global;
  for (size_t d = 0; d < shape.size(); ++d) out = out.narrow(static_cast<int64_t>(d), offset[d], shape[d]);
  return out;
}

int64_t product(const std::vector<int64_t>& v) {
  int64_t n = 1;
  for (int64_t x : v) n *= x;
  return n;
}

at::Generator generator(uint64_t seed) { return at::make_generator<at::CPUGeneratorImpl>(seed); }

// Cotangents for the float outputs, so gradients are not all-ones sums.
Tensors make_cotangents(const Tensors& outputs, uint64_t seed) {
  Tensors cot;
  auto gen = generator(seed ^ 0x5eedULL);
  for (const at::Tensor& out : outputs) {
    if (out.defined() && out.is_floating_point()) {
      cot.push_back(at::randn(out.sizes(), gen, at::kDouble).to(out.scalar_type()));
    } else {
      cot.push_back(at::Tensor());
    }
  }
  return cot;
}

struct Reference {
  Tensors outputs;
  Tensors grads;  // per input; undefined where no gradient
};

Reference run_reference(const OpCase& c, const Tensors& inputs, uint64_t seed) {
  Tensors leaves;
  for (size_t i = 0; i < inputs.size(); ++i) {
    at::Tensor t = inputs[i].clone();
    if (c.inputs[i].kind == Input::Kind::kFloat && c.inputs[i].requires_grad) t.requires_grad_(true);
    leaves.push_back(t);
  }
  Reference ref;
  ref.outputs = c.fn(leaves);
  Tensors cot = make_cotangents(ref.outputs, seed);
  at::Tensor loss;
  for (size_t o = 0; o < ref.outputs.size(); ++o) {
    if (!cot[o].defined() || !ref.outputs[o].requires_grad()) continue;
    at::Tensor term = ref.outputs[o].mul(cot[o]).sum();
    loss = loss.defined() ? loss.add(term) : term;
  }
  if (c.check_grads && loss.defined()) loss.backward();
  for (const at::Tensor& leaf : leaves) ref.grads.push_back(leaf.grad());
  for (auto& out : ref.outputs) {
    if (out.defined()) out = out.detach();
  }
  return ref;
}

// This rank's share of a Partial: unequal weights summing to 1 (sum) or
// averaging 1 (avg) over each partial mesh dim, so a rule that treats
// Partial as Replicate fails; the value itself for max and min.
double partial_weight(const DeviceMesh& mesh, const Placements& placements) {
  double w = 1;
  for (int d = 0; d < mesh.ndim(); ++d) {
    const Placement& p = placements[static_cast<size_t>(d)];
    if (!p.is_partial() || (p.reduce_op() != ReduceOp::kSum && p.reduce_op() != ReduceOp::kAvg)) continue;
    const double n = static_cast<double>(mesh.size(d));
    const double c = static_cast<double>(mesh.get_local_rank(d));
    w *= (c + 1) / (n * (n + 1) / 2) * (p.reduce_op() == ReduceOp::kAvg ? n : 1.0);
  }
  return w;
}

at::Tensor make_leaf(const at::Tensor& global, const Input& in, const DeviceMesh& mesh,
                     const Placements& placements) {
  DTensorSpec spec{mesh, placements,
                   TensorMeta{global.sizes().vec(), global.strides().vec(), global.scalar_type()}};
  at::Tensor local = block_of(global, spec).clone();
  if (spec.has_partial()) local.mul_(partial_weight(mesh, placements));
  at::Tensor leaf = make_dtensor(local, spec);
  if (in.kind == Input::Kind::kFloat && in.requires_grad) leaf.requires_grad_(true);
  return leaf;
}

std::string tensor_text(const at::Tensor& t) {
  std::ostringstream out;
  out << t;
  return out.str();
}

void expect_close(const at::Tensor& actual, const at::Tensor& expected, const OpCase& c, const std::string& what) {
  if (!expected.defined()) return;
  ASSERT_TRUE(actual.defined()) << what << " is undefined";
  ASSERT_EQ(actual.sizes(), expected.sizes()) << what;
  if (expected.is_floating_point()) {
    EXPECT_TRUE(at::allclose(actual.to(expected.scalar_type()), expected, c.rtol, c.atol, /*equal_nan=*/true))
        << what << ": got\n" << tensor_text(actual) << "\nexpected\n" << tensor_text(expected);
  } else {
    EXPECT_TRUE(at::equal(actual.to(expected.scalar_type()), expected))
        << what << ": got\n" << tensor_text(actual) << "\nexpected\n" << tensor_text(expected);
  }
}

// The gradient a DTensor leaf holds, as a global tensor (zeros when the
// reference gradient exists but the DTensor got none: an unused input).
at::Tensor global_grad(const at::Tensor& leaf) {
  at::Tensor g = leaf.grad();
  if (!g.defined()) return g;
  if (!is_dtensor(g)) return g;  // reported as a mismatch of placements below
  return DTensor(g).full_tensor();
}

std::vector<std::vector<Placements>> without_uneven_shards(const OpCase& c, const std::vector<int64_t>& mesh_shape,
                                                          std::vector<std::vector<Placements>> combos) {
  if (!c.even_shards_only) return combos;
  combos.erase(std::remove_if(combos.begin(), combos.end(),
                              [&](const std::vector<Placements>& combo) {
                                for (size_t i = 0; i < combo.size(); ++i) {
                                  if (has_uneven_shard(c.inputs[i].shape, mesh_shape, combo[i])) return true;
                                }
                                return false;
                              }),
               combos.end());
  return combos;
}

std::vector<std::vector<Placements>> combinations(const std::vector<std::vector<Placements>>& per_input) {
  std::vector<std::vector<Placements>> out{{}};
  for (const auto& options : per_input) {
    std::vector<std::vector<Placements>> next;
    for (const auto& prefix : out) {
      for (const auto& p : options) {
        auto extended = prefix;
        extended.push_back(p);
        next.push_back(extended);
      }
    }
    out = std::move(next);
  }
  return out;
}

std::vector<std::vector<Placements>> sample(std::vector<std::vector<Placements>> all, size_t n, uint64_t seed) {
  if (all.size() <= n) return all;
  std::mt19937_64 rng(seed);
  std::shuffle(all.begin(), all.end(), rng);
  all.resize(n);
  return all;
}

// Runs the case on DTensors; `observe` sees the leaves, outputs and counters.
struct DTensorRun {
  Tensors outputs;       // global (full_tensor), rank-local copies
  Tensors grads;         // global gradients per input
  std::vector<std::string> grad_types;  // "dtensor" / "plain" / "none"
  CommCounts comms;
};

DTensorRun run_dtensor(World& world, const OpCase& c, const Tensors& inputs, const std::vector<int64_t>& mesh_shape,
                       const std::vector<Placements>& placements, uint64_t seed, const Reference* ref) {
  dtensor::init();  // make_dtensor below does not; distribute_tensor / from_local do
  auto mesh = DeviceMesh::init(c10::kCPU, mesh_shape);
  Tensors leaves;
  for (size_t i = 0; i < inputs.size(); ++i) leaves.push_back(make_leaf(inputs[i], c.inputs[i], mesh, placements[i]));
  DTensorRun run;
  Tensors outputs;
  {
    CollectiveCounter counter(world);
    outputs = c.fn(leaves);
    run.comms.forward = counter.counts();
  }
  Tensors cot = ref ? make_cotangents(ref->outputs, seed) : make_cotangents(outputs, seed);
  at::Tensor loss;
  for (size_t o = 0; o < outputs.size(); ++o) {
    if (!cot[o].defined() || !outputs[o].defined() || !outputs[o].requires_grad()) continue;
    DTensor cot_d = distribute_tensor(cot[o], mesh, Placements(static_cast<size_t>(mesh.ndim()), Replicate()),
                                      DistributeOptions{std::nullopt});
    at::Tensor term = outputs[o].mul(cot_d).sum();
    loss = loss.defined() ? loss.add(term) : term;
  }
  if (c.check_grads && loss.defined()) {
    CollectiveCounter counter(world);
    // Reduce the scalar loss first so that the backward counts only the op's.
    DTensor reduced = DTensor(loss).redistribute(Placements(static_cast<size_t>(mesh.ndim()), Replicate()));
    counter.clear();
    reduced.backward();
    run.comms.backward = counter.counts();
  }
  for (const at::Tensor& out : outputs) {
    if (out.defined() && is_dtensor(out)) run.comms.outputs.push_back(DTensor(out).placements());
    run.outputs.push_back(out.defined() && is_dtensor(out) ? DTensor(out).full_tensor() : out);
  }
  for (const at::Tensor& leaf : leaves) {
    at::Tensor g = leaf.grad();
    run.grad_types.push_back(!g.defined() ? "none" : is_dtensor(g) ? "dtensor" : "plain");
    run.grads.push_back(global_grad(leaf));
  }
  return run;
}

}  // namespace

std::string describe(const std::vector<Placements>& placements) {
  std::ostringstream out;
  for (size_t i = 0; i < placements.size(); ++i) out << (i ? ", " : "") << to_string(placements[i]);
  return out.str();
}

bool has_uneven_shard(const std::vector<int64_t>& shape, const std::vector<int64_t>& mesh_shape,
                      const Placements& placements) {
  const MeshShape mesh = MeshShape::create(mesh_shape);
  const ShardLayout first = local_shape_and_offset(shape, mesh, placements, 0);
  for (int64_t rank = 1; rank < product(mesh_shape); ++rank) {
    if (local_shape_and_offset(shape, mesh, placements, rank).local_shape != first.local_shape) return true;
  }
  return false;
}

Tensors make_inputs(const OpCase& c, uint64_t seed) {
  Tensors out;
  auto gen = generator(seed);
  for (const Input& in : c.inputs) {
    at::Tensor t;
    if (in.kind == Input::Kind::kFloat) {
      t = at::randn(in.shape, gen, at::kDouble);
    } else if (in.kind == Input::Kind::kIndex) {
      t = at::randint(0, in.high, in.shape, gen, at::kLong);
    } else {
      t = at::rand(in.shape, gen, at::kDouble).lt(0.5);
    }
    if (in.transform) t = in.transform(t);
    out.push_back(t);
  }
  return out;
}

std::vector<Placements> input_placements(const Input& in, int mesh_ndim) {
  Placements alphabet{Replicate()};
  for (int64_t d = 0; d < static_cast<int64_t>(in.shape.size()); ++d) alphabet.push_back(Shard(d));
  if (in.kind == Input::Kind::kFloat && in.partial) alphabet.push_back(Partial());
  if (!in.only.empty() && mesh_ndim == 1) return in.only;
  if (!in.only.empty()) {
    alphabet.clear();
    for (const Placements& p : in.only) alphabet.push_back(p[0]);
  }
  return all_placement_lists(mesh_ndim, alphabet);
}

void check_placements(const OpCase& c, const std::vector<int64_t>& mesh_shape,
                      const std::vector<Placements>& placements, uint64_t seed) {
  const Tensors inputs = make_inputs(c, seed);
  const Reference ref = run_reference(c, inputs, seed);
  SCOPED_TRACE(c.name + " on mesh " + c10::str(c10::IntArrayRef(mesh_shape)) + " with inputs " +
               describe(placements) + ", seed " + std::to_string(seed));
  DTensorRun run;
  try {
    run_fake_world(product(mesh_shape), [&](World& world) {
      DTensorRun mine = run_dtensor(world, c, inputs, mesh_shape, placements, seed, &ref);
      if (world.rank() == 0) run = std::move(mine);
    });
  } catch (const std::exception& e) {
    ADD_FAILURE() << e.what();
    return;
  }
  ASSERT_EQ(run.outputs.size(), ref.outputs.size());
  for (size_t o = 0; o < ref.outputs.size(); ++o) {
    expect_close(run.outputs[o], ref.outputs[o], c, "output " + std::to_string(o));
  }
  if (!c.check_grads) return;
  for (size_t i = 0; i < ref.grads.size(); ++i) {
    if (!ref.grads[i].defined()) continue;
    EXPECT_NE(run.grad_types[i], "plain") << "the gradient of input " << i << " is a plain tensor";
    if (run.grad_types[i] == "none") {
      EXPECT_TRUE(at::allclose(ref.grads[i], at::zeros_like(ref.grads[i]))) << "input " << i << " got no gradient";
      continue;
    }
    expect_close(run.grads[i], ref.grads[i], c, "gradient of input " + std::to_string(i));
  }
}

void check_all_placements(const OpCase& c, int max_combos, int samples_2d) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed) + " (set DTENSOR_TEST_SEED to repeat)");
  for (const auto& [mesh_shape, limit] :
       std::vector<std::pair<std::vector<int64_t>, int>>{{{4}, max_combos}, {{2, 2}, samples_2d}}) {
    std::vector<std::vector<Placements>> per_input;
    for (const Input& in : c.inputs) per_input.push_back(input_placements(in, static_cast<int>(mesh_shape.size())));
    auto combos = sample(without_uneven_shards(c, mesh_shape, combinations(per_input)), static_cast<size_t>(limit), seed);
    std::cout << "[ harness  ] " << c.name << ": " << combos.size() << " input placements on mesh "
              << c10::IntArrayRef(mesh_shape) << ", seed " << seed << "\n";
    for (const auto& combo : combos) {
      check_placements(c, mesh_shape, combo, seed);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

CommCounts comm_counts(const OpCase& c, const std::vector<int64_t>& mesh_shape,
                       const std::vector<Placements>& placements, uint64_t seed) {
  const Tensors inputs = make_inputs(c, seed);
  CommCounts result;
  run_fake_world(product(mesh_shape), [&](World& world) {
    DTensorRun run = run_dtensor(world, c, inputs, mesh_shape, placements, seed, nullptr);
    if (world.rank() == 0) result = run.comms;
  });
  return result;
}

}  // namespace dtensor::testing
