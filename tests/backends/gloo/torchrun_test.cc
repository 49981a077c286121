// A Gloo job launched by torchrun (the PyTorch package whose LibTorch this
// builds against, else Debian's python3-torch on PATH) instead of our own
// launcher: with its default static rendezvous (the agent serves the store,
// see Note [torchrun agent store]) and with --standalone (rank 0 serves it).
// Skipped where torchrun is not installed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <sstream>
#include <string>

#include "backends/world.h"
#include "tests/backends/gloo/gloo_checks.h"
#include "tests/backends/gloo/multiprocess.h"

namespace dtensor::testing {
namespace {

std::string find_torchrun() {
  const char* chosen = std::getenv("DTENSOR_TORCHRUN");  // see BUILD
  if (chosen != nullptr && *chosen != '\0' && access(chosen, X_OK) == 0) return chosen;
  const char* path = std::getenv("PATH");
  std::istringstream dirs(std::string(path ? path : "") + ":/usr/bin:/usr/local/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const std::string candidate = dir + "/torchrun";
    if (!dir.empty() && access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

TEST(TorchrunWorker, Collectives) {
  if (!is_worker()) GTEST_SKIP() << "runs as a rank started by torchrun";
  auto world = make_worker_world();
  std::printf("torchrun rank %lld of %lld\n", static_cast<long long>(world->rank()),
              static_cast<long long>(world->size()));
  gloo_checks::check_all(*world->world_group(), world->observers());
}

// Note [torchrun flags on Debian]
// Debian's torchrun 1.13 runs on Python 3.11, where iterating an IntFlag skips
// the zero member: Std.from_str("0") (the default of --redirects and --tee)
// returns None and torchrun dies in to_map(). Any non-zero value works, so
// stderr is redirected and tee'd back to the console (--redirects 2 --tee 2).
// --monitor_interval 0.5 makes the agent notice finished workers sooner than
// its 5 s default. Underscore spellings work on torchrun 1.13 and 2.x.
launch::LaunchResult run_torchrun(const std::vector<std::string>& extra_flags) {
  std::vector<std::string> argv = {find_torchrun(),
                                   "--nproc_per_node",
                                   "2",
                                   "--redirects",
                                   "2",
                                   "--tee",
                                   "2",
                                   "--monitor_interval",
                                   "0.5"};
  argv.insert(argv.end(), extra_flags.begin(), extra_flags.end());
  argv.insert(argv.end(), {"--no_python", self_path(), "--gtest_filter=TorchrunWorker.*"});
  WorkerOptions options;
  options.job_timeout = std::chrono::seconds(120);
  return run_program(argv, options);
}

void expect_two_ranks_ran(const launch::LaunchResult& result) {
  EXPECT_TRUE(result.ok()) << result.report();
  const std::string& out = result.ranks.at(0).output;
  EXPECT_NE(out.find("torchrun rank 0 of 2"), std::string::npos) << result.report();
  EXPECT_NE(out.find("torchrun rank 1 of 2"), std::string::npos) << result.report();
  expect_no_leftovers(result);
}

// torchrun's default: static rendezvous on --master_port (PET_MASTER_PORT,
// set by run_program), the agent's store shared with the workers.
TEST(Torchrun, StaticRendezvousUsesTheAgentStore) {
  if (is_worker()) GTEST_SKIP() << "parent test";
  if (find_torchrun().empty()) GTEST_SKIP() << "torchrun is not installed (python3-torch)";
  expect_two_ranks_ran(run_torchrun({}));
}

TEST(Torchrun, StandaloneRankZeroServesTheStore) {
  if (is_worker()) GTEST_SKIP() << "parent test";
  if (find_torchrun().empty()) GTEST_SKIP() << "torchrun is not installed (python3-torch)";
  expect_two_ranks_ran(run_torchrun({"--standalone"}));
}

}  // namespace
}  // namespace dtensor::testing
