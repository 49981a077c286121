// Starts N local processes of one program as the ranks of a job, the way
// `torchrun --no_python --nproc_per_node N` does, and supervises them.
//   dtensor::launch::LaunchSpec spec;
//   spec.nproc = 4;
//   spec.argv = {"./my_test", "--gtest_filter=Worker.*"};
//   auto result = dtensor::launch::launch_local(spec);
//   if (!result.ok()) std::cerr << result.report();
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace dtensor::launch {

/// What to start and how to supervise it.
struct LaunchSpec {
  /// Number of ranks (processes), >= 1.
  int nproc = 1;
  /// MASTER_PORT for the ranks; 0 picks a free port (find_free_port).
  int master_port = 0;
  std::string master_addr = "127.0.0.1";
  /// The program and its arguments; argv[0] is looked up in PATH.
  std::vector<std::string> argv;
  /// Extra environment variables of every rank (added after the launch ones).
  std::vector<std::pair<std::string, std::string>> env;
  /// Variables removed from the ranks' environment (e.g. a test runner's
  /// XML_OUTPUT_FILE, which every rank would otherwise overwrite).
  std::vector<std::string> unset_env;
  /// Kill every rank when the job runs longer than this; 0 means no limit.
  std::chrono::milliseconds timeout{0};
  /// As torchrun: the first rank that fails stops the others. When false the
  /// others run on (until they exit or the timeout), so that a test can check
  /// how the survivors react to a peer's death.
  bool kill_on_failure = true;
  /// Between SIGTERM and SIGKILL when stopping ranks.
  std::chrono::milliseconds kill_grace{2000};
  /// Called with each complete output line of a rank (stdout and stderr
  /// merged), in arrival order; null to stay silent.
  std::function<void(int rank, const std::string& line)> on_line;
  /// Keep each rank's output (its last 256 KiB) in RankResult::output.
  bool capture_output = true;
  /// Ranks start with SIGPIPE ignored, as Python processes do, so that a
  /// write to a dead peer's socket fails with EPIPE and is reported instead
  /// of killing the rank silently (see Note [SIGPIPE] in sigpipe.h). false:
  /// ranks start with SIGPIPE's default disposition, unblocked (what
  /// torchrun gives a C++ program); dtensor's worlds still guard their own
  /// sockets then.
  bool ignore_sigpipe = true;
};

/// How one rank ended.
struct RankResult {
  int rank = 0;
  pid_t pid = -1;
  bool exited = false;  // exited normally (exit_code valid)
  int exit_code = -1;
  int signal = 0;                    // the signal that killed it, when !exited
  bool stopped_by_launcher = false;  // killed because of another rank, a timeout or an interrupt
  std::string output;

  bool ok() const { return exited && exit_code == 0; }
  /// "exit code 3", "killed by signal 11 (Segmentation fault)", with
  /// "(stopped by the launcher)" when the launcher killed it.
  std::string status() const;
};

/// How the job ended.
struct LaunchResult {
  std::vector<RankResult> ranks;
  int master_port = 0;
  bool timed_out = false;
  bool interrupted = false;  // SIGINT/SIGTERM reached the launcher
  int first_failed_rank = -1;
  std::chrono::milliseconds elapsed{0};

  bool ok() const;
  /// One line: "all 4 ranks succeeded" or "rank 1 failed first: exit code 3".
  std::string summary() const;
  /// summary() and then each rank's status and output, failed ranks first:
  /// what a test prints when the job failed.
  std::string report() const;
};

/// Starts spec.nproc copies of spec.argv with RANK, WORLD_SIZE, LOCAL_RANK,
/// LOCAL_WORLD_SIZE, GROUP_RANK=0, MASTER_ADDR and MASTER_PORT set, each in
/// its own process group (killed as a group, so no grandchild is left) and
/// with SIGKILL as parent-death signal. Returns when all have ended; nothing
/// it started is left running. Throws std::invalid_argument on a bad spec.
LaunchResult launch_local(const LaunchSpec& spec);

/// A TCP port that was free on `host` a moment ago (binds port 0 and reads
/// the port the kernel chose). Another process may take it before use: a
/// caller that can, retries on "address already in use".
int find_free_port(const std::string& host = "127.0.0.1");

/// Makes SIGINT and SIGTERM stop a running launch_local (its ranks get
/// SIGTERM, then SIGKILL) instead of killing the launcher alone.
void install_stop_signal_handlers();

}  // namespace dtensor::launch
