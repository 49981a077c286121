// Property test of _StridedShard on the fake world: for random meshes (up to
// 3-D), uneven shapes and placement pairs in which _S(d, sf) (sf 1..4) meets
// Shard, Replicate and Partial(sum) on either side, redistributing gives every
// rank exactly its piece of the full tensor (the spans layout/ computes, cut
// from the full tensor here, not by the executor), Partial targets reassemble
// it, and full_tensor() of the source and of the result equals it.
// Values are integers times 840^k in float64: every reduction is exact.
// Replay with DTENSOR_TEST_SEED=<seed>.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "backends/fake/fake_world.h"
#include "core/device_mesh.h"
#include "core/dtensor.h"
#include "layout/shard_layout.h"
#include "tests/core/test_util.h"
#include "tests/reliability/property_util.h"

namespace dtensor::reliability {
namespace {

// Like random_placements, with a _StridedShard now and then, and Partial(sum)
// only where `partial` allows it. One time in four on a mesh of 2+ dims, FSDP
// over TP's layout: _S(d, sf) on a mesh dim and S(d) on every later one, sf
// the product of their sizes (Note [Strided shards that split last]).
Placements random_strided_placements(PropertyRng& rng, const MeshShape& mesh, int64_t ndim, bool partial) {
  Placements out;
  for (int i = 0; i < mesh.ndim(); ++i) {
    const int64_t pick = uniform(rng, 0, 9);
    if (ndim == 0 || pick < 2) {
      out.push_back(Replicate());
    } else if (pick < 5) {
      out.push_back(Shard(uniform(rng, 0, ndim - 1)));
    } else if (pick < 9 || !partial) {
      out.push_back(StridedShard(uniform(rng, 0, ndim - 1), uniform(rng, 1, 4)));
    } else {
      out.push_back(Partial());
    }
  }
  if (ndim > 0 && mesh.ndim() >= 2 && uniform(rng, 0, 3) == 0) {
    const auto i = static_cast<int>(uniform(rng, 0, mesh.ndim() - 2));
    const int64_t d = uniform(rng, 0, ndim - 1);
    int64_t later = 1;
    for (int j = i + 1; j < mesh.ndim(); ++j) {
      out[static_cast<size_t>(j)] = Shard(d);
      later *= mesh.size(j);
    }
    out[static_cast<size_t>(i)] = StridedShard(d, later);
  }
  return out;
}

// True when some mesh dim holds a _StridedShard that splits last.
bool splits_last(const std::vector<int64_t>& shape, const MeshShape& mesh, const Placements& placements) {
  for (int i = 0; i < mesh.ndim(); ++i) {
    if (strided_shard_splits_last(shape, mesh, placements, i)) return true;
  }
  return false;
}

// This rank's values of a P(sum) source: the block on coordinate 0 of every
// Partial mesh dim, zeros elsewhere.
at::Tensor partial_sum_local(const at::Tensor& block, const Placements& placements, const DeviceMesh& mesh) {
  for (int i = 0; i < mesh.ndim(); ++i) {
    if (placements[static_cast<size_t>(i)].is_partial() && mesh.get_local_rank(i) != 0) return at::zeros_like(block);
  }
  return block.clone();
}

struct Tally {
  int cases = 0;
  int strided_sources = 0;
  int strided_targets = 0;
  int partial_targets = 0;
  int split_last = 0;  // a source or target whose _StridedShard splits last
};

void run_case(PropertyRng& rng, const DeviceMesh& mesh, Tally& tally, const std::string& where) {
  const MeshShape& mesh_shape = mesh.mesh_shape();
  const std::vector<int64_t> shape = random_shape(rng, /*max_ndim=*/3, /*max_extent=*/11);
  const auto ndim = static_cast<int64_t>(shape.size());
  const Placements from = random_strided_placements(rng, mesh_shape, ndim, /*partial=*/true);
  const Placements to = random_strided_placements(rng, mesh_shape, ndim, /*partial=*/true);
  std::vector<double> values(static_cast<size_t>(shape_numel(shape)));
  const double scale = std::pow(840.0, mesh_shape.ndim());
  for (auto& v : values) v = static_cast<double>(uniform(rng, -8, 8)) * scale;
  const std::string what = where + " rank " + std::to_string(mesh.global_rank()) + ": " + to_string(from) +
                           " -> " + to_string(to) + ", shape " + shape_string(shape) + " on " +
                           mesh_shape.to_string();
  auto fail = [&](const std::string& why) { throw std::runtime_error(what + ": " + why); };

  const at::Tensor full = at::tensor(values, at::kDouble).reshape(shape);
  FromLocalOptions options;
  options.shape = shape;
  const DTensorSpec source_spec =
      DTensor::from_local(at::zeros(local_shape(shape, mesh_shape, from, mesh.get_coordinate()), at::kDouble),
                          mesh, from, options).spec();
  const at::Tensor block = testing::expected_local(full, source_spec);
  const DTensor source = DTensor::from_local(partial_sum_local(block, from, mesh), mesh, from, options);
  ++tally.cases;
  tally.strided_sources += has_strided_shard(from) ? 1 : 0;
  tally.strided_targets += has_strided_shard(to) ? 1 : 0;
  tally.split_last += splits_last(shape, mesh_shape, from) || splits_last(shape, mesh_shape, to) ? 1 : 0;
  if (!at::equal(source.full_tensor(), full)) fail("full_tensor() of the source differs from the tensor");
  const DTensor out = testing::redistribute_or_internal(source, to);
  if (out.placements() != to) fail("result placements are " + to_string(out.placements()));
  const at::Tensor got = out.local_tensor();
  bool partial = false;
  for (const Placement& p : to) partial = partial || p.is_partial();
  if (partial) {
    ++tally.partial_targets;
  } else {
    const at::Tensor want = testing::expected_local(full, out.spec());
    if (got.sizes() != want.sizes()) {
      fail("local shape " + shape_string(got.sizes().vec()) + ", want " + shape_string(want.sizes().vec()));
    }
    if (!at::equal(got, want)) fail("local values differ");
  }
  if (!at::equal(out.full_tensor(), full)) fail("full_tensor() of the result differs from the tensor");
}

class StridedShardPropertyTest : public ::testing::TestWithParam<std::vector<int64_t>> {};

TEST_P(StridedShardPropertyTest, RedistributesToAndFromEveryPlacementExactly) {
  const std::vector<int64_t> mesh_shape = GetParam();
  int64_t world_size = 1;
  for (int64_t s : mesh_shape) world_size *= s;
  uint64_t seed = testing::test_seed(kPropertySeed);
  for (int64_t s : mesh_shape) seed = seed * 10 + static_cast<uint64_t>(s);  // a stream per mesh
  const int cases = 80;
  std::vector<Tally> tallies(static_cast<size_t>(world_size));
  try {
    run_fake_world(world_size, [&](World& world) {
      PropertyRng rng(seed);  // the same stream on every rank: the same cases
      const DeviceMesh mesh = DeviceMesh::init(c10::kCPU, mesh_shape);
      for (int c = 0; c < cases; ++c) {
        run_case(rng, mesh, tallies[static_cast<size_t>(world.rank())],
                 "seed " + std::to_string(seed) + " case " + std::to_string(c));
      }
    });
  } catch (const c10::Error& e) {
    FAIL() << e.what_without_backtrace();
  }
  const Tally& t = tallies[0];
  std::printf("strided property: mesh %s, seed %llu: %d cases, %d strided sources, %d strided targets, "
              "%d Partial targets, %d splitting last\n",
              shape_string(mesh_shape).c_str(), static_cast<unsigned long long>(seed), t.cases,
              t.strided_sources, t.strided_targets, t.partial_targets, t.split_last);
  EXPECT_EQ(t.cases, cases);
  EXPECT_GT(t.strided_sources, cases / 5);  // the property is about them
  EXPECT_GT(t.strided_targets, cases / 5);
  if (mesh_shape.size() >= 2) {
    EXPECT_GT(t.split_last, cases / 10);
  }
}

INSTANTIATE_TEST_SUITE_P(Meshes, StridedShardPropertyTest,
                         ::testing::Values(std::vector<int64_t>{2}, std::vector<int64_t>{3},
                                           std::vector<int64_t>{4}, std::vector<int64_t>{2, 2},
                                           std::vector<int64_t>{2, 3}, std::vector<int64_t>{3, 2},
                                           std::vector<int64_t>{2, 2, 2}),
                         [](const auto& info) {
                           std::string name = "mesh";
                           for (int64_t s : info.param) name += "_" + std::to_string(s);
                           return name;
                         });

}  // namespace
}  // namespace dtensor::reliability
