// A World whose groups are c10d ProcessGroupGloo instances: one process per
// rank, CPU tensors, TCP on loopback or a network. Started by a launcher:
//   auto world = dtensor::gloo_world(dtensor::launch_env_from_environment());
//   dtensor::ScopedCurrentWorld scope(*world);
//   world->world_group()->all_reduce(t);
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "backends/launch/env.h"
#include "backends/world.h"

namespace dtensor {

/// How a Gloo world connects. See Note [Gloo device selection] in gloo_world.cc.
struct GlooWorldOptions {
  /// Default timeout of collectives and of connecting a new group's pairs;
  /// see Note [Gloo timeouts] in gloo_communicator.cc.
  std::chrono::milliseconds timeout = std::chrono::minutes(10);
  /// Bounds connecting to the store at start-up (ranks start at different
  /// times) and each later store operation.
  std::chrono::milliseconds connect_timeout = std::chrono::minutes(5);
  /// Network interface for Gloo's TCP pairs ("eth0"); empty: $GLOO_SOCKET_IFNAME.
  std::string interface;
  /// Address or hostname to bind instead of an interface; empty: 127.0.0.1
  /// when MASTER_ADDR is a loopback address, else this host's name.
  std::string hostname;
  /// Gloo worker threads per group (c10d's default is 2).
  int threads = 2;
  /// See Note [Exit rendezvous] in backends/launch/store.h.
  std::chrono::milliseconds exit_wait = std::chrono::seconds(10);
};

/// Connects this process to the job described by `env` (the store on rank 0,
/// then Gloo pairs per group as groups are created). Every rank of the job
/// must call it. Groups are ProcessGroupGloo over a PrefixStore named after
/// their ranks; only members create a group. Collectives Gloo 1.13 lacks
/// (reduce_scatter_tensor, all_gather_into_tensor, avg, bool/bfloat16/complex
/// reductions) are composed from ones it has and reported once as the
/// logical collective. Throws c10::Error when the store or the device fails.
std::shared_ptr<World> gloo_world(const LaunchEnv& env, const GlooWorldOptions& options = {});

}  // namespace dtensor
