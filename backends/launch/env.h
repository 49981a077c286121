// The torchrun launch environment: which rank this process is and where the
// job's rendezvous store (rank 0) listens.
//   dtensor::LaunchEnv env = dtensor::launch_env_from_environment();  // RANK, WORLD_SIZE, ...
//   auto world = dtensor::gloo_world(env);
#pragma once

#include <cstdint>
#include <string>

namespace dtensor {

/// Names of the variables torchrun (and dtensor-launch) set in every process.
inline constexpr const char* kRankVar = "RANK";
inline constexpr const char* kWorldSizeVar = "WORLD_SIZE";
inline constexpr const char* kLocalRankVar = "LOCAL_RANK";
inline constexpr const char* kMasterAddrVar = "MASTER_ADDR";
inline constexpr const char* kMasterPortVar = "MASTER_PORT";

/// One process's place in a job started by a launcher. Rank 0 serves the
/// rendezvous store at master_addr:port; every rank connects to it.
struct LaunchEnv {
  int64_t rank = 0;
  int64_t world_size = 1;
  int64_t local_rank = 0;  // index of this process on its host (its GPU)
  std::string master_addr = "127.0.0.1";
  int port = 29500;
  /// torchrun's default (static) rendezvous already serves a store at
  /// MASTER_ADDR:MASTER_PORT (TORCHELASTIC_USE_AGENT_STORE=True): every rank,
  /// rank 0 included, is then a client. See Note [torchrun agent store].
  bool use_agent_store = false;
  /// TORCHELASTIC_RESTART_COUNT: keys of each restart live under their own prefix.
  int64_t restart_count = 0;

  /// "rank 1 of 4 (local rank 1), store at 127.0.0.1:29500".
  std::string to_string() const;
};

/// Reads RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT (and,
/// when set, TORCHELASTIC_USE_AGENT_STORE and TORCHELASTIC_RESTART_COUNT). Throws
/// c10::Error naming the missing or invalid variable and how to launch, e.g.
/// "RANK is not set; ... launch with torchrun --no_python --nproc_per_node N
/// ./binary or dtensor-launch --nproc N -- ./binary".
LaunchEnv launch_env_from_environment();

/// Throws c10::Error unless 0 <= rank < world_size, 0 <= local_rank,
/// master_addr is non-empty and 0 < port < 65536. launch_env_from_environment
/// calls it; call it on a LaunchEnv built by hand.
void validate_launch_env(const LaunchEnv& env);

/// True when RANK is set, i.e. this process was started by a launcher.
/// Example: a test binary acts as a worker when has_launch_environment().
bool has_launch_environment();

}  // namespace dtensor
