// Multi-process gtest harness: a parent test starts N copies of its own
// binary, each running one worker test as a rank of a Gloo job.
//   TEST(GlooWorker, Sum) { if (!is_worker()) GTEST_SKIP(); auto world = make_worker_world(); ... }
//   TEST(GlooJob, Sum) { EXPECT_WORKERS_OK(run_worker_test(4, "GlooWorker.Sum")); }
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backends/world.h"
#include "backends/launch/launcher.h"

namespace dtensor::testing {

/// How the parent runs its workers.
struct WorkerOptions {
  /// The whole job is killed after this (a hung worker fails the test).
  std::chrono::milliseconds job_timeout = std::chrono::seconds(90);
  /// The workers' Gloo timeout (collectives, store, group creation).
  std::chrono::milliseconds collective_timeout = std::chrono::seconds(30);
  /// false: survivors of a failed rank run on (failure-propagation tests).
  bool kill_on_failure = true;
  /// false: workers start with SIGPIPE's default disposition, as torchrun
  /// starts a C++ program, so that tests prove dtensor's worlds guard their
  /// own sockets (Note [SIGPIPE]); true: as dtensor-launch starts them.
  bool ignore_sigpipe = false;
  /// Extra environment of every worker.
  std::vector<std::pair<std::string, std::string>> env;
};

/// True in a worker process (RANK is set).
bool is_worker();

/// Runs `nproc` copies of this test binary with --gtest_filter=`test_name`
/// on a free MASTER_PORT (retried on a port clash with a parallel test), and
/// returns how they ended. Never leaves a process behind.
launch::LaunchResult run_worker_test(int nproc, const std::string& test_name,
                                     const WorkerOptions& options = {});

/// Runs one process of `argv` (e.g. torchrun starting this binary) with the
/// same environment cleanup, timeout and port retry as run_worker_test. The
/// free port is in MASTER_PORT and PET_MASTER_PORT (torchrun's --master_port).
launch::LaunchResult run_program(const std::vector<std::string>& argv,
                                 const WorkerOptions& options = {});

/// This test binary's path, for argv.
std::string self_path();

/// Expects that no process of the job is alive any more (none left behind).
void expect_no_leftovers(const launch::LaunchResult& result);

/// In a worker: a Gloo world from the launch environment, with the parent's
/// collective timeout (DTENSOR_TEST_GLOO_TIMEOUT_MS).
std::shared_ptr<World> make_worker_world();

}  // namespace dtensor::testing

/// Fails the test with the job's report (each rank's status and output)
/// unless every rank succeeded.
#define EXPECT_WORKERS_OK(result_expr)                                   \
  do {                                                                   \
    const auto dtensor_job_result = (result_expr);                       \
    EXPECT_TRUE(dtensor_job_result.ok()) << dtensor_job_result.report(); \
  } while (0)
