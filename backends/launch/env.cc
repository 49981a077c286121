// Parsing of the torchrun environment variables, with errors that say which
// variable is wrong and how to launch the program instead.
#include "backends/launch/env.h"

#include <c10/util/Exception.h>

#include <charconv>
#include <cstdlib>
#include <sstream>
#include <string_view>

namespace dtensor {
namespace {

constexpr const char* kHowToLaunch =
    "launch with `torchrun --no_python --nproc_per_node N ./binary` or "
    "`dtensor-launch --nproc N -- ./binary` (bazel run //tools/launch:dtensor_launch)";

std::string require_var(const char* name) {
  const char* value = std::getenv(name);
  TORCH_CHECK(value != nullptr, name, " is not set: this process was not started by a launcher; ",
              kHowToLaunch);
  TORCH_CHECK(*value != '\0', name, " is set but empty; ", kHowToLaunch);
  return value;
}

int64_t parse_int_var(const char* name) {
  const std::string text = require_var(name);
  int64_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  TORCH_CHECK(ec == std::errc() && ptr == end, name, "='", text, "' is not an integer; ",
              kHowToLaunch);
  return value;
}

}  // namespace

std::string LaunchEnv::to_string() const {
  std::ostringstream out;
  out << "rank " << rank << " of " << world_size << " (local rank " << local_rank << "), store at "
      << master_addr << ":" << port;
  return out.str();
}

void validate_launch_env(const LaunchEnv& env) {
  TORCH_CHECK(env.world_size >= 1, kWorldSizeVar, "=", env.world_size, " must be at least 1; ",
              kHowToLaunch);
  TORCH_CHECK(env.rank >= 0 && env.rank < env.world_size, kRankVar, "=", env.rank,
              " is outside 0..", env.world_size - 1, " (", kWorldSizeVar, "=", env.world_size,
              "); ", kHowToLaunch);
  TORCH_CHECK(env.local_rank >= 0, kLocalRankVar, "=", env.local_rank, " must be >= 0; ",
              kHowToLaunch);
  TORCH_CHECK(!env.master_addr.empty(), kMasterAddrVar, " is empty; ", kHowToLaunch);
  TORCH_CHECK(env.port > 0 && env.port < 65536, kMasterPortVar, "=", env.port,
              " is not a TCP port (1..65535); ", kHowToLaunch);
  TORCH_CHECK(env.restart_count >= 0, "TORCHELASTIC_RESTART_COUNT=", env.restart_count,
              " must be >= 0");
}

LaunchEnv launch_env_from_environment() {
  LaunchEnv env;
  env.rank = parse_int_var(kRankVar);
  env.world_size = parse_int_var(kWorldSizeVar);
  env.local_rank = parse_int_var(kLocalRankVar);
  env.master_addr = require_var(kMasterAddrVar);
  const int64_t port = parse_int_var(kMasterPortVar);
  TORCH_CHECK(port > 0 && port < 65536, kMasterPortVar, "=", port,
              " is not a TCP port (1..65535); ", kHowToLaunch);
  env.port = static_cast<int>(port);
  const char* agent_store = std::getenv("TORCHELASTIC_USE_AGENT_STORE");
  env.use_agent_store = agent_store != nullptr && std::string_view(agent_store) == "True";
  if (std::getenv("TORCHELASTIC_RESTART_COUNT") != nullptr) {
    env.restart_count = parse_int_var("TORCHELASTIC_RESTART_COUNT");
  }
  validate_launch_env(env);
  return env;
}

bool has_launch_environment() { return std::getenv(kRankVar) != nullptr; }

}  // namespace dtensor
