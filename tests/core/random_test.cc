// Tests of dtensor::rand / dtensor::randn and the RNG modes: exact parity with
// single-device torch::rand/randn, replicas agreeing, shards differing,
// determinism, and offset-based generation being independent of the mesh.
// See Note [DTensor random modes].
#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>
#include <torch/utils.h>

#include <functional>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "backends/fake/fake_world.h"
#include "backends/solo/solo_world.h"
#include "core/factories.h"
#include "layout/shard_layout.h"

namespace dtensor {
namespace {

using Shape = std::vector<int64_t>;

int64_t mesh_size(const Shape& shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

std::string describe(const Shape& mesh_shape, const Shape& shape, const Placements& placements) {
  return "mesh " + c10::str(c10::IntArrayRef(mesh_shape)) + " shape " + c10::str(c10::IntArrayRef(shape)) +
         " " + to_string(placements);
}

// A random placement list (Shard or Replicate) for a tensor of `ndim` dims.
Placements random_placements(std::mt19937& rng, int mesh_ndim, int64_t ndim) {
  Placements out;
  for (int i = 0; i < mesh_ndim; ++i) {
    const int64_t pick = std::uniform_int_distribution<int64_t>(-1, ndim - 1)(rng);
    out.push_back(pick < 0 ? Replicate() : Shard(pick));
  }
  return out;
}

// One random factory call of a test program.
struct Call {
  bool normal = true;
  Shape shape;
  at::ScalarType dtype = at::kFloat;
};

at::Tensor single_device(const Call& call) {
  return call.normal ? torch::randn(call.shape, call.dtype) : torch::rand(call.shape, call.dtype);
}

DTensor distributed(const Call& call, const DeviceMesh& mesh, const Placements& placements,
                    const RandomOptions& options = {}) {
  return call.normal ? randn(call.shape, mesh, placements, call.dtype, options)
                     : rand(call.shape, mesh, placements, call.dtype, options);
}

// This rank's view of one DTensor: what the tests compare across ranks.
struct RankBlock {
  ShardLayout layout;
  at::Tensor local;
};

// Runs fn on every rank of a world shaped `mesh_shape` and returns each rank's
// blocks (fn returns the DTensors it made, in order).
std::vector<std::vector<RankBlock>> blocks_by_rank(
    const Shape& mesh_shape, const std::function<std::vector<DTensor>(const DeviceMesh&)>& fn) {
  std::vector<std::vector<RankBlock>> out(static_cast<size_t>(mesh_size(mesh_shape)));
  run_fake_world(mesh_size(mesh_shape), [&](World& world) {
    auto mesh = DeviceMesh::init(c10::kCPU, mesh_shape);
    std::vector<RankBlock> mine;
    for (const DTensor& d : fn(mesh)) {
      mine.push_back({local_shape_and_offset(d.sizes().vec(), mesh.mesh_shape(), d.placements(),
                                             mesh.get_coordinate()),
                      d.local_tensor().clone()});
    }
    out[static_cast<size_t>(world.rank())] = mine;  // each rank writes only its own slot
  });
  return out;
}

TEST(RandomTest, DefaultModeIsSingleDeviceExactAndGuardsRestore) {
  run_fake_world(2, [](World&) {
    EXPECT_EQ(random_mode(), RandomMode::kSingleDeviceExact);
    {
      RandomModeGuard guard(RandomMode::kOffsetBased);
      EXPECT_EQ(random_mode(), RandomMode::kOffsetBased);
    }
    EXPECT_EQ(random_mode(), RandomMode::kSingleDeviceExact);
    set_random_mode(RandomMode::kOffsetBased);
    EXPECT_EQ(random_mode(), RandomMode::kOffsetBased);
  });
  run_fake_world(1, [](World&) { EXPECT_EQ(random_mode(), RandomMode::kSingleDeviceExact); });
  EXPECT_STREQ(random_mode_name(RandomMode::kSingleDeviceExact), "single_device_exact");
  EXPECT_STREQ(random_mode_name(RandomMode::kOffsetBased), "offset_based");
}

TEST(RandomTest, ManualSeedSeedsThisRanksWorldGenerator) {
  EXPECT_THROW(manual_seed(1), c10::Error);
  run_fake_world(3, [](World& world) {
    manual_seed(42);
    EXPECT_EQ(initial_seed(), 42u);
    EXPECT_EQ(world.generator().current_seed(), 42u);
  });
}

// The example of the brief: uneven shapes on meshes (4), (2, 2) and (3).
TEST(RandomTest, ExactModeEqualsSingleDeviceRandnThenRand) {
  torch::manual_seed(7);
  const at::Tensor a = torch::randn({5, 3});
  const at::Tensor b = torch::rand({4});
  for (const Shape& mesh_shape : {Shape{4}, Shape{2, 2}, Shape{3}}) {
    SCOPED_TRACE(c10::str(c10::IntArrayRef(mesh_shape)));
    run_fake_world(mesh_size(mesh_shape), [&](World&) {
      auto mesh = DeviceMesh::init(c10::kCPU, mesh_shape);
      const Placements shard0(mesh_shape.size(), Shard(0));
      const Placements replicate(mesh_shape.size(), Replicate());
      manual_seed(7);
      DTensor da = randn({5, 3}, mesh, shard0);
      DTensor db = rand({4}, mesh, replicate);
      EXPECT_TRUE(torch::equal(da.full_tensor(), a));
      EXPECT_TRUE(torch::equal(db.full_tensor(), b));
      EXPECT_TRUE(torch::equal(db.local_tensor(), b));
    });
  }
}

// Property loop: random programs of rand/randn calls (shapes, dtypes,
// placements) on many meshes equal the single-device program bit for bit.
TEST(RandomTest, ExactModeMatchesSingleDeviceForManyMeshesPlacementsAndShapes) {
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(static_cast<std::mt19937::result_type>(seed));
  for (int program = 0; program < 6; ++program) {
    std::vector<Call> calls;
    for (int i = 0; i < 5; ++i) {
      Call call;
      call.normal = rng() % 2 == 0;
      const int ndim = static_cast<int>(rng() % 4);
      for (int d = 0; d < ndim; ++d) call.shape.push_back(static_cast<int64_t>(rng() % 9));
      if (rng() % 4 == 0 && !call.shape.empty()) call.shape[0] = 20 + rng() % 30;  // >= 16: vectorised path
      const at::ScalarType dtypes[] = {at::kFloat, at::kDouble, at::kFloat, at::kBFloat16};
      call.dtype = dtypes[rng() % 4];
      calls.push_back(call);
    }
    const uint64_t torch_seed = rng();
    torch::manual_seed(torch_seed);
    std::vector<at::Tensor> expected;
    for (const Call& call : calls) expected.push_back(single_device(call));
    for (const Shape& mesh_shape : {Shape{1}, Shape{2}, Shape{3}, Shape{4}, Shape{5}, Shape{2, 2},
                                    Shape{2, 3}, Shape{3, 2}, Shape{2, 1, 2}}) {
      const uint32_t placement_seed = static_cast<uint32_t>(rng());
      run_fake_world(mesh_size(mesh_shape), [&](World&) {
        auto mesh = DeviceMesh::init(c10::kCPU, mesh_shape);
        std::mt19937 same_on_every_rank(placement_seed);
        manual_seed(torch_seed);
        for (size_t i = 0; i < calls.size(); ++i) {
          const Placements placements = random_placements(
              same_on_every_rank, mesh.ndim(), static_cast<int64_t>(calls[i].shape.size()));
          SCOPED_TRACE("program " + std::to_string(program) + " call " + std::to_string(i) + " " +
                       describe(mesh_shape, calls[i].shape, placements) + " " +
                       c10::toString(calls[i].dtype) + (calls[i].normal ? " randn" : " rand"));
          DTensor d = distributed(calls[i], mesh, placements);
          EXPECT_EQ(d.scalar_type(), calls[i].dtype);
          EXPECT_TRUE(torch::equal(d.full_tensor(), expected[i]));
        }
      });
    }
  }
}

TEST(RandomTest, ExactModeSupportsComplexAndAnExplicitGenerator) {
  torch::manual_seed(3);
  const at::Tensor c = torch::randn({3, 4}, at::kComplexFloat);
  auto reference_gen = at::make_generator<at::CPUGeneratorImpl>(11);
  const at::Tensor r = at::randn({6, 2}, reference_gen, at::TensorOptions());
  run_fake_world(4, [&](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2, 2});
    manual_seed(3);
    DTensor dc = randn({3, 4}, mesh, {Shard(1), Shard(0)}, at::kComplexFloat);
    EXPECT_TRUE(torch::equal(dc.full_tensor(), c));
    RandomOptions options;
    options.generator = at::make_generator<at::CPUGeneratorImpl>(11);
    DTensor dr = randn({6, 2}, mesh, {Shard(0), Replicate()}, {}, options);
    EXPECT_TRUE(torch::equal(dr.full_tensor(), r));
  });
}

// Checks, over all ranks' blocks of one DTensor, that ranks holding the same
// block agree, that every block is its part of `full`, and (when
// `expect_distinct`) that different non-empty blocks differ.
void check_blocks(const std::vector<std::vector<RankBlock>>& by_rank, size_t index, const at::Tensor& full,
                  bool expect_distinct) {
  for (size_t r = 0; r < by_rank.size(); ++r) {
    const RankBlock& a = by_rank[r][index];
    at::Tensor expected = full;
    for (size_t d = 0; d < a.layout.local_shape.size(); ++d) {
      expected = expected.narrow(static_cast<int64_t>(d), a.layout.global_offset[d], a.layout.local_shape[d]);
    }
    EXPECT_TRUE(torch::equal(a.local, expected)) << "rank " << r;
    for (size_t s = 0; s < r; ++s) {
      const RankBlock& b = by_rank[s][index];
      if (a.layout == b.layout) {
        EXPECT_TRUE(torch::equal(a.local, b.local)) << "replicas " << s << " and " << r << " disagree";
      } else if (expect_distinct && a.local.numel() > 0 && b.local.numel() > 0 &&
                 a.local.sizes() == b.local.sizes()) {
        EXPECT_FALSE(torch::equal(a.local, b.local)) << "shards " << s << " and " << r << " are equal";
      }
    }
  }
}

TEST(RandomTest, ReplicasAgreeAndShardsDifferInBothModes) {
  for (RandomMode mode : {RandomMode::kSingleDeviceExact, RandomMode::kOffsetBased}) {
    for (const Placements& placements : {Placements{Replicate(), Shard(0)}, Placements{Shard(1), Replicate()},
                                         Placements{Shard(0), Shard(0)}, Placements{Shard(1), Shard(0)},
                                         Placements{Replicate(), Replicate()}}) {
      SCOPED_TRACE(std::string(random_mode_name(mode)) + " " + to_string(placements));
      std::vector<at::Tensor> fulls(4);
      auto by_rank = blocks_by_rank({2, 2}, [&](const DeviceMesh& mesh) {
        RandomModeGuard guard(mode);
        manual_seed(5);
        DTensor a = randn({8, 6}, mesh, placements);
        DTensor b = rand({5, 3}, mesh, placements, at::kDouble);
        at::Tensor fa = a.full_tensor();
        at::Tensor fb = b.full_tensor();
        if (mesh.global_rank() == 0) {
          fulls[0] = fa;
          fulls[1] = fb;
        }
        return std::vector<DTensor>{a, b};
      });
      check_blocks(by_rank, 0, fulls[0], /*expect_distinct=*/true);
      check_blocks(by_rank, 1, fulls[1], /*expect_distinct=*/true);
    }
  }
}

// Full tensor of one offset-mode program on a mesh.
std::vector<at::Tensor> offset_program(const Shape& mesh_shape, const std::vector<Placements>& placements,
                                       uint64_t seed) {
  std::vector<at::Tensor> out;
  std::mutex mutex;
  run_fake_world(mesh_size(mesh_shape), [&](World& world) {
    auto mesh = DeviceMesh::init(c10::kCPU, mesh_shape);
    manual_seed(seed);
    RandomOptions options;
    options.mode = RandomMode::kOffsetBased;
    std::vector<at::Tensor> mine = {
        randn({7, 5}, mesh, placements[0], {}, options).full_tensor(),
        rand({6, 1, 9}, mesh, placements[1], at::kDouble, options).full_tensor(),
        randn({11}, mesh, placements[2], at::kDouble, options).full_tensor(),
    };
    if (world.rank() == 0) {
      std::lock_guard<std::mutex> lock(mutex);
      out = mine;
    }
  });
  return out;
}

TEST(RandomTest, OffsetModeFullTensorIsIndependentOfMeshAndPlacementsButNotOfTheSeed) {
  const auto reference = offset_program({1}, {{Replicate()}, {Replicate()}, {Replicate()}}, 9);
  const std::vector<std::pair<Shape, std::vector<Placements>>> cases = {
      {{4}, {{Shard(0)}, {Shard(2)}, {Shard(0)}}},
      {{3}, {{Shard(1)}, {Replicate()}, {Shard(0)}}},
      {{2, 2}, {{Shard(1), Shard(0)}, {Shard(0), Shard(2)}, {Shard(0), Shard(0)}}},
      {{2, 3}, {{Replicate(), Shard(1)}, {Shard(2), Shard(2)}, {Shard(0), Replicate()}}},
      {{5}, {{Shard(0)}, {Shard(2)}, {Shard(0)}}},
  };
  for (const auto& [mesh_shape, placements] : cases) {
    SCOPED_TRACE(c10::str(c10::IntArrayRef(mesh_shape)));
    const auto got = offset_program(mesh_shape, placements, 9);
    ASSERT_EQ(got.size(), reference.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(torch::equal(got[i], reference[i])) << "call " << i;
  }
  // Deterministic across runs, different for another seed, different calls differ.
  const auto again = offset_program({1}, {{Replicate()}, {Replicate()}, {Replicate()}}, 9);
  for (size_t i = 0; i < again.size(); ++i) EXPECT_TRUE(torch::equal(again[i], reference[i]));
  const auto other = offset_program({1}, {{Replicate()}, {Replicate()}, {Replicate()}}, 10);
  EXPECT_FALSE(torch::equal(other[0], reference[0]));
  EXPECT_FALSE(torch::equal(reference[0].flatten().narrow(0, 0, 11), reference[2].to(at::kFloat)));
  // Not the single-device stream (that is kSingleDeviceExact's job).
  torch::manual_seed(9);
  EXPECT_FALSE(torch::equal(reference[0], torch::randn({7, 5})));
}

TEST(RandomTest, BothModesAreDeterministicAcrossRuns) {
  for (RandomMode mode : {RandomMode::kSingleDeviceExact, RandomMode::kOffsetBased}) {
    SCOPED_TRACE(random_mode_name(mode));
    std::vector<std::vector<at::Tensor>> runs(2);
    for (auto& run : runs) {
      std::mutex mutex;
      run_fake_world(4, [&](World& world) {
        auto mesh = DeviceMesh::init(c10::kCPU, {4});
        set_random_mode(mode);
        manual_seed(123);
        DTensor a = randn({9, 2}, mesh, {Shard(0)});
        DTensor b = randn({9, 2}, mesh, {Shard(0)});
        std::lock_guard<std::mutex> lock(mutex);
        if (world.rank() == 2) run = {a.local_tensor(), b.local_tensor()};
      });
    }
    EXPECT_TRUE(torch::equal(runs[0][0], runs[1][0]));
    EXPECT_TRUE(torch::equal(runs[0][1], runs[1][1]));
    EXPECT_FALSE(torch::equal(runs[0][0], runs[0][1])) << "consecutive calls must continue the stream";
  }
}

TEST(RandomTest, OffsetModeHasTheRightDistribution) {
  run_fake_world(4, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2, 2});
    RandomModeGuard guard(RandomMode::kOffsetBased);
    manual_seed(0);
    for (at::ScalarType dtype : {at::kFloat, at::kDouble, at::kHalf, at::kBFloat16}) {
      SCOPED_TRACE(c10::toString(dtype));
      at::Tensor n = randn({400, 250}, mesh, {Shard(0), Shard(1)}, dtype).full_tensor().to(at::kDouble);
      EXPECT_NEAR(n.mean().item<double>(), 0.0, 0.02);
      EXPECT_NEAR(n.std().item<double>(), 1.0, 0.02);
      at::Tensor u = rand({400, 250}, mesh, {Shard(1), Replicate()}, dtype).full_tensor().to(at::kDouble);
      EXPECT_GE(u.min().item<double>(), 0.0);
      EXPECT_LT(u.max().item<double>(), 1.0);
      EXPECT_NEAR(u.mean().item<double>(), 0.5, 0.01);
    }
  });
}

TEST(RandomTest, UnsupportedDtypesAreRefusedNamingTheOp) {
  run_fake_world(2, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    try {
      randn({4}, mesh, {Shard(0)}, at::kLong);
      ADD_FAILURE() << "randn of int64 should throw";
    } catch (const c10::Error& e) {
      EXPECT_NE(std::string(e.what()).find("dtensor::randn"), std::string::npos) << e.what();
    }
    RandomOptions offset;
    offset.mode = RandomMode::kOffsetBased;
    try {
      rand({4}, mesh, {Shard(0)}, at::kComplexFloat, offset);
      ADD_FAILURE() << "offset-based complex rand should throw";
    } catch (const c10::Error& e) {
      EXPECT_NE(std::string(e.what()).find("kSingleDeviceExact"), std::string::npos) << e.what();
    }
  });
}

TEST(RandomTest, RequiresGradGivesARandomLeaf) {
  run_fake_world(2, [](World&) {
    auto mesh = DeviceMesh::init(c10::kCPU, {2});
    DTensor w = randn({4, 3}, mesh, {Shard(0)}, at::TensorOptions().requires_grad(true));
    EXPECT_TRUE(w.requires_grad());
    EXPECT_TRUE(w.is_leaf());
    EXPECT_FALSE(w.local_tensor().requires_grad());
  });
}

TEST(RandomTest, MetaMeshDrawsNothing) {
  torch::manual_seed(4);
  const at::Tensor first = torch::randn({6});
  run_fake_world(2, [&](World&) {
    manual_seed(4);
    auto meta = DeviceMesh::init(c10::kMeta, {2});
    DTensor m = randn({1 << 20, 1 << 10}, meta, {Shard(0)});
    EXPECT_TRUE(m.local_tensor().is_meta());
    EXPECT_EQ(m.local_tensor().sizes().vec(), (Shape{1 << 19, 1 << 10}));
    // The in-place fills too (a replicated one would otherwise draw 2^30 values).
    DTensor w = DTensor::from_local(at::empty({1 << 20, 1 << 10}, at::TensorOptions().device(c10::kMeta)), meta,
                                    {Replicate()});
    w.uniform_(-1, 1);
    w.normal_(0, 1);
    auto cpu = DeviceMesh::init(c10::kCPU, {2});
    EXPECT_TRUE(torch::equal(randn({6}, cpu, {Shard(0)}).full_tensor(), first));
  });
}

// Offset mode generates the local block only, so a solo rank of a huge world
// holds exactly its part of the small-world tensor, without collectives.
TEST(RandomTest, OffsetModeInASoloWorldGivesThisRanksBlockOfTheSameTensor) {
  const auto reference = offset_program({1}, {{Replicate()}, {Replicate()}, {Replicate()}}, 9);
  SoloOptions options;
  options.error_on_collective = true;
  for (int64_t rank : {0, 2, 5, 7}) {
    run_solo_world(
        8, rank,
        [&](World&) {
          RandomModeGuard guard(RandomMode::kOffsetBased);
          auto mesh = DeviceMesh::init(c10::kCPU, {2, 4});
          manual_seed(9);
          DTensor a = randn({7, 5}, mesh, {Shard(1), Shard(0)});
          const ShardLayout layout =
              local_shape_and_offset({7, 5}, mesh.mesh_shape(), a.placements(), rank);
          const at::Tensor expected =
              reference[0]
                  .narrow(0, layout.global_offset[0], layout.local_shape[0])
                  .narrow(1, layout.global_offset[1], layout.local_shape[1]);
          EXPECT_TRUE(torch::equal(a.local_tensor(), expected)) << "rank " << rank;
        },
        options);
  }
  run_solo_world(
      1 << 20, 4321,
      [](World&) {
        RandomModeGuard guard(RandomMode::kOffsetBased);
        auto mesh = DeviceMesh::init(c10::kCPU, {1 << 20});
        DTensor big = randn({int64_t{1} << 34}, mesh, {Shard(0)});  // 64 GiB global, 64 KiB local
        EXPECT_EQ(big.local_tensor().numel(), 1 << 14);
        EXPECT_TRUE(big.local_tensor().isfinite().all().item<bool>());
      },
      options);
}

}  // namespace
}  // namespace dtensor
