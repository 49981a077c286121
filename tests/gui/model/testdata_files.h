// The viewer model tests' fixtures (tests/gui/testdata), found in Bazel's
// runfiles or relative to the source root.
//   std::string text = read_all(testdata("tp_mlp_trace.json"));
#pragma once

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace dtensor::gui {

// The path of tests/gui/testdata/`name`.
inline std::string testdata(const std::string& name) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  std::string rel = "tests/gui/testdata/" + name;
  if (srcdir != nullptr) {
    std::string full = std::string(srcdir) + "/dtensor/" + rel;
    if (std::ifstream(full).good()) return full;
  }
  return rel;
}

// The whole file at `path` ("" when it cannot be read).
inline std::string read_all(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

}  // namespace dtensor::gui
