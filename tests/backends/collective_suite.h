// A reusable suite of collective checks for any backend: every rank builds
// every member's deterministic input, computes the serial reference locally
// and compares it with what the collective produced (gtest EXPECT/ASSERT).
//   dtensor::run_fake_world(4, [](dtensor::World& w) { dtensor::testing::check_all_collectives(w);
//   });
//   // Gloo/NCCL, in each process: check_all_collectives(*world, {/*bit_exact=*/false});
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <vector>

#include "backends/communicator.h"
#include "layout/reduce_op.h"
#include "backends/world.h"

namespace dtensor {
namespace testing {

/// What the suite covers and how it compares.
struct CollectiveSuiteOptions {
  /// true: inputs whose reductions round differently in different orders,
  /// compared bitwise with the serial reference ((x0 op x1) op x2 ...): for
  /// backends that promise a fixed order (fake). false: inputs whose sums,
  /// maxima and products are exact in any order, compared with a dtype-scaled
  /// tolerance: for backends with their own order (Gloo rings, NCCL).
  bool bit_exact = true;
  /// Dtypes of reductions and copies; kAvg is skipped for integer dtypes.
  std::vector<c10::ScalarType> dtypes = {c10::kFloat, c10::kDouble, c10::kInt, c10::kLong,
                                         c10::kBFloat16};
  std::vector<ReduceOp> reduce_ops = {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax,
                                      ReduceOp::kMin, ReduceOp::kProduct};
  /// Also run on the groups of suite_partitions (fine checks ignore it).
  bool sub_groups = true;
  /// Include tensors larger than a backend's small-message path (~100 KiB).
  bool large = true;
  /// Device of the tensors; check_all_collectives uses world.device().
  c10::Device device = c10::kCPU;
  /// Mixed into every input, so two runs can differ on purpose.
  uint64_t seed = 0;
};

/// Group rank `member`'s input (global rank `global_rank`), identical on every
/// rank that computes it. `salt` tells apart the inputs of one check; with
/// `for_product`, magnitudes stay near 1 so that products of 8 ranks neither
/// overflow nor vanish. Always a CPU tensor.
at::Tensor suite_input(int64_t global_rank, at::IntArrayRef shape, c10::ScalarType dtype,
                       uint64_t salt, bool for_product, const CollectiveSuiteOptions& options);

/// Serial reference: ((inputs[0] op inputs[1]) op inputs[2]) ..., kAvg then
/// divided by inputs.size(). CPU tensors of one shape and dtype.
at::Tensor serial_reduce(const std::vector<at::Tensor>& inputs, ReduceOp op);

/// Partitions of [0, world_size) used for sub-group checks: reversed world
/// order, evens/odds, halves, pairs, singletons. Each rank joins, partition by
/// partition, the one group containing it, so groups of one partition run
/// concurrently and no two ranks order their groups differently.
std::vector<std::vector<std::vector<int64_t>>> suite_partitions(int64_t world_size);

// Fine checks: every member of `comm` calls the same one with equal options.
void check_all_reduce(Communicator& comm, const CollectiveSuiteOptions& options);
void check_all_gather_into_tensor(Communicator& comm, const CollectiveSuiteOptions& options);
void check_reduce_scatter_tensor(Communicator& comm, const CollectiveSuiteOptions& options);
/// Even splits, and uneven ones where rank i sends (i + 2 j) % 3 rows to rank j.
void check_all_to_all_single(Communicator& comm, const CollectiveSuiteOptions& options);
/// Every group rank as root.
void check_broadcast(Communicator& comm, const CollectiveSuiteOptions& options);
void check_scatter(Communicator& comm, const CollectiveSuiteOptions& options);
void check_barrier(Communicator& comm, const CollectiveSuiteOptions& options);
/// async_op = true on every collective: wait() succeeds, is_completed() after
/// wait(), results correct.
void check_async(Communicator& comm, const CollectiveSuiteOptions& options);
/// all_gather whose input is its own block of the output, reduce_scatter whose
/// output is its own block of the input.
void check_in_place(Communicator& comm, const CollectiveSuiteOptions& options);

/// Every fine check above on `comm`.
void check_collectives(Communicator& comm, const CollectiveSuiteOptions& options);

/// check_collectives on world.world_group(), then (options.sub_groups) on the
/// groups of suite_partitions(world.size()) without the large tensors. Every
/// rank of the world calls it.
void check_all_collectives(World& world, CollectiveSuiteOptions options = {});

}  // namespace testing
}  // namespace dtensor
