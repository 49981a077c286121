// The op-by-op harness: runs one function of tensors on DTensors under every
// placement of every input (1-D mesh of 4, a sample on a 2x2 mesh) and checks
// the outputs (full_tensor) and the input gradients against the single-device
// run; optionally checks the collectives issued for given placements.
//   OpCase c{"softmax", {Input::floats({8, 6})}, [](const Tensors& x) { return Tensors{x[0].softmax(1)}; }};
//   check_all_placements(c);                                    // property loop, seed printed
//   EXPECT_EQ(comm_counts(c, {4}, {{Shard(1)}}).forward, (Counts{{"all_gather_into_tensor", 1}}));
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "backends/world.h"
#include "core/dtensor.h"
#include "testing/collective_counter.h"
#include "testing/placements.h"

namespace dtensor::testing {

using Tensors = std::vector<at::Tensor>;

/// How to make one input of a case.
struct Input {
  enum class Kind { kFloat, kIndex, kBool };
  explicit Input(std::vector<int64_t> s, Kind k = Kind::kFloat) : shape(std::move(s)), kind(k) {}

  std::vector<int64_t> shape;
  Kind kind = Kind::kFloat;
  int64_t high = 0;               // kIndex: values in [0, high)
  bool requires_grad = true;      // kFloat only
  bool partial = true;            // also try Partial(sum) (kFloat only)
  std::vector<Placements> only = {};  // when set: the 1-D placements to try (default: all)
  /// Replaces the random values (e.g. a positive tensor for log/sqrt).
  std::function<at::Tensor(const at::Tensor&)> transform = nullptr;

  static Input floats(std::vector<int64_t> shape) { return Input(std::move(shape)); }
  static Input indices(std::vector<int64_t> shape, int64_t high) {
    Input in(std::move(shape), Kind::kIndex);
    in.high = high;
    in.requires_grad = false;
    in.partial = false;
    return in;
  }
  Input& no_grad() { requires_grad = false; return *this; }
  Input& no_partial() { partial = false; return *this; }
  Input& replicate_only() { only = {{Replicate()}}; return *this; }
  Input& with(std::function<at::Tensor(const at::Tensor&)> f) { transform = std::move(f); return *this; }
};

struct OpCase {
  OpCase(std::string n, std::vector<Input> in, std::function<Tensors(const Tensors&)> f)
      : name(std::move(n)), inputs(std::move(in)), fn(std::move(f)) {}
  std::string name;
  std::vector<Input> inputs;
  std::function<Tensors(const Tensors&)> fn;
  double rtol = 1e-7;
  double atol = 1e-9;
  bool check_grads = true;
  /// Skip placements whose shards differ in size between ranks (6 rows over
  /// 4 ranks: 2, 2, 2, 0), for ops documented to need even shards.
  bool even_shards_only = false;
  OpCase& tolerance(double r, double a) { rtol = r; atol = a; return *this; }
  OpCase& no_grads() { check_grads = false; return *this; }
  OpCase& even_shards() { even_shards_only = true; return *this; }
};

/// True when the ranks of `mesh_shape` hold blocks of different sizes of a
/// tensor of `shape` under `placements` (e.g. 6 rows over 4 ranks: 2, 2, 2, 0).
bool has_uneven_shard(const std::vector<int64_t>& shape, const std::vector<int64_t>& mesh_shape,
                     const Placements& placements);

/// Global inputs of a case, reproducible from `seed` (float64).
Tensors make_inputs(const OpCase& c, uint64_t seed);

/// The placements each input tries on a mesh of `mesh_ndim` dims.
std::vector<Placements> input_placements(const Input& in, int mesh_ndim);

/// Runs `c` on `mesh_shape` with `placements` (one list per input) and checks
/// outputs and gradients against the single-device run of the same inputs.
/// Failures are reported with the case, placements and seed.
void check_placements(const OpCase& c, const std::vector<int64_t>& mesh_shape,
                      const std::vector<Placements>& placements, uint64_t seed);

/// Every combination of input placements on a 1-D mesh of 4 (at most
/// `max_combos`, sampled with the seed), then `samples_2d` combinations on a
/// 2x2 mesh. The seed is $DTENSOR_TEST_SEED or the clock, and is printed.
void check_all_placements(const OpCase& c, int max_combos = 200, int samples_2d = 12);

/// Collectives this rank (rank 0) issued in the forward (the function) and
/// in the backward (the cotangent-weighted sum's backward).
struct CommCounts {
  Counts forward;
  Counts backward;
  std::vector<Placements> outputs;  // placements of the DTensor outputs
};
CommCounts comm_counts(const OpCase& c, const std::vector<int64_t>& mesh_shape,
                       const std::vector<Placements>& placements, uint64_t seed = 1);

/// "[S(0)], [R]".
std::string describe(const std::vector<Placements>& placements);

}  // namespace dtensor::testing
