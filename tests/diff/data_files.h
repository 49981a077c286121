// The checked-in data of the differential tests (records, programs, known
// divergences), by path in the repository: under $TEST_SRCDIR when Bazel runs
// the test, else relative to the working directory (the repository root).
//   const nlohmann::json doc = diff::read_json_file("tests/diff/fsdp/programs.json");
#pragma once

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>

namespace dtensor::diff {

inline std::string data_file(const std::string& path) {
  if (const char* srcdir = std::getenv("TEST_SRCDIR")) {
    const std::string full = std::string(srcdir) + "/dtensor/" + path;
    if (std::ifstream(full).good()) return full;
  }
  return path;
}

inline nlohmann::json read_json_file(const std::string& path) {
  std::ifstream in(data_file(path));
  if (!in) throw std::runtime_error("cannot read " + data_file(path));
  return nlohmann::json::parse(in);
}

}  // namespace dtensor::diff
