// The job's rendezvous store: a c10d TCPStore that rank 0 serves at
// MASTER_ADDR:MASTER_PORT. Gloo and NCCL worlds exchange their addresses and
// ids through it.
//   auto store = dtensor::connect_store(env, std::chrono::seconds(60));
#pragma once

#include <chrono>
#include <string>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "backends/launch/env.h"

namespace dtensor {

// Note [torchrun agent store]
// torchrun's default "static" rendezvous starts its own TCPStore on
// MASTER_ADDR:MASTER_PORT before the workers and tells them so with
// TORCHELASTIC_USE_AGENT_STORE=True. Rank 0 must then not serve a store (the
// port is taken): every rank connects as a client and, like
// torch.distributed's env:// init, uses the prefix
// "/worker/attempt_<TORCHELASTIC_RESTART_COUNT>" so that a restarted job does
// not read the keys of the failed attempt. With --standalone, dtensor-launch
// or a hand-set environment, rank 0 serves the store.

/// Creates this rank's handle on the job's TCPStore: rank 0 starts the server
/// on env.port and waits until all env.world_size ranks have connected; the
/// others connect to env.master_addr:env.port (all ranks connect when
/// env.use_agent_store, see Note [torchrun agent store]). Every wait is bounded by
/// `timeout`. Throws c10::Error naming the address, the rank and the likely
/// cause (port in use, rank 0 not started, firewall).
c10::intrusive_ptr<c10d::Store> connect_store(const LaunchEnv& env,
                                              std::chrono::milliseconds timeout);

/// "the store at 127.0.0.1:29500 (served by rank 0)", for error messages.
std::string store_description(const LaunchEnv& env);

// Note [Exit rendezvous]
// Rank 0 serves the store. If it exits while another rank still needs the
// store (creating a group that excludes rank 0, exchanging an NCCL id), that
// rank fails with "connection reset". So when a world is destroyed, ranks
// other than 0 check in and rank 0 waits until all have checked in, bounded by
// `wait` so that a crashed rank delays rank 0's exit by at most that much.
// Skipped while an exception unwinds the stack (a failing rank should leave
// at once so that the others see it fail).

/// See Note [Exit rendezvous]. Never throws: errors only end the wait.
void exit_rendezvous(c10d::Store& store, const LaunchEnv& env,
                     std::chrono::milliseconds wait) noexcept;

}  // namespace dtensor
