// Collective counts of redistribute, asserted exactly, per kind, against the
// table in PyTorch's test_redistribute.py (test_redistribute_shard_dim_change,
// test_redistribute_shard_dim_multi_dim_mesh, test_partial_to_shard, ...),
// forward and backward, with a CollectiveObserver on every rank's world.
#include <gtest/gtest.h>
#include <torch/utils.h>

#include "backends/fake/fake_world.h"
#include "core/dtensor.h"
#include "tests/core/test_util.h"

namespace dtensor {
namespace {

using testing::CollectiveCounter;
using testing::Counts;
using testing::trace;
using testing::redistribute_or_internal;

const char* const kAG = "all_gather_into_tensor";
const char* const kA2A = "all_to_all_single";
const char* const kAR = "all_reduce";
const char* const kRS = "reduce_scatter_tensor";

struct CountCase {
  std::vector<int64_t> mesh;
  std::vector<int64_t> shape;
  const char* from;
  const char* to;
  Counts expected;
};

int64_t num_ranks(const std::vector<int64_t>& mesh) {
  int64_t n = 1;
  for (int64_t s : mesh) n *= s;
  return n;
}

// Runs every case of `table` whose mesh has `world` ranks; checks counts on
// every rank and that the result equals distributing straight to `to`.
void check_table(const std::vector<CountCase>& table) {
  for (const CountCase& c : table) {
    const Placements from = parse_placements(c.from);
    const Placements to = parse_placements(c.to);
    const at::Tensor global = at::randn(c.shape, at::kDouble);
    run_fake_world(num_ranks(c.mesh), [&](World& world) {
      SCOPED_TRACE("mesh " + std::string(c10::str(c10::IntArrayRef(c.mesh))) + " " +
                   trace(from, to, c.shape) + " rank " + std::to_string(world.rank()));
      auto mesh = DeviceMesh::init(c10::kCPU, c.mesh);
      DTensor x = distribute_tensor(global, mesh, from);
      CollectiveCounter counter(world);
      DTensor y = redistribute_or_internal(x, to);  // R -> P: refused publicly, internal path counted
      EXPECT_EQ(counter.counts(), c.expected);
      EXPECT_EQ(y.placements(), to);
      DTensor expected = distribute_tensor(global, mesh, to);
      EXPECT_TRUE(at::allclose(y.local_tensor(), expected.local_tensor(), 1e-12, 1e-12));
    });
  }
}

TEST(RedistributeCountsTest, OneDimMeshTransitions) {
  std::vector<CountCase> table;
  for (const std::vector<int64_t>& shape : std::vector<std::vector<int64_t>>{{8, 8}, {8, 8, 8}, {8, 5}, {5, 8}, {5, 5}}) {
    table.push_back({{4}, shape, "S(0)", "S(1)", {{kA2A, 1}}});
    table.push_back({{4}, shape, "S(1)", "S(0)", {{kA2A, 1}}});
    table.push_back({{4}, shape, "S(0)", "R", {{kAG, 1}}});
    table.push_back({{4}, shape, "R", "S(1)", {}});
    table.push_back({{4}, shape, "P", "R", {{kAR, 1}}});
    table.push_back({{4}, shape, "P", "S(0)", {{kRS, 1}}});
    table.push_back({{4}, shape, "P", "S(1)", {{kRS, 1}}});
    table.push_back({{4}, shape, "R", "P", {}});
    table.push_back({{4}, shape, "P(avg)", "R", {{kAR, 1}}});
  }
  check_table(table);
}

// PyTorch: test_redistribute_shard_dim_change, 2-D part (comm_counts_2d).
TEST(RedistributeCountsTest, TwoDimMeshShardDimChangeMatchesPyTorch) {
  std::vector<CountCase> table;
  for (const std::vector<int64_t>& shape : std::vector<std::vector<int64_t>>{{8, 8}, {8, 8, 8}, {8, 5}, {5, 8}, {5, 5}}) {
    table.push_back({{2, 2}, shape, "S(0),S(1)", "S(0),S(0)", {{kA2A, 1}}});
    table.push_back({{2, 2}, shape, "S(0),S(1)", "S(1),S(0)", {{kAG, 1}, {kA2A, 1}}});
    table.push_back({{2, 2}, shape, "S(0),S(0)", "S(1),S(1)", {{kAG, 1}, {kA2A, 1}}});
    if (shape.size() > 2) {
      // PyTorch: all_gather + all_to_all; same total, ours moves fewer bytes:
      // mesh dim 0 S(0) -> S(1), then mesh dim 1 S(2) -> S(0).
      table.push_back({{2, 2}, shape, "S(0),S(2)", "S(1),S(0)", {{kA2A, 2}}});
      table.push_back({{2, 2}, shape, "S(1),S(1)", "S(1),S(2)", {{kA2A, 1}}});
    }
  }
  check_table(table);
}

// PyTorch: test_redistribute_shard_dim_multi_dim_mesh (comm_counts_3d).
TEST(RedistributeCountsTest, ThreeDimMeshShardDimChangeMatchesPyTorch) {
  const std::vector<int64_t> m{2, 2, 2}, s{8, 8, 8};
  check_table({
      {m, s, "S(0),S(0),S(0)", "S(1),S(1),S(1)", {{kAG, 2}, {kA2A, 1}}},
      {m, s, "S(0),S(1),S(0)", "S(1),S(0),S(0)", {{kAG, 2}, {kA2A, 1}}},
      {m, s, "S(0),S(1),S(2)", "S(2),S(1),S(0)", {{kAG, 1}, {kA2A, 1}}},
      {m, s, "S(1),S(0),S(0)", "R,S(0),S(0)", {{kAG, 1}}},
      {m, s, "S(1),R,S(0)", "R,S(0),S(0)", {{kAG, 2}}},
      {m, s, "S(0),S(0),S(1)", "S(0),S(1),S(2)", {{kA2A, 2}}},
  });
}

TEST(RedistributeCountsTest, PartialTransitionsOnTwoDimMesh) {
  const std::vector<int64_t> m{2, 2};
  for (const std::vector<int64_t>& s : std::vector<std::vector<int64_t>>{{8, 4}, {5, 3}}) {
    check_table({
        {m, s, "P,P", "R,R", {{kAR, 2}}},
        {m, s, "P,P", "S(0),S(1)", {{kRS, 2}}},
        {m, s, "P,P", "S(0),S(0)", {{kRS, 2}}},
        {m, s, "P,R", "S(0),R", {{kRS, 1}}},
        {m, s, "R,P", "R,S(1)", {{kRS, 1}}},
        {m, s, "S(0),P", "S(0),R", {{kAR, 1}}},
        {m, s, "P,S(0)", "R,S(0)", {{kAR, 1}}},
        {m, s, "P,S(0)", "S(0),S(0)", {{kAG, 1}, {kRS, 1}}},
        {m, s, "R,R", "P,P", {}},
        {m, s, "S(0),S(1)", "R,R", {{kAG, 2}}},
        {m, s, "R,R", "S(1),S(0)", {}},
    });
  }
}

// Partial on both mesh dims -> Replicate reduces over all 4 ranks: ones of
// every rank sum to 4 (PyTorch's test_multi_dim_mesh num_sums multiplier).
TEST(RedistributeCountsTest, PartialOnEveryMeshDimUsesOneAllReducePerDim) {
  run_fake_world(8, [](World& world) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2, 2, 2});
    DTensor p = DTensor::from_local(at::ones({4, 3}), mesh, {Partial(), Partial(), Partial()});
    CollectiveCounter counter(world);
    DTensor r = p.redistribute({Replicate(), Replicate(), Replicate()});
    EXPECT_EQ(counter.counts(), (Counts{{kAR, 3}}));
    EXPECT_TRUE(at::equal(r.local_tensor(), at::full({4, 3}, 8.0)));
    DTensor q = DTensor::from_local(at::ones({4, 3}), mesh, {Partial(), Replicate(), Partial()});
    EXPECT_TRUE(at::equal(q.full_tensor(), at::full({4, 3}, 4.0)));
  });
}

// Counts of forward and backward of one redistribute: the backward runs the
// conjugate transition.
struct AutogradCountCase {
  const char* from;
  const char* to;
  Counts forward;
  Counts backward;
};

TEST(RedistributeCountsTest, BackwardRunsTheConjugateTransition) {
  const std::vector<AutogradCountCase> table = {
      {"S(0)", "R", {{kAG, 1}}, {}},           // R -> S(0) grad: local chunk
      {"R", "S(0)", {}, {{kAG, 1}}},           // S(0) -> R grad
      {"P", "R", {{kAR, 1}}, {}},              // R -> R grad
      {"P", "S(1)", {{kRS, 1}}, {{kAG, 1}}},   // S(1) -> R grad
      {"S(0)", "S(1)", {{kA2A, 1}}, {{kA2A, 1}}},
  };
  for (const auto& c : table) {
    const Placements from = parse_placements(c.from);
    const Placements to = parse_placements(c.to);
    run_fake_world(4, [&](World& world) {
      SCOPED_TRACE(trace(from, to, {8, 4}));
      auto mesh = DeviceMesh::init(c10::kCPU, {4});
      DTensor x = distribute_tensor(at::ones({8, 4}), mesh, from);
      x.set_requires_grad(true);
      CollectiveCounter counter(world);
      DTensor y = x.redistribute(to);
      EXPECT_EQ(counter.counts(), c.forward);
      DTensor grad = distribute_tensor(at::ones({8, 4}), mesh, testing::without_partial(to));
      counter.clear();
      y.backward(grad);
      EXPECT_EQ(counter.counts(), c.backward);
    });
  }
}

// PyTorch's test_replicate_to_local_partial_grad: to_local(grad_placements=
// [Partial()]) makes the local gradient a partial sum, so the backward of the
// redistribute before it reduces.
TEST(RedistributeCountsTest, ToLocalWithPartialGradPlacementsReducesInBackward) {
  run_fake_world(4, [](World& world) {
    auto mesh = DeviceMesh::init(c10::kCPU, {4});
    // S(0) -> R forward (all_gather); the P gradient goes back to S(0): reduce_scatter.
    DTensor x = distribute_tensor(at::ones({8, 4}), mesh, {Shard(0)});
    x.set_requires_grad(true);
    CollectiveCounter counter(world);
    at::Tensor local = x.redistribute({Replicate()}).to_local(Placements{Partial()});
    EXPECT_EQ(counter.counts(), (Counts{{kAG, 1}}));
    counter.clear();
    local.sum().backward();
    EXPECT_EQ(counter.counts(), (Counts{{kRS, 1}}));
    DTensor gx = x.grad();
    EXPECT_EQ(gx.placements(), Placements{Shard(0)});
    EXPECT_TRUE(at::equal(gx.full_tensor(), at::full({8, 4}, 4.0)));

    // R -> R (a no-op redistribute) then a P gradient: all_reduce back to R.
    DTensor r = distribute_tensor(at::ones({8, 4}), mesh, {Replicate()});
    r.set_requires_grad(true);
    counter.clear();
    r.redistribute({Replicate()}).to_local(Placements{Partial()}).sum().backward();
    EXPECT_EQ(counter.counts(), (Counts{{kAR, 1}}));
    EXPECT_TRUE(at::equal(DTensor(r.grad()).local_tensor(), at::full({8, 4}, 4.0)));

    // A leaf's gradient keeps the hint: Partial, no collective.
    DTensor leaf = distribute_tensor(at::ones({8, 4}), mesh, {Replicate()});
    leaf.set_requires_grad(true);
    counter.clear();
    leaf.to_local(Placements{Partial()}).sum().backward();
    EXPECT_EQ(counter.total(), 0);
    EXPECT_EQ(DTensor(leaf.grad()).placements(), Placements{Partial()});
    EXPECT_TRUE(at::equal(DTensor(leaf.grad()).full_tensor(), at::full({8, 4}, 4.0)));
  });
}

// PyTorch 2.11's gradient placements for Partial inputs (checked against it
// by tests/diff's structured programs): to_local's default reads a Partial as
// Replicate (the local gradient is the whole gradient on every rank), and a
// redistribute's backward keeps a gradient that arrives Partial on a mesh dim
// where its input was Partial (Note [Partial gradients of a redistribute]).
TEST(RedistributeCountsTest, GradientPlacementsOfPartialInputs) {
  run_fake_world(4, [](World& world) {
    auto mesh = DeviceMesh::init(c10::kCPU, {4});
    CollectiveCounter counter(world);
    DTensor p = DTensor::from_local(at::ones({2, 3}), mesh, {Partial()});
    p.set_requires_grad(true);
    (p.to_local() * 3).sum().backward();
    EXPECT_EQ(counter.total(), 0);
    EXPECT_EQ(DTensor(p.grad()).placements(), Placements{Replicate()});
    EXPECT_TRUE(at::equal(DTensor(p.grad()).full_tensor(), at::full({2, 3}, 3.0)));

    DTensor q = DTensor::from_local(at::ones({4, 3}), mesh, {Partial()});
    q.set_requires_grad(true);
    at::Tensor local = q.redistribute({Replicate()}).to_local(Placements{Partial()});
    EXPECT_EQ(counter.counts(), (Counts{{kAR, 1}}));
    counter.clear();
    local.sum().backward();
    EXPECT_EQ(counter.total(), 0);  // was an all_reduce to Replicate
    EXPECT_EQ(DTensor(q.grad()).placements(), Placements{Partial()});
    EXPECT_TRUE(at::equal(DTensor(q.grad()).full_tensor(), at::full({4, 3}, 4.0)));
  });
}

TEST(RedistributeCountsTest, FullTensorWithPartialGradPlacementsReduceScatters) {
  run_fake_world(2, [](World& world) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    DTensor x = distribute_tensor(at::ones({4, 3}), mesh, {Shard(1)});
    x.set_requires_grad(true);
    CollectiveCounter counter(world);
    at::Tensor full = x.full_tensor(Placements{Partial()});
    EXPECT_EQ(counter.counts(), (Counts{{kAG, 1}}));
    counter.clear();
    (full * 3).sum().backward();
    EXPECT_EQ(counter.counts(), (Counts{{kRS, 1}}));
    EXPECT_TRUE(at::equal(DTensor(x.grad()).full_tensor(), at::full({4, 3}, 6.0)));
    // Default (gradient as the forward placements, R): a local chunk only.
    DTensor z = distribute_tensor(at::ones({4, 3}), mesh, {Shard(1)});
    z.set_requires_grad(true);
    at::Tensor zfull = z.full_tensor();
    counter.clear();
    (zfull * 3).sum().backward();
    EXPECT_EQ(counter.total(), 0);
    EXPECT_TRUE(at::equal(DTensor(z.grad()).full_tensor(), at::full({4, 3}, 3.0)));
  });
}


// Note [Merged collectives over a flattened mesh]: once the user flattened
// mesh dims, a run of same-kind steps over them is one collective over the
// flattened mesh, as PyTorch 2.15 (counts checked by running it), and the
// result still equals distributing straight to `to`, uneven shapes included.
struct FlattenedCase {
  std::vector<int64_t> mesh;          // dims named a, b, c
  std::vector<std::string> flatten;  // the dims the user flattened
  std::vector<int64_t> shape;
  const char* from;
  const char* to;
  Counts expected;
  bool on_sub_mesh = false;  // the tensor lives on mesh[flatten], not on the root
};

TEST(RedistributeCountsTest, RunsOverAFlattenedMeshAreOneCollective) {
  const std::vector<int64_t> m2{2, 2}, m3{2, 2, 2};
  const std::vector<std::string> ab{"a", "b"}, bc{"b", "c"}, ac{"a", "c"}, abc{"a", "b", "c"};
  const std::vector<FlattenedCase> table{
      {m2, ab, {8, 4}, "S(0),S(0)", "R,R", {{kAG, 1}}},
      {m2, ab, {3, 2}, "S(0),S(0)", "R,R", {{kAG, 1}}},  // nested pieces 1, 1, 1, 0: the flat chunks
      // Nested pieces 2, 1, 2, 1 are not the flat chunks 2, 2, 2, 0: PyTorch
      // 2.15 gathers once and returns wrong rows; we gather per mesh dim.
      {m2, ab, {6, 2}, "S(0),S(0)", "R,R", {{kAG, 2}}},
      {m2, ab, {5, 2}, "S(0),S(0)", "R,R", {{kAG, 2}}},
      {m2, ab, {8, 4}, "S(0),S(1)", "R,R", {{kAG, 2}}},  // different changes do not merge
      {m2, ab, {8, 4}, "P,P", "R,R", {{kAR, 1}}},
      {m2, ab, {5, 3}, "P,P(avg)", "R,R", {{kAR, 1}}},   // sum, then / 2
      {m2, ab, {8, 4}, "P(max),P(max)", "R,R", {{kAR, 1}}},
      {m2, ab, {8, 4}, "P,P(avg)", "S(0),S(0)", {{kRS, 1}}},
      // 6 rows over 4 ranks: the reduce_scatters do not merge (PyTorch keeps
      // two); one all_reduce over the flattened mesh and a local chunk cost
      // less for a small tensor (Note [Reducing a flattened group first])...
      {m2, ab, {6, 2}, "P,P", "S(0),S(0)", {{kAR, 1}}},
      // ...and more for a large one (3 MiB): twice the bytes of the two
      // reduce_scatters.
      {m2, ab, {6, 65536}, "P,P", "S(0),S(0)", {{kRS, 2}}},
      {m2, ab, {5, 12}, "P(avg),P(avg)", "R,S(0)", {{kAR, 1}}},  // f18_0074: PyTorch 2.15 too
      // Different shard dims do not merge: PyTorch reduce_scatters twice; for
      // 256 bytes one merged all_reduce and local chunks cost less.
      {m2, ab, {8, 4}, "P,P", "S(0),S(1)", {{kAR, 1}}},
      {m2, ab, {8, 65536}, "P,P", "S(0),S(1)", {{kRS, 2}}},
      {m3, bc, {8, 4}, "S(0),S(0),S(0)", "S(0),R,R", {{kAG, 1}}},
      // All three gather: no mesh flattens all three, so none merges (PyTorch
      // tries the whole run only).
      {m3, bc, {8, 4}, "S(0),S(0),S(0)", "R,R,R", {{kAG, 3}}},
      {m3, ac, {8, 4}, "S(0),R,S(0)", "R,R,R", {{kAG, 1}}},  // non-adjacent dims
      {m3, abc, {8, 4}, "P,P,P", "R,R,R", {{kAR, 1}}},
      {m3, bc, {8, 4}, "S(0),S(0)", "R,R", {{kAG, 1}}, /*on_sub_mesh=*/true},
  };
  for (const FlattenedCase& c : table) {
    const Placements from = parse_placements(c.from), to = parse_placements(c.to);
    const at::Tensor global = at::randn(c.shape, at::kDouble);
    run_fake_world(num_ranks(c.mesh), [&](World& world) {
      SCOPED_TRACE("mesh " + std::string(c10::str(c10::IntArrayRef(c.mesh))) + " flattening " +
                   c10::Join(",", c.flatten) + " " + trace(from, to, c.shape) + " rank " +
                   std::to_string(world.rank()));
      const std::vector<std::string> names =
          c.mesh.size() == 2 ? std::vector<std::string>{"a", "b"} : std::vector<std::string>{"a", "b", "c"};
      auto root = DeviceMesh::init(c10::kCPU, c.mesh, names);
      DeviceMesh flat = root[c.flatten].flatten();
      EXPECT_TRUE(root[c.flatten].flatten().same_object(flat)) << "flattening again returns the registered mesh";
      const DeviceMesh mesh = c.on_sub_mesh ? root[c.flatten] : root;
      // P(max) cannot be distributed: every rank holding the value is one.
      DTensor x = from.front().is_partial() && from.front().reduce_op() == ReduceOp::kMax
                      ? DTensor::from_local(global, mesh, from)
                      : distribute_tensor(global, mesh, from);
      CollectiveCounter counter(world);
      DTensor y = redistribute_or_internal(x, to);
      EXPECT_EQ(counter.counts(), c.expected);
      EXPECT_EQ(y.placements(), to);
      EXPECT_TRUE(at::allclose(y.local_tensor(), distribute_tensor(global, mesh, to).local_tensor(), 1e-12, 1e-12));
    });
  }
}

// Without a flattened mesh, or with one over other dims, nothing merges.
TEST(RedistributeCountsTest, NoFlattenedMeshNoMerge) {
  run_fake_world(8, [](World& world) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2, 2, 2}, {"a", "b", "c"});
    const at::Tensor global = at::arange(32, at::kDouble).reshape({8, 4});
    DTensor x = distribute_tensor(global, mesh, parse_placements("R,S(0),S(0)"));
    CollectiveCounter before(world);
    EXPECT_TRUE(at::equal(x.full_tensor(), global));
    EXPECT_EQ(before.counts(), (Counts{{kAG, 2}}));
    mesh[{"a", "b"}].flatten();
    CollectiveCounter other_dims(world);
    EXPECT_TRUE(at::equal(x.full_tensor(), global));
    EXPECT_EQ(other_dims.counts(), (Counts{{kAG, 2}}));
    mesh[{"b", "c"}].flatten();
    CollectiveCounter merged(world);
    EXPECT_TRUE(at::equal(x.full_tensor(), global));
    EXPECT_EQ(merged.counts(), (Counts{{kAG, 1}}));
  });
}

}  // namespace
}  // namespace dtensor
