// The entry point of multi-process programs: a real world from the launcher's
// environment, for the gloo (CPU) or nccl (one GPU per process) backend.
//   auto world = dtensor::init_world_from_env(dtensor::BackendKind::kGloo);
//   dtensor::ScopedCurrentWorld scope(*world);   // DeviceMesh::init picks it up
// Launch: torchrun --no_python --nproc_per_node 4 ./binary, or dtensor-launch.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "backends/world.h"

namespace dtensor {

/// Options common to the real backends; defaults suit most jobs.
struct InitOptions {
  /// Default collective timeout (gloo: also connecting a group's pairs).
  std::chrono::milliseconds timeout = std::chrono::minutes(10);
  /// Bounds connecting to the job's store at start-up and store operations.
  std::chrono::milliseconds connect_timeout = std::chrono::minutes(5);
  /// kNccl: this rank's GPU; -1 means LOCAL_RANK (one process per GPU).
  int device_index = -1;
  /// kGloo: network interface for Gloo's pairs; empty means
  /// $GLOO_SOCKET_IFNAME, else loopback when MASTER_ADDR is local.
  std::string gloo_interface;
};

/// Reads the launch environment (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR,
/// MASTER_PORT; see backends/launch/env.h) and connects this process to the
/// job with the given backend. Every rank must call it with the same `kind`.
/// kNccl needs a build with NCCL (Bazel: CUDA and NCCL under $CUDA_HOME;
/// tools/gpu_build.sh) and throws otherwise. kFake and kSolo are in-process
/// worlds with their own entry points (run_fake_world, solo_world) and throw.
std::shared_ptr<World> init_world_from_env(BackendKind kind, const InitOptions& options = {});

/// True when this build can create nccl worlds.
bool nccl_available();

}  // namespace dtensor
