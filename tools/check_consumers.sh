#!/usr/bin/env bash
# Builds and tests examples/consumer, a user's project outside this build, the
# two ways users link dtensor, and prints one `NAME PASSED|FAILED` line each:
#   cmake: the repository's CMake build installed into a temporary prefix,
#          then the consumer configured with find_package(dtensor) and run by ctest;
#   bazel: the consumer's own workspace with @dtensor as an external repository.
#   tools/check_consumers.sh [cmake] [bazel]     # default: both
# The CMake build tree is kept outside the clone, one per checkout
# ($DTENSOR_HOME/cmake-build-<hash>), and compiles through ccache
# ($DTENSOR_HOME/ccache, paths relative to the checkout), so a fresh clone
# reuses the objects of an earlier one. LIBTORCH: as Bazel's default.
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DTENSOR_HOME="${DTENSOR_HOME:-$HOME/.cache/dtensor}"
LIBTORCH="${LIBTORCH:-$DTENSOR_HOME/libtorch}"
which=("$@")
((${#which[@]})) || which=(cmake bazel)
status=0

report() {  # NAME STATUS
  if (($2 == 0)); then echo "$1 PASSED"; else echo "$1 FAILED"; status=1; fi
}

# cuda_linked BUILD: with a CUDA LibTorch, libdtensor.so must load
# libtorch_cuda (its CUDA kernels register from static initialisers; linked
# as-needed it was dropped and every CUDA op failed on a GPU host).
cuda_linked() {
  grep -q '^DTENSOR_TORCH_CUDA_LIBRARY:FILEPATH=.*libtorch_cuda' "$1/CMakeCache.txt" || return 0
  if ! readelf -d "$1/libdtensor.so" | grep -q 'NEEDED.*libtorch_cuda'; then
    echo "check_consumers: $1/libdtensor.so does not load libtorch_cuda.so (linked as-needed?)" >&2
    return 1
  fi
}

cmake_consumer() {
  local build prefix consumer launcher=()
  build="$DTENSOR_HOME/cmake-build-$(echo "$ROOT" | md5sum | cut -c1-8)"
  prefix="$(mktemp -d)" consumer="$(mktemp -d)"
  if command -v ccache > /dev/null; then
    export CCACHE_DIR="$DTENSOR_HOME/ccache" CCACHE_BASEDIR="$ROOT" CCACHE_NOHASHDIR=1
    launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  fi
  cmake -S "$ROOT" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS=-g0 "${launcher[@]}" \
      -DLIBTORCH="$LIBTORCH" -DCMAKE_INSTALL_PREFIX="$prefix" -DDTENSOR_WERROR=ON &&
    cmake --build "$build" -j "$(nproc)" &&
    cuda_linked "$build" &&
    cmake --install "$build" &&
    cmake -S "$ROOT/examples/consumer" -B "$consumer" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" &&
    cmake --build "$consumer" &&
    ctest --test-dir "$consumer" --output-on-failure
  local rc=$?
  rm -rf "$prefix" "$consumer"
  return $rc
}

bazel_consumer() {
  (cd "$ROOT/examples/consumer" &&
     bazel test --cache_test_results=no --test_output=errors --symlink_prefix=/ //...
     rc=$?
     "$ROOT/tools/disk_space.sh" release "$(bazel info output_base 2> /dev/null)"
     exit $rc)
}

for w in "${which[@]}"; do
  case $w in
    cmake) echo "==== CMake package + examples/consumer ($(date +%T))"; cmake_consumer; report "//examples/consumer:cmake_package" $? ;;
    bazel) echo "==== Bazel external repository + examples/consumer ($(date +%T))"; bazel_consumer; report "//examples/consumer:bazel_external" $? ;;
    *) echo "usage: tools/check_consumers.sh [cmake] [bazel]" >&2; exit 2 ;;
  esac
done
exit $status
