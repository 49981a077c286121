// Random generators shared by the reliability property tests: meshes up to
// 4-D (sizes up to 8), tensor shapes with 0 and sizes below the mesh size,
// and placement lists (optionally with invalid shard dims).
//   PropertyRng rng(testing::test_seed(kPropertySeed));
//   MeshShape mesh = random_mesh(rng, /*max_ndim=*/4, /*max_size=*/8);
#pragma once

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "layout/reduce_op.h"
#include "layout/mesh_shape.h"
#include "layout/placement.h"
#include "testing/seed.h"

namespace dtensor::reliability {

using PropertyRng = std::mt19937_64;

// The property tests' seed unless $DTENSOR_TEST_SEED replays another
// (testing::test_seed); they print it in every failure message.
inline constexpr uint64_t kPropertySeed = 20240611;

// Uniform integer in [lo, hi].
inline int64_t uniform(PropertyRng& rng, int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}

inline bool coin(PropertyRng& rng, double p) { return std::bernoulli_distribution(p)(rng); }

// A mesh of 1..max_ndim dims with sizes in [1, max_size].
inline MeshShape random_mesh(PropertyRng& rng, int max_ndim, int64_t max_size) {
  std::vector<int64_t> shape(static_cast<size_t>(uniform(rng, 1, max_ndim)));
  for (auto& s : shape) s = uniform(rng, 1, max_size);
  return MeshShape::create(shape);
}

// A mesh of up to max_ndim dims whose sizes multiply to `num_ranks` (size-1
// dims included now and then).
inline MeshShape random_mesh_of(PropertyRng& rng, int64_t num_ranks, int max_ndim) {
  const int ndim = static_cast<int>(uniform(rng, 1, max_ndim));
  std::vector<int64_t> shape(static_cast<size_t>(ndim), 1);
  int64_t left = num_ranks;
  for (int i = 0; i + 1 < ndim; ++i) {
    std::vector<int64_t> divisors;
    for (int64_t d = 1; d <= left; ++d) {
      if (left % d == 0) divisors.push_back(d);
    }
    shape[static_cast<size_t>(i)] = divisors[static_cast<size_t>(
        uniform(rng, 0, static_cast<int64_t>(divisors.size()) - 1))];
    left /= shape[static_cast<size_t>(i)];
  }
  shape.back() = left;
  std::shuffle(shape.begin(), shape.end(), rng);
  return MeshShape::create(shape);
}

// A tensor shape of 0..max_ndim dims with extents in [0, max_extent]; small
// extents (0, 1, below the mesh size) are drawn more often than uniform.
inline std::vector<int64_t> random_shape(PropertyRng& rng, int max_ndim, int64_t max_extent) {
  std::vector<int64_t> shape(static_cast<size_t>(uniform(rng, 0, max_ndim)));
  for (auto& s : shape) s = coin(rng, 0.3) ? uniform(rng, 0, 2) : uniform(rng, 0, max_extent);
  return shape;
}

inline ReduceOp random_reduce_op(PropertyRng& rng) {
  static const ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax, ReduceOp::kMin,
                                  ReduceOp::kProduct};
  return kOps[uniform(rng, 0, 4)];
}

// One placement per mesh dim for a tensor of `tensor_ndim` dims. Shard dims
// may be negative (valid Python-style); with `allow_invalid` a shard dim is
// now and then out of range. `partial_ops` lists the Partial ops to draw from
// (none: no Partial).
inline Placements random_placements(PropertyRng& rng, const MeshShape& mesh, int64_t tensor_ndim,
                                    const std::vector<ReduceOp>& partial_ops, bool allow_invalid) {
  Placements out;
  for (int i = 0; i < mesh.ndim(); ++i) {
    const int64_t pick = uniform(rng, 0, 9);
    if (pick < 3 || (pick >= 6 && partial_ops.empty()) || (pick < 6 && tensor_ndim == 0)) {
      out.push_back(Replicate());
    } else if (pick < 6) {
      int64_t dim = uniform(rng, 0, tensor_ndim - 1);
      if (coin(rng, 0.2)) dim -= tensor_ndim;  // the negative spelling
      if (allow_invalid && coin(rng, 0.05)) dim = coin(rng, 0.5) ? tensor_ndim : -tensor_ndim - 1;
      out.push_back(Shard(dim));
    } else {
      out.push_back(Partial(partial_ops[static_cast<size_t>(
          uniform(rng, 0, static_cast<int64_t>(partial_ops.size()) - 1))]));
    }
  }
  return out;
}

// Whether plan_redistribute must refuse normalized `from` -> `to` (See Note
// [Redistribute step legality]): on a mesh dim of size > 1, a Partial target
// that differs from the source is refused when it is a P(product), or P(sum)
// would be created from R (or from a Partial, through R) while another mesh
// dim keeps a P(product).
inline bool must_refuse(const MeshShape& mesh, const Placements& from, const Placements& to) {
  for (int i = 0; i < mesh.ndim(); ++i) {
    const Placement& a = from[static_cast<size_t>(i)];
    const Placement& b = to[static_cast<size_t>(i)];
    if (a == b || mesh.size(i) == 1 || !b.is_partial()) continue;
    // R -> P(sum|avg|max|min) are local; P(a) -> P(b) goes through R.
    if (b.reduce_op() == ReduceOp::kProduct) return true;
    // Note [No P(sum) under a pending P(product)]: P(sum) cannot be created
    // from R while another mesh dim keeps a P(product) (from S it is a zero-fill).
    if (a.is_shard()) continue;
    for (int j = 0; j < mesh.ndim(); ++j) {
      const Placement& kept = to[static_cast<size_t>(j)];
      if (j != i && mesh.size(j) > 1 && b.reduce_op() == ReduceOp::kSum && kept.is_partial() &&
          kept.reduce_op() == ReduceOp::kProduct) {
        return true;
      }
    }
  }
  return false;
}

inline std::string shape_string(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

}  // namespace dtensor::reliability
