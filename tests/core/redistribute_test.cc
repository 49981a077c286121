// Redistribute on fake meshes of 1, 2 and 3 dims: every placement pair round
// trips (distribute -> redistribute -> full_tensor == input) with the right
// local blocks, even and uneven shapes, size-1 mesh dims; gradients of
// redistribute are the conjugate redistribution; refused transitions throw.
#include <gtest/gtest.h>
#include <torch/utils.h>

#include <optional>
#include <random>

#include "backends/fake/fake_world.h"
#include "core/dtensor.h"
#include "core/redistribute.h"
#include "debug/comm_debug_mode.h"
#include "tests/core/test_util.h"

namespace dtensor {
namespace {

using testing::all_placement_lists;
using testing::expected_local;
using testing::placement_alphabet;
using testing::trace;
using testing::without_partial;
using testing::public_redistribute_refuses;
using testing::redistribute_or_internal;

struct MeshCase {
  std::vector<int64_t> mesh;
  std::vector<int64_t> shape;
};

std::string case_name(const MeshCase& c) {
  std::ostringstream out;
  out << "mesh" << c10::IntArrayRef(c.mesh) << " shape" << c10::IntArrayRef(c.shape);
  return out.str();
}

int64_t num_ranks(const std::vector<int64_t>& mesh) {
  int64_t n = 1;
  for (int64_t s : mesh) n *= s;
  return n;
}

// Integer-valued doubles: sums are exact, P(sum) splits are within rounding.
at::Tensor test_tensor(const std::vector<int64_t>& shape, int64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(static_cast<uint64_t>(seed));
  return at::randint(-8, 8, shape, gen, at::kDouble);
}

// The (from, to) pairs to test: all of them when there are at most
// `max_pairs`; otherwise every list as a source (to all-Replicate) and as a
// target (from all-Replicate and from all-Shard(0)), plus a seeded random
// sample, so that 3-D meshes stay within the test time budget.
std::vector<std::pair<Placements, Placements>> pairs_to_test(const std::vector<Placements>& lists,
                                                             size_t max_pairs, uint64_t seed) {
  std::vector<std::pair<Placements, Placements>> pairs;
  if (lists.size() * lists.size() <= max_pairs) {
    for (const auto& from : lists) {
      for (const auto& to : lists) pairs.emplace_back(from, to);
    }
    return pairs;
  }
  const Placements replicate(lists[0].size(), Replicate());
  const Placements shard0(lists[0].size(), Shard(0));
  for (const auto& l : lists) {
    pairs.emplace_back(l, replicate);
    pairs.emplace_back(replicate, l);
    pairs.emplace_back(shard0, l);
  }
  std::mt19937_64 rng(seed);
  while (pairs.size() < max_pairs) {
    pairs.emplace_back(lists[rng() % lists.size()], lists[rng() % lists.size()]);
  }
  return pairs;
}

void check_round_trips(const MeshCase& c, const Placements& alphabet, size_t max_pairs) {
  const at::Tensor global = test_tensor(c.shape, 7);
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed) + " (rerun with DTENSOR_TEST_SEED=" + std::to_string(seed) + ")");
  run_fake_world(num_ranks(c.mesh), [&](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, c.mesh);
    const auto pairs = pairs_to_test(all_placement_lists(mesh.ndim(), alphabet), max_pairs, seed);
    std::optional<DTensor> x;
    for (const auto& [from, to] : pairs) {
      SCOPED_TRACE(case_name(c) + " " + trace(from, to, c.shape) + " rank " +
                   std::to_string(mesh.global_rank()));
      if (!x || x->placements() != from) x = distribute_tensor(global, mesh, from);
      DTensor y = redistribute_or_internal(*x, to);
      ASSERT_EQ(y.placements(), to);
      ASSERT_EQ(y.sizes(), global.sizes());
      ASSERT_EQ(y.local_tensor().sizes().vec(), y.spec().local_shape());
      if (!y.spec().has_partial()) {
        ASSERT_TRUE(at::equal(y.local_tensor(), expected_local(global, y.spec())));
      }
      ASSERT_TRUE(at::allclose(y.full_tensor(), global, 1e-12, 1e-12));
    }
  });
}

class RedistributeRoundTrip : public ::testing::TestWithParam<MeshCase> {};

TEST_P(RedistributeRoundTrip, EveryPlacementPairRoundTrips) {
  const MeshCase& c = GetParam();
  check_round_trips(c, placement_alphabet(static_cast<int64_t>(c.shape.size())), /*max_pairs=*/400);
}

INSTANTIATE_TEST_SUITE_P(
    Meshes, RedistributeRoundTrip,
    ::testing::Values(MeshCase{{4}, {8, 4}}, MeshCase{{4}, {5, 3}}, MeshCase{{3}, {7, 2}},
                      MeshCase{{2, 2}, {8, 4}}, MeshCase{{2, 2}, {5, 3}}, MeshCase{{2, 2}, {3, 1}},
                      MeshCase{{2, 3}, {7, 5}}, MeshCase{{1, 4}, {6, 3}}, MeshCase{{2, 1, 2}, {5, 6}},
                      MeshCase{{2, 2, 2}, {8, 8}}, MeshCase{{2, 2, 2}, {5, 3}},
                      MeshCase{{2, 2, 2}, {4, 6, 5}}),
    [](const ::testing::TestParamInfo<MeshCase>& info) {
      std::string name = "mesh";
      for (int64_t s : info.param.mesh) name += "_" + std::to_string(s);
      name += "_shape";
      for (int64_t s : info.param.shape) name += "_" + std::to_string(s);
      return name;
    });

TEST(RedistributeTest, EveryPartialOpRoundTripsThroughShardAndReplicate) {
  // Partial values made with from_local: the rank at index 0 along the
  // Partial mesh dim holds the global tensor, the others a value that does
  // not change the reduction (0 for sum, smaller for max, larger for min, the
  // same for avg).
  const at::Tensor global = test_tensor({4, 6}, 3);
  run_fake_world(4, [&](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2, 2});
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax, ReduceOp::kMin}) {
      for (int pdim : {0, 1}) {
        Placements from{Replicate(), Replicate()};
        from[static_cast<size_t>(pdim)] = Partial(op);
        at::Tensor piece = global.clone();
        if (mesh.get_local_rank(pdim) != 0) {
          if (op == ReduceOp::kSum) piece = at::zeros_like(global);
          if (op == ReduceOp::kMax) piece = global - 100;
          if (op == ReduceOp::kMin) piece = global + 100;
        }
        DTensor x = DTensor::from_local(piece, mesh, from);
        for (const Placements& to : all_placement_lists(2, {Replicate(), Shard(0), Shard(1)})) {
          SCOPED_TRACE(trace(from, to, {4, 6}));
          DTensor y = x.redistribute(to);
          EXPECT_TRUE(at::equal(y.local_tensor(), expected_local(global, y.spec())));
          EXPECT_TRUE(at::equal(y.full_tensor(), global));
        }
      }
    }
  });
}

TEST(RedistributeTest, PartialOnBothMeshDimsReducesWithTheRightMultiplier) {
  // [P(sum), P(sum)] of ones on 4 ranks is 4; distribute of a full tensor to
  // [P, P] divides by 4 so that the sum is the tensor again.
  run_fake_world(4, [](World& world) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2, 2});
    DTensor ones = DTensor::from_local(at::ones({3, 2}, at::kDouble), mesh, {Partial(), Partial()});
    testing::CollectiveCounter counter(world);
    DTensor r = ones.redistribute({Replicate(), Replicate()});
    EXPECT_TRUE(at::equal(r.local_tensor(), at::full({3, 2}, 4.0, at::kDouble)));
    EXPECT_EQ(counter.counts(), (testing::Counts{{"all_reduce", 2}}));
    at::Tensor g = at::arange(6, at::kDouble).reshape({3, 2});
    DTensor d = distribute_tensor(g, mesh, {Partial(), Partial()});
    EXPECT_TRUE(at::allclose(d.local_tensor(), g / 4));
    EXPECT_TRUE(at::allclose(d.full_tensor(), g));
    DTensor avg = DTensor::from_local(at::full({3, 2}, 1.0 + mesh.global_rank(), at::kDouble), mesh,
                                      {Partial(ReduceOp::kAvg), Partial(ReduceOp::kAvg)});
    EXPECT_TRUE(at::allclose(avg.full_tensor(), at::full({3, 2}, 2.5, at::kDouble)));
  });
}

TEST(RedistributeTest, ReduceScatterResultHasTheGlobalStridesOfItsLocal) {
  // A Partial input whose local is transposed (a gradient arriving through
  // to_local's backward often is): the reduce_scatter returns a contiguous
  // local, so the global strides must say contiguous too, or a later view
  // plans a view the local tensor cannot take.
  run_fake_world(2, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    const at::Tensor base = at::arange(24, at::kDouble).reshape({6, 4});
    DTensor x(DTensor::from_local(base, mesh, {Partial()}).t());
    ASSERT_EQ(x.spec().meta.stride, (std::vector<int64_t>{1, 4}));
    DTensor y = x.redistribute({Shard(0)});
    EXPECT_TRUE(y.local_tensor().is_contiguous());
    EXPECT_EQ(y.spec().meta.stride, (std::vector<int64_t>{6, 1}));
    DTensor z(y.view({2, 12}));
    EXPECT_TRUE(at::equal(z.full_tensor(), (base.t() * 2).reshape({2, 12})));
    DTensor r = x.redistribute({Replicate()});
    EXPECT_EQ(r.spec().meta.stride, (std::vector<int64_t>{6, 1}));
  });
}

TEST(RedistributeTest, ReplicateToPartialDividesForSumOnlyInternally) {
  run_fake_world(2, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    at::Tensor g = at::arange(4, at::kDouble);
    DTensor r = distribute_tensor(g, mesh, {Replicate()});
    // The internal path (sharding propagation, backward) still makes new Partials.
    EXPECT_TRUE(at::allclose(redistribute_local(r.local_tensor(), r.spec(), {Partial()}), g / 2));
    for (ReduceOp op : {ReduceOp::kAvg, ReduceOp::kMax, ReduceOp::kMin}) {
      EXPECT_TRUE(at::equal(redistribute_local(r.local_tensor(), r.spec(), {Partial(op)}), g));
    }
    EXPECT_THROW(redistribute_local(r.local_tensor(), r.spec(), {Partial(ReduceOp::kProduct)}), c10::Error);
  });
}

// See Note [Redistribute to Partial is internal] (core/dtensor.cc): PyTorch
// 2.15's public redistribute makes a new Partial only as Shard -> P(sum).
TEST(RedistributeTest, PublicRedistributeToNewPartialIsRefused) {
  run_fake_world(4, [](World&) {
    auto mesh1 = DeviceMesh::init(c10::kCPU, {4});
    DTensor r = distribute_tensor(at::arange(8, at::kDouble), mesh1, {Replicate()});
    try {
      r.redistribute({Partial()});
      ADD_FAILURE() << "R -> P(sum) must be refused";
    } catch (const c10::Error& e) {
      const std::string msg = e.what();
      for (const char* part : {"[R]", "[P(sum)]", "[8]", "rank", "only Shard to Partial(sum)"}) {
        EXPECT_NE(msg.find(part), std::string::npos) << part << " missing in: " << msg;
      }
    }
    DTensor s = distribute_tensor(at::arange(8, at::kDouble), mesh1, {Shard(0)});
    EXPECT_THROW(s.redistribute({Partial(ReduceOp::kAvg)}), c10::Error);
    EXPECT_THROW(s.redistribute({Partial(ReduceOp::kMax)}), c10::Error);
    auto mesh = DeviceMesh::init(c10::kCPU, {2, 2});
    at::Tensor g = at::arange(16, at::kDouble).reshape({4, 4});
    DTensor sr = distribute_tensor(g, mesh, {Shard(0), Replicate()});
    EXPECT_THROW(sr.redistribute({Shard(0), Partial()}), c10::Error);
    EXPECT_THROW(sr.redistribute({Replicate(), Partial()}), c10::Error);
    // Keeping an existing Partial on its mesh dim is allowed.
    DTensor p = DTensor::from_local(at::ones({2, 4}, at::kDouble), mesh, {Partial(), Shard(0)});
    DTensor q = p.redistribute({Partial(), Shard(1)});
    EXPECT_EQ(to_string(q.placements()), "[P(sum), S(1)]");
    EXPECT_TRUE(at::equal(q.full_tensor(), at::full({4, 4}, 2.0, at::kDouble)));
  });
}

// PyTorch 2.15's explicit Shard -> Partial(sum): each rank's shard at its
// offset in zeros, no collective; the backward reduce-scatters the gradient.
TEST(RedistributeTest, ShardToPartialSumIsALocalZeroFill) {
  run_fake_world(4, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2, 2});
    const int64_t r0 = mesh.get_local_rank(0), r1 = mesh.get_local_rank(1);
    at::Tensor g = at::arange(1, 21, at::kDouble).reshape({5, 4});
    // [S(0), S(1)] -> [P(sum), S(1)]: dim 0 (uneven, 3 + 2) zero-filled on mesh dim 0.
    DTensor ss = distribute_tensor(g, mesh, {Shard(0), Shard(1)});
    ss.requires_grad_(true);
    debug::CommDebugMode comm;
    DTensor ps = [&] {
      auto guard = comm.enter();
      return ss.redistribute({Partial(), Shard(1)});
    }();
    EXPECT_EQ(comm.get_total_counts(), 0);
    EXPECT_EQ(to_string(ps.placements()), "[P(sum), S(1)]");
    at::Tensor local = ps.local_tensor();
    ASSERT_EQ(local.sizes().vec(), (std::vector<int64_t>{5, 2}));
    at::Tensor mine = g.slice(1, 2 * r1, 2 * r1 + 2);
    at::Tensor want = at::zeros({5, 2}, at::kDouble);
    const int64_t begin = r0 == 0 ? 0 : 3, size = r0 == 0 ? 3 : 2;
    want.narrow(0, begin, size).copy_(mine.narrow(0, begin, size));
    EXPECT_TRUE(at::equal(local, want)) << local;
    EXPECT_TRUE(at::equal(ps.full_tensor(), g));
    // [S(0), S(0)] -> [P(sum), P(sum)]: the inner split first, then the outer.
    DTensor pp = distribute_tensor(g, mesh, {Shard(0), Shard(0)}).redistribute({Partial(), Partial()});
    EXPECT_EQ(pp.local_tensor().sizes().vec(), (std::vector<int64_t>{5, 4}));
    EXPECT_TRUE(at::equal(pp.full_tensor(), g));
    // The gradient of the zero-fill is the reduce-scatter of the output's.
    ps.sum().backward();
    EXPECT_TRUE(at::equal(DTensor(ss.grad()).full_tensor(), at::ones({5, 4}, at::kDouble)));
  });
}

TEST(RedistributeTest, PartialWithADifferentReduceOpIsRefused) {
  run_fake_world(2, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    DTensor p = DTensor::from_local(at::ones({2}), mesh, {Partial(ReduceOp::kMax)});
    try {
      p.redistribute({Partial(ReduceOp::kSum)});
      ADD_FAILURE() << "P(max) -> P(sum) must be refused";
    } catch (const c10::Error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("P(max)"), std::string::npos) << msg;
      EXPECT_NE(msg.find("P(sum)"), std::string::npos) << msg;
    }
  });
}

TEST(RedistributeTest, SizeOneMeshDimsIssueNoCollective) {
  run_fake_world(2, [](World& world) {
    auto mesh = DeviceMesh::init(c10::kCPU, {1, 2, 1});
    at::Tensor g = at::arange(12, at::kDouble).reshape({4, 3});
    DTensor x = distribute_tensor(g, mesh, {Shard(0), Shard(1), Shard(1)});
    testing::CollectiveCounter counter(world);
    DTensor y = x.redistribute({Replicate(), Shard(1), Replicate()});
    EXPECT_EQ(counter.total(), 0);
    DTensor z = y.redistribute({Shard(1), Shard(0), Replicate()});
    EXPECT_EQ(counter.counts(), (testing::Counts{{"all_to_all_single", 1}}));
    EXPECT_TRUE(at::equal(z.full_tensor(), g));
  });
}

// Backward of redistribute(from -> to): a gradient laid out as `to` comes back
// laid out as `from` (Partial as Replicate, except where the gradient arrives
// Partial on a Partial mesh dim of `from`: it stays Partial, Note [Partial
// gradients of a redistribute]) with the same global value.
void check_gradients(const std::vector<int64_t>& mesh_shape, const std::vector<int64_t>& shape,
                     const Placements& alphabet, size_t max_pairs) {
  const at::Tensor global = test_tensor(shape, 11);
  const at::Tensor grad = test_tensor(shape, 12);
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed) + " (rerun with DTENSOR_TEST_SEED=" + std::to_string(seed) + ")");
  run_fake_world(num_ranks(mesh_shape), [&](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, mesh_shape);
    for (const auto& [from, to] : pairs_to_test(all_placement_lists(mesh.ndim(), alphabet), max_pairs, seed)) {
      if (public_redistribute_refuses(from, to)) continue;  // refused: see redistribute_or_internal
      for (bool partial_grad : {false, true}) {
        const Placements grad_placements = partial_grad ? to : without_partial(to);
        if (partial_grad && grad_placements == without_partial(to)) continue;
        SCOPED_TRACE(trace(from, to, shape) + " grad as " + to_string(grad_placements));
        DTensor x = distribute_tensor(global, mesh, from);
        x.set_requires_grad(true);
        DTensor y = x.redistribute(to);
        DTensor gy = distribute_tensor(grad, mesh, grad_placements);
        y.backward(gy);
        ASSERT_TRUE(x.grad().defined());
        DTensor gx = x.grad();
        Placements expected = without_partial(from);
        for (size_t d = 0; d < expected.size(); ++d) {
          if (from[d].is_partial() && grad_placements[d].is_partial()) expected[d] = grad_placements[d];
        }
        EXPECT_EQ(gx.placements(), expected);
        EXPECT_TRUE(at::allclose(gx.full_tensor(), grad, 1e-12, 1e-12));
      }
    }
  });
}

TEST(RedistributeGradientTest, OneDimMeshUneven) {
  check_gradients({3}, {5, 2}, placement_alphabet(2), /*max_pairs=*/400);
}

TEST(RedistributeGradientTest, TwoDimMesh) {
  check_gradients({2, 2}, {5, 4}, placement_alphabet(2), /*max_pairs=*/400);
}

TEST(RedistributeGradientTest, ThreeDimMesh) {
  check_gradients({2, 2, 2}, {4, 3}, placement_alphabet(2), /*max_pairs=*/250);
}

// Found by ThreeDimMesh: a Partial kept on its mesh dim while a nested
// shard is undone on another; the gradient arriving Partial there stays Partial.
TEST(RedistributeGradientTest, PartialKeptBesideANestedShard) {
  const at::Tensor global = test_tensor({4, 3}, 11);
  const at::Tensor grad = test_tensor({4, 3}, 12);
  run_fake_world(8, [&](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2, 2, 2});
    const Placements from = parse_placements("S(1), R, P(sum)");
    const Placements to = parse_placements("S(1), S(1), P(sum)");
    DTensor x = distribute_tensor(global, mesh, from);
    x.set_requires_grad(true);
    DTensor y = x.redistribute(to);
    y.backward(distribute_tensor(grad, mesh, to));
    DTensor gx = x.grad();
    EXPECT_EQ(gx.placements(), from);
    EXPECT_TRUE(at::allclose(gx.full_tensor(), grad, 1e-12, 1e-12));
  });
}

TEST(RedistributeGradientTest, DtypeOptionsCastForwardAndBackward) {
  run_fake_world(2, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    DTensor x = distribute_tensor(at::arange(4, at::kDouble), mesh, {Shard(0)});
    x.set_requires_grad(true);
    RedistributeOptions options;
    options.forward_dtype = at::kFloat;
    options.backward_dtype = at::kFloat;
    DTensor y = x.redistribute({Replicate()}, options);
    EXPECT_EQ(y.scalar_type(), at::kFloat);
    EXPECT_EQ(y.local_tensor().scalar_type(), at::kFloat);
    y.backward(distribute_tensor(at::ones({4}, at::kFloat), mesh, {Replicate()}));
    EXPECT_EQ(x.grad().scalar_type(), at::kDouble);
    EXPECT_TRUE(at::equal(DTensor(x.grad()).full_tensor(), at::ones({4}, at::kDouble)));
  });
}

}  // namespace
}  // namespace dtensor
