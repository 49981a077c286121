// Solo mode: one rank's view of a world of any size. Collectives check their
// arguments, report their events and return correctly shaped results without
// exchanging data; with meta tensors they touch no memory at all.
//   auto world = dtensor::solo_world(/*world_size=*/4096, /*rank=*/17);
//   dtensor::run_solo_world(4096, 17, [](dtensor::World& w) { /* trace a model */ });
#pragma once

#include <c10/core/Device.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>

#include "backends/world.h"

namespace dtensor {

/// Options of solo_world.
struct SoloOptions {
  /// Every collective throws (after its event was reported), naming itself:
  /// for code paths that must not communicate.
  bool error_on_collective = false;
  /// World::device(); use c10::kMeta for shape-only runs that allocate nothing.
  c10::Device device = c10::kCPU;
  /// World::timeout(); solo collectives never wait.
  std::chrono::milliseconds timeout{30000};
  /// Simulated memory of this rank in bytes (0 = no cap), meta tensors
  /// included: an allocation past it throws, naming the rank and the bytes.
  /// World::memory_stats() reports this rank's bytes with or without a cap.
  int64_t memory_cap_bytes = 0;
};

/// A World of `world_size` ranks seen from `rank` (backend kSolo). Its
/// collectives leave deterministic placeholder contents, as if every rank
/// held this rank's data where that is well defined:
/// - all_reduce, broadcast: the tensor is left unchanged;
/// - all_gather_into_tensor: every block of the output is a copy of the input;
/// - reduce_scatter_tensor: the output is this rank's block of the input;
/// - all_to_all_single: output block j is input block j when both have the
///   same number of rows (always so for j == rank in a consistent program),
///   zeros otherwise;
/// - scatter: the root's output is inputs[root's group rank]; other ranks'
///   outputs are zeros;
/// - barrier: returns at once.
/// Tensors on the meta device are not touched at all (no allocation, no copy).
/// Preconditions: world_size >= 1, 0 <= rank < world_size. Example:
///   auto w = solo_world(65536, 3, {/*error_on_collective=*/false, c10::kMeta});
std::shared_ptr<World> solo_world(int64_t world_size, int64_t rank,
                                  const SoloOptions& options = {});

/// Creates solo_world(world_size, rank, options), makes it the calling
/// thread's current world while fn(world) runs, and returns when fn returns.
void run_solo_world(int64_t world_size, int64_t rank, const std::function<void(World&)>& fn,
                    const SoloOptions& options = {});

}  // namespace dtensor
