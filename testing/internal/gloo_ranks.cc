// Gloo rank processes of run_on_ranks. See Note [Gloo rank processes].
#include "testing/internal/gloo_ranks.h"

#include <c10/util/Exception.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <mutex>
#include <sstream>
#include <utility>

#include "backends/gloo/gloo_world.h"
#include "backends/launch/env.h"
#include "testing/internal/rank_results.h"
#include "backends/launch/launcher.h"

namespace dtensor::testing::internal {
namespace {

constexpr const char* kCallVar = "DTENSOR_TESTING_GLOO_CALL";
constexpr const char* kDoneMarker = "[dtensor testing] done: ";
constexpr int kPortAttempts = 4;

std::mutex& count_mutex() {
  static std::mutex mutex;
  return mutex;
}
int& call_count() {
  static int count = 0;
  return count;
}

// Restarts the numbering of Gloo calls at each test (also under --gtest_repeat).
class ResetCallCount : public ::testing::EmptyTestEventListener {
  void OnTestStart(const ::testing::TestInfo&) override {
    std::lock_guard<std::mutex> lock(count_mutex());
    call_count() = 0;
  }
};

std::string running_test_name() {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  TORCH_CHECK(info != nullptr, "run_on_ranks with TestBackend::kGloo must be called inside a running gtest test");
  return std::string(info->test_suite_name()) + "." + info->name();
}

std::string executable_path() {
  char buffer[4096];
  const ssize_t n = readlink("/proc/self/exe", buffer, sizeof(buffer) - 1);
  if (n <= 0) return "/proc/self/exe";
  return std::string(buffer, static_cast<size_t>(n));
}

[[noreturn]] void end_process(int code) {
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  _exit(code);
}

bool port_clash(const launch::LaunchResult& result) {
  for (const auto& rank : result.ranks) {
    if (rank.output.find("ddress already in use") != std::string::npos) return true;
  }
  return false;
}

}  // namespace

std::string next_gloo_call_id() {
  static std::once_flag listener_once;
  std::call_once(listener_once, [] {
    ::testing::UnitTest::GetInstance()->listeners().Append(new ResetCallCount);  // gtest owns it
  });
  std::lock_guard<std::mutex> lock(count_mutex());
  return running_test_name() + "#" + std::to_string(call_count()++);
}

bool in_gloo_rank_process() { return std::getenv(kCallVar) != nullptr && has_launch_environment(); }

bool is_gloo_rank_process_for(const std::string& id) {
  const char* value = std::getenv(kCallVar);
  return in_gloo_rank_process() && value == id;
}

void run_gloo_rank(const RankConfig& config, const std::function<void(World&)>& fn, const RunOptions& options) {
  const std::string id = std::getenv(kCallVar);
  LaunchEnv env;
  try {
    env = launch_env_from_environment();
  } catch (const c10::Error& e) {
    std::cout << "[dtensor testing] bad launch environment: " << e.what_without_backtrace() << std::endl;
    end_process(1);
  }
  RankResults results(env.rank, /*echo=*/true);
  if (env.world_size != config.world_size()) {
    std::cout << "[rank " << env.rank << "] started in a world of " << env.world_size << " ranks for " << config
              << std::endl;
    end_process(1);
  }
  std::shared_ptr<World> world;
  try {
    GlooWorldOptions gloo;
    gloo.timeout = options.timeout;
    gloo.exit_wait = options.timeout;
    world = gloo_world(env, gloo);
  } catch (...) {
    results.record_exception(std::current_exception());
    end_process(1);
  }
  {
    ScopedCurrentWorld current(*world);
    ScopedRankConfig scoped_config(config);
    auto capture = results.capture();
    try {
      fn(*world);
    } catch (...) {
      results.record_exception(std::current_exception());
    }
  }
  // A rank that left early (exception, ASSERT_*) ends at once: the launcher
  // then stops the others instead of letting them wait for it.
  if (results.error() || results.has_fatal_failure()) end_process(1);
  world.reset();  // the exit rendezvous with the other ranks
  std::cout << kDoneMarker << id << " rank " << env.rank << (results.skipped() ? " skipped" : "")
            << (results.failed() ? " failed" : " passed") << std::endl;
  end_process(results.failed() ? 1 : 0);
}

void launch_gloo_job(const RankConfig& config, const std::string& id, const RunOptions& options) {
  const std::string test_name = id.substr(0, id.rfind('#'));
  launch::LaunchSpec spec;
  spec.nproc = static_cast<int>(config.world_size());
  spec.argv = {executable_path(), "--gtest_filter=" + test_name};
  spec.timeout = options.job_timeout;
  spec.kill_on_failure = true;
  // The test runner's files and sharding belong to the parent test only.
  spec.unset_env = {"XML_OUTPUT_FILE",          "GTEST_OUTPUT",
                    "TEST_PREMATURE_EXIT_FILE", "GTEST_SHARD_INDEX",
                    "GTEST_TOTAL_SHARDS",       "TEST_SHARD_STATUS_FILE",
                    "GTEST_SHARD_STATUS_FILE",  "TEST_WARNINGS_OUTPUT_FILE",
                    "GTEST_FILTER"};
  launch::LaunchResult result;
  for (int attempt = 0; attempt < kPortAttempts; ++attempt) {
    spec.master_port = launch::find_free_port();
    spec.env = {{kCallVar, id}};
    result = launch::launch_local(spec);
    if (result.ok() || !port_clash(result)) break;
  }
  if (!result.ok()) {
    ADD_FAILURE() << "Gloo job " << config << " of " << test_name << " failed: " << result.report();
    return;
  }
  bool skipped = false;
  for (const auto& rank : result.ranks) {
    const std::string marker = kDoneMarker + id + " rank " + std::to_string(rank.rank);
    const size_t at = rank.output.find(marker);
    if (at == std::string::npos) {
      ADD_FAILURE() << "Gloo job " << config << ": rank " << rank.rank << " exited 0 without running the body of "
                    << id << " (does the test reach the same run_on_ranks calls in every process?). Output:\n"
                    << rank.output;
      return;
    }
    skipped = skipped || rank.output.compare(at + marker.size(), 8, " skipped") == 0;
  }
  if (skipped) GTEST_SKIP() << "a Gloo rank skipped the test";
}

}  // namespace dtensor::testing::internal
