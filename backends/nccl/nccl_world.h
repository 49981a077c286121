// A World on NCCL: one process per GPU, one ncclComm per group, the unique
// ids exchanged through the job's TCPStore. Started by a launcher:
//   auto world = dtensor::nccl_world(dtensor::launch_env_from_environment());
//   at::Tensor t = at::ones({4}, at::TensorOptions().device(world->device()));
//   world->world_group()->all_reduce(t);   // ordered on the current CUDA stream
#pragma once

#include <chrono>
#include <memory>

#include "backends/launch/env.h"
#include "backends/world.h"

namespace dtensor {

/// How an NCCL world starts.
struct NcclWorldOptions {
  /// Bounds barrier(); NCCL kernels themselves have no timeout (see Note
  /// [NCCL stream ordering]).
  std::chrono::milliseconds timeout = std::chrono::minutes(10);
  /// Bounds connecting to the store at start-up and each store operation
  /// (the NCCL id exchange of a new group).
  std::chrono::milliseconds connect_timeout = std::chrono::minutes(5);
  /// This rank's GPU; -1 means LOCAL_RANK.
  int device_index = -1;
  /// See Note [Exit rendezvous] in backends/launch/store.h.
  std::chrono::milliseconds exit_wait = std::chrono::seconds(10);
};

/// Connects this process to the job described by `env`: selects its GPU,
/// connects the store (rank 0 serves it). Groups are created on demand by
/// their members: group rank 0 calls ncclGetUniqueId and publishes the id in
/// the store under a key named after the group's ranks; every member then
/// calls ncclCommInitRank. world->device() is cuda:<device index>. Throws
/// c10::Error when no GPU is visible, the index is out of range, or the store
/// cannot be reached.
std::shared_ptr<World> nccl_world(const LaunchEnv& env, const NcclWorldOptions& options = {});

}  // namespace dtensor
