// A fresh, empty directory for a test's files: under Bazel's $TEST_TMPDIR
// (removed after the test), else the system's temporary directory.
//   const std::string dir = testing::scratch_dir("reshard");   // .../reshard, empty
//   checkpoint::save(state, dir + "/ckpt");
#pragma once

#include <string>

namespace dtensor::testing {

/// The directory `name` under $TEST_TMPDIR (or std::filesystem's temporary
/// directory), emptied and created; returns its path. Call it once per
/// directory and test: a second call empties it again.
std::string scratch_dir(const std::string& name);

}  // namespace dtensor::testing
