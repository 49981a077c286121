// The fake world: N ranks as N threads of this process, each with its own
// World, generator and current world; collectives move real data in memory.
//   dtensor::run_fake_world(4, [](dtensor::World& world) {
//     auto t = at::full({2}, world.rank());
//     world.world_group()->all_reduce(t);  // every rank: 0 + 1 + 2 + 3
//   });
#pragma once

#include <c10/core/Device.h>

#include <chrono>
#include <cstdint>
#include <functional>

#include "backends/fake/world_status.h"
#include "backends/world.h"

namespace dtensor {

/// Options of run_fake_world.
struct FakeWorldOptions {
  /// Default timeout of every collective that does not set its own. A rank
  /// that waits longer fails with an error naming the ranks that never came.
  std::chrono::milliseconds timeout{30000};
  /// The device of every rank (World::device()). CPU here; see Note [CUDA
  /// ranks] in fake_world.cc for GPUs.
  c10::Device device = c10::kCPU;
  /// Every rank's World::generator() starts from this seed.
  uint64_t seed = 0;
  /// Simulated memory per rank, in bytes (0 = no cap): an allocation that
  /// would take a rank's live bytes past it throws on that rank, naming the
  /// rank, the bytes and the cap, and the world fails as for any rank error.
  /// World::memory_stats() reports every rank's bytes with or without a cap.
  int64_t memory_cap_bytes = 0;
};

/// Runs fn(world) on `world_size` rank threads, each with its own World
/// (backend kFake, rank 0..world_size-1) set as that thread's current world,
/// and returns when all of them returned.
///
/// Failures: when a rank throws, the world is aborted: collectives that other
/// ranks are waiting in, and any they issue later, throw PeerFailureError
/// naming the failing rank, so nobody hangs (a rank busy outside collectives
/// is not interrupted). Once every thread ended, the first root failure is
/// rethrown as a c10::Error whose message is "[rank N] " + the original
/// message (PeerFailureErrors are reported only when nothing else failed).
///
/// Collectives (see FakeCommunicator): synchronous, also with async_op; the
/// members of a group must issue the same collectives in the same order, else
/// the mismatch or the missing rank is reported with what each rank issued.
/// Tensors must have data (not meta) and belong to one rank each: a tensor
/// shared by several rank threads is a data race, as it could not exist in a
/// multi-process job.
/// Reductions run in fixed group-rank order: results are bit-identical to a
/// serial reference and from run to run. kAvg = sum, then divide by the group size.
///
/// Preconditions: world_size >= 1, options.timeout > 0. Example:
///   run_fake_world(8, [](World& w) { ... }, {/*timeout=*/std::chrono::milliseconds(500)});
void run_fake_world(int64_t world_size, const std::function<void(World&)>& fn,
                    const FakeWorldOptions& options = {});

}  // namespace dtensor
