// Parent and worker sides of the multi-process test harness.
#include "tests/backends/gloo/multiprocess.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string>

#include "backends/gloo/gloo_world.h"
#include "backends/launch/env.h"

namespace dtensor::testing {
namespace {

constexpr const char* kTimeoutVar = "DTENSOR_TEST_GLOO_TIMEOUT_MS";
constexpr int kPortAttempts = 4;

// A clash with another test that took the same free port between our probe
// and rank 0's bind.
bool port_clash(const launch::LaunchResult& result) {
  for (const auto& rank : result.ranks) {
    if (rank.output.find("ddress already in use") != std::string::npos) return true;
  }
  return false;
}

launch::LaunchResult run_with_retries(launch::LaunchSpec spec, const WorkerOptions& options) {
  spec.timeout = options.job_timeout;
  spec.kill_on_failure = options.kill_on_failure;
  spec.ignore_sigpipe = options.ignore_sigpipe;
  spec.env = options.env;
  spec.env.emplace_back(kTimeoutVar, std::to_string(options.collective_timeout.count()));
  // The test runner's files belong to the parent test only.
  spec.unset_env = {"XML_OUTPUT_FILE",          "GTEST_OUTPUT",
                    "TEST_PREMATURE_EXIT_FILE", "GTEST_SHARD_INDEX",
                    "GTEST_TOTAL_SHARDS",       "TEST_SHARD_STATUS_FILE",
                    "GTEST_SHARD_STATUS_FILE",  "TEST_WARNINGS_OUTPUT_FILE"};
  const size_t base_env = spec.env.size();
  launch::LaunchResult result;
  for (int attempt = 0; attempt < kPortAttempts; ++attempt) {
    spec.master_port = launch::find_free_port();
    // torchrun reads its --master_port default from PET_MASTER_PORT.
    spec.env.resize(base_env);
    spec.env.emplace_back("PET_MASTER_PORT", std::to_string(spec.master_port));
    result = launch::launch_local(spec);
    if (result.ok() || !port_clash(result)) break;
  }
  return result;
}

}  // namespace

std::string self_path() {
  char buffer[4096];
  const ssize_t n = readlink("/proc/self/exe", buffer, sizeof(buffer) - 1);
  if (n <= 0) return "/proc/self/exe";
  return std::string(buffer, static_cast<size_t>(n));
}

void expect_no_leftovers(const launch::LaunchResult& result) {
  for (const auto& rank : result.ranks) {
    errno = 0;
    const bool alive = kill(rank.pid, 0) == 0 || errno != ESRCH;
    EXPECT_FALSE(alive) << "rank " << rank.rank << " (pid " << rank.pid << ") is still alive";
    EXPECT_NE(rank.status(), "still running") << "rank " << rank.rank;
  }
}

bool is_worker() { return has_launch_environment(); }

launch::LaunchResult run_worker_test(int nproc, const std::string& test_name,
                                     const WorkerOptions& options) {
  launch::LaunchSpec spec;
  spec.nproc = nproc;
  spec.argv = {self_path(), "--gtest_filter=" + test_name};
  return run_with_retries(std::move(spec), options);
}

launch::LaunchResult run_program(const std::vector<std::string>& argv,
                                 const WorkerOptions& options) {
  launch::LaunchSpec spec;
  spec.nproc = 1;
  spec.argv = argv;
  return run_with_retries(std::move(spec), options);
}

std::shared_ptr<World> make_worker_world() {
  GlooWorldOptions options;
  if (const char* ms = std::getenv(kTimeoutVar)) {
    options.timeout = std::chrono::milliseconds(std::atoll(ms));
  }
  options.exit_wait = options.timeout;
  return gloo_world(launch_env_from_environment(), options);
}

}  // namespace dtensor::testing
