// Prints which LibTorch this build compiled and runs against, one line, so a
// test log says what it tested (tools/test.sh prints it first).
//   bazel run //tools/build_info   ->  "libtorch 2.11.0 (CPU build) from /root/.cache/..."
#include <cstdio>

#include "core/compat/torch_compat.h"

int main() {
  // The version compiled against is the header's; the library loaded must be
  // the same one (the rpath points at DTENSOR_LIBTORCH_ROOT).
  std::printf("libtorch %s (%s build) from %s\n", dtensor::compat::libtorch_version(),
#ifdef DTENSOR_TORCH_HAS_CUDA
              "CUDA",
#else
              "CPU",
#endif
              DTENSOR_LIBTORCH_ROOT);
  return 0;
}
