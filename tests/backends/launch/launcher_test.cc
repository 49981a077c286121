// The local launcher: environment of the ranks, output capture and prefixing,
// stopping the others when one fails, the job timeout, and that nothing it
// started outlives it (grandchildren included).
#include "backends/launch/launcher.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <cerrno>
#include <chrono>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>

namespace dtensor::launch {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

LaunchSpec shell(int nproc, const std::string& script) {
  LaunchSpec spec;
  spec.nproc = nproc;
  spec.argv = {"/bin/sh", "-c", script};
  spec.timeout = seconds(30);
  return spec;
}

bool process_alive(pid_t pid) {
  errno = 0;
  return kill(pid, 0) == 0 || errno != ESRCH;
}

TEST(LauncherTest, RanksGetTheTorchrunEnvironment) {
  LaunchSpec spec = shell(3, "echo $RANK $WORLD_SIZE $LOCAL_RANK $MASTER_ADDR:$MASTER_PORT $EXTRA");
  spec.master_port = 23456;
  spec.env = {{"EXTRA", "x"}};
  const LaunchResult result = launch_local(spec);
  ASSERT_TRUE(result.ok()) << result.report();
  ASSERT_EQ(result.ranks.size(), 3u);
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(result.ranks[r].output,
              std::to_string(r) + " 3 " + std::to_string(r) + " 127.0.0.1:23456 x\n");
  }
  EXPECT_EQ(result.summary().rfind("all 3 ranks succeeded", 0), 0u) << result.summary();
}

TEST(LauncherTest, PicksAFreePortAndUnsetsVariables) {
  setenv("DTENSOR_LAUNCHER_TEST_SECRET", "leak", 1);
  LaunchSpec spec = shell(1, "echo port=$MASTER_PORT secret=$DTENSOR_LAUNCHER_TEST_SECRET");
  spec.unset_env = {"DTENSOR_LAUNCHER_TEST_SECRET"};
  const LaunchResult result = launch_local(spec);
  ASSERT_TRUE(result.ok()) << result.report();
  EXPECT_GT(result.master_port, 0);
  EXPECT_EQ(result.ranks[0].output, "port=" + std::to_string(result.master_port) + " secret=\n");
  unsetenv("DTENSOR_LAUNCHER_TEST_SECRET");
}

TEST(LauncherTest, LinesArePassedToTheCallbackWithTheirRank) {
  LaunchSpec spec = shell(2, "echo out $RANK; echo err $RANK >&2; printf 'no newline'");
  std::map<int, std::vector<std::string>> lines;
  spec.on_line = [&](int rank, const std::string& line) { lines[rank].push_back(line); };
  const LaunchResult result = launch_local(spec);
  ASSERT_TRUE(result.ok()) << result.report();
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(lines[r].size(), 3u);
    EXPECT_EQ(lines[r][2], "no newline");
  }
}

TEST(LauncherTest, FirstFailureStopsTheOthers) {
  const auto start = std::chrono::steady_clock::now();
  const LaunchResult result =
      launch_local(shell(3, "if [ $RANK = 1 ]; then echo dying; exit 3; fi; exec sleep 60"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(10));
  EXPECT_FALSE(result.ok());
  EXPECT_EQ(result.first_failed_rank, 1);
  EXPECT_EQ(result.ranks[1].exit_code, 3);
  EXPECT_TRUE(result.ranks[0].stopped_by_launcher);
  EXPECT_TRUE(result.ranks[2].stopped_by_launcher);
  const std::string report = result.report();
  EXPECT_EQ(report.rfind("rank 1 failed first: exit code 3", 0), 0u) << report;
  EXPECT_NE(report.find("---- rank 1: exit code 3 ----\ndying\n"), std::string::npos) << report;
  for (const auto& rank : result.ranks) EXPECT_FALSE(process_alive(rank.pid));
}

TEST(LauncherTest, WithoutKillOnFailureTheOthersRunToTheirEnd) {
  LaunchSpec spec = shell(2, "if [ $RANK = 1 ]; then exit 5; fi; sleep 0.5; echo finished");
  spec.kill_on_failure = false;
  const LaunchResult result = launch_local(spec);
  EXPECT_EQ(result.first_failed_rank, 1);
  EXPECT_TRUE(result.ranks[0].ok()) << result.report();
  EXPECT_EQ(result.ranks[0].output, "finished\n");
}

TEST(LauncherTest, TimeoutKillsRanksThatIgnoreSigterm) {
  LaunchSpec spec = shell(2, "trap '' TERM; while true; do sleep 0.1; done");
  spec.timeout = milliseconds(500);
  spec.kill_grace = milliseconds(300);
  const LaunchResult result = launch_local(spec);
  EXPECT_TRUE(result.timed_out);
  EXPECT_LT(result.elapsed, seconds(5));
  for (const auto& rank : result.ranks) {
    EXPECT_EQ(rank.signal, SIGKILL) << rank.status();
    EXPECT_TRUE(rank.stopped_by_launcher);
  }
}

TEST(LauncherTest, GrandchildrenDoNotOutliveTheJob) {
  const std::string pid_file =
      std::string(std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "/tmp") +
      "/launcher_test_grandchild.pid";
  LaunchSpec spec = shell(1, "sleep 60 & echo $! > " + pid_file + "; exit 2");
  const LaunchResult result = launch_local(spec);
  EXPECT_EQ(result.first_failed_rank, 0);
  std::ifstream in(pid_file);
  pid_t grandchild = 0;
  ASSERT_TRUE(in >> grandchild);
  // Killed with the rank's process group; give the kernel a moment to reap it.
  for (int i = 0; i < 100 && process_alive(grandchild); ++i) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  std::ifstream stat("/proc/" + std::to_string(grandchild) + "/stat");
  std::string pid, name, state;
  if (stat >> pid >> name >> state) {
    EXPECT_EQ(state, "Z") << "grandchild still running";
  }
}

// Whether SIGPIPE is ignored and whether it is blocked in a rank, read from
// the rank's own /proc/self/status (grep is the rank).
struct RankSigpipe {
  bool ignored = false;
  bool blocked = false;
};

RankSigpipe launched_sigpipe(const LaunchSpec& base) {
  LaunchSpec spec = base;
  spec.argv = {"grep", "-E", "^Sig(Ign|Blk):", "/proc/self/status"};
  const LaunchResult result = launch_local(spec);
  EXPECT_TRUE(result.ok()) << result.report();
  RankSigpipe found;
  std::istringstream lines(result.ranks.at(0).output);
  std::string name, hex;
  const unsigned long long bit = 1ull << (SIGPIPE - 1);
  while (lines >> name >> hex) {
    const bool set = (std::stoull(hex, nullptr, 16) & bit) != 0;
    (name == "SigIgn:" ? found.ignored : found.blocked) = set;
  }
  return found;
}

// Note [SIGPIPE]: ranks ignore SIGPIPE unless the spec asks for the default,
// and never inherit a blocked SIGPIPE from the thread that launched them.
TEST(LauncherTest, RanksStartWithSigpipeIgnoredUnlessAskedForTheDefault) {
  sigset_t pipe_only, old;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_only, &old);
  LaunchSpec spec;
  spec.timeout = seconds(30);
  const RankSigpipe by_default = launched_sigpipe(spec);
  spec.ignore_sigpipe = false;
  const RankSigpipe way_out = launched_sigpipe(spec);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  EXPECT_TRUE(by_default.ignored);
  EXPECT_FALSE(by_default.blocked);
  EXPECT_FALSE(way_out.ignored);
  EXPECT_FALSE(way_out.blocked);
}

TEST(LauncherTest, MissingProgramFailsWithExitCode127) {
  LaunchSpec spec;
  spec.argv = {"/nonexistent/program"};
  const LaunchResult result = launch_local(spec);
  EXPECT_EQ(result.ranks[0].exit_code, 127);
  EXPECT_NE(result.ranks[0].output.find("exec failed"), std::string::npos);
}

TEST(LauncherTest, BadSpecsAreRejected) {
  LaunchSpec spec;
  EXPECT_THROW(launch_local(spec), std::invalid_argument);  // no program
  spec.argv = {"/bin/true"};
  spec.nproc = 0;
  EXPECT_THROW(launch_local(spec), std::invalid_argument);
}

TEST(LauncherTest, FreePortIsBindable) {
  const int port = find_free_port();
  EXPECT_GT(port, 0);
  EXPECT_LT(port, 65536);
}

}  // namespace
}  // namespace dtensor::launch
