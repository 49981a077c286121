// TCPStore creation with errors that name the address and the likely cause,
// and the exit rendezvous that keeps rank 0's store alive for the others.
#include "backends/launch/store.h"

#include <c10/util/Exception.h>

#include <exception>
#include <string>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "backends/launch/sigpipe.h"

namespace dtensor {
namespace {

constexpr const char* kExitCounterKey = "dtensor/exit/count";
constexpr const char* kExitDoneKey = "dtensor/exit/done";

std::string first_line(const char* text) {
  std::string s(text);
  const auto end = s.find('\n');
  return end == std::string::npos ? s : s.substr(0, end);
}

}  // namespace

c10::intrusive_ptr<c10d::Store> connect_store(const LaunchEnv& env,
                                              std::chrono::milliseconds timeout) {
  validate_launch_env(env);
  c10d::TCPStoreOptions options;
  options.port = static_cast<std::uint16_t>(env.port);
  options.isServer = env.rank == 0 && !env.use_agent_store;
  options.numWorkers = static_cast<std::size_t>(env.world_size);
  options.waitWorkers = true;
  options.timeout = timeout;
  options.multiTenant = true;  // as torch.distributed's env:// init
  // The server's thread (rank 0) is started inside: it never dies of SIGPIPE.
  SigpipeBlock no_sigpipe;
  try {
    auto store = c10::make_intrusive<c10d::TCPStore>(env.master_addr, options);
    if (!env.use_agent_store) return store;
    return c10::make_intrusive<c10d::PrefixStore>(
        "/worker/attempt_" + std::to_string(env.restart_count), store);
  } catch (const std::exception& e) {
    const std::string cause =
        options.isServer
            ? "rank 0 serves the store: is port " + std::to_string(env.port) +
                  " already in use (pick another MASTER_PORT), or did some rank not start?"
            : "is rank 0 running, and is " + env.master_addr + ":" + std::to_string(env.port) +
                  " reachable from this host?";
    // A throw, not TORCH_CHECK(false, ...): under ASan the compiler cannot see
    // that the check never returns and -Werror rejects the missing return.
    C10_THROW_ERROR(Error, c10::str("rendezvous store at ", env.master_addr, ":", env.port,
                                    " failed on ", env.to_string(), " within ", timeout.count(),
                                    " ms: ", first_line(e.what()), "; ", cause));
  }
}

void exit_rendezvous(c10d::Store& store, const LaunchEnv& env,
                     std::chrono::milliseconds wait) noexcept {
  // The torchrun agent's store outlives the workers: nothing to wait for.
  if (env.world_size <= 1 || env.use_agent_store || wait.count() <= 0 ||
      std::uncaught_exceptions() > 0) {
    return;
  }
  SigpipeBlock no_sigpipe;  // rank 0 may be gone already: see Note [SIGPIPE]
  try {
    if (env.rank != 0) {
      const int64_t arrived = store.add(kExitCounterKey, 1);
      if (arrived == env.world_size - 1) store.set(kExitDoneKey, std::vector<uint8_t>{1});
      return;
    }
    store.wait({kExitDoneKey}, wait);
  } catch (...) {
    // A rank that crashed never checks in; its peers' errors say what happened.
  }
}

std::string store_description(const LaunchEnv& env) {
  return c10::str("the store at ", env.master_addr, ":", env.port,
                  env.use_agent_store ? " (torchrun's agent)" : " (served by rank 0)");
}

}  // namespace dtensor
