// Runs a shell command and captures what it prints (stdout and stderr),
// for tests that drive other programs (PyTorch scripts, CLIs).
//   const testing::CommandRun run = testing::run_command(python + " script.py");
//   EXPECT_EQ(run.status, 0) << run.output;
#pragma once

#include <string>

namespace dtensor::testing {

struct CommandRun {
  /// The exit status; 128 + the signal when a signal ended it; -1 when the
  /// command could not be started.
  int status = -1;
  /// Its stdout and stderr, interleaved.
  std::string output;
};

/// Runs `command` through /bin/sh (popen) with stderr joined to stdout.
CommandRun run_command(const std::string& command);

}  // namespace dtensor::testing
