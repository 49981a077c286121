// Implementation of scratch_dir. See scratch_dir.h.
#include "testing/scratch_dir.h"

#include <cstdlib>
#include <filesystem>

namespace dtensor::testing {

std::string scratch_dir(const std::string& name) {
  namespace fs = std::filesystem;
  const char* tmp = std::getenv("TEST_TMPDIR");
  const fs::path dir = (tmp != nullptr ? fs::path(tmp) : fs::temp_directory_path()) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

}  // namespace dtensor::testing
