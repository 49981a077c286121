#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine and runs every test.
#   tools/test.sh                   # all tests that need no GPU (what CI runs)
#   tools/test.sh //tests/core/...  # a subset, against the default LibTorch only
# A full run (no targets given) is, in order:
#   1. every test against PyTorch 2.15's LibTorch (the default build);
#   2. the ASan+UBSan subset (tools/sanitize.sh ci)    DTENSOR_SANITIZE=0 skips it;
#   3. the CUDA configuration of the backends, built (nothing here runs it)
#                                                               DTENSOR_CUDA=0 skips it;
#   4. the build-sync check, and examples/consumer built against the installed
#      CMake package and as a Bazel workspace using @dtensor  DTENSOR_CONSUMERS=0 skips it;
#   5. the core, backends and examples suites against PyTorch 2.11's LibTorch
#      (what the GPU hosts run), in their own Bazel output base  DTENSOR_2_11=0 skips it;
#   6. the same suites against Debian's LibTorch 1.13, likewise  DTENSOR_DEBIAN=0 skips it.
# It ends with a `targets: N passed, M failed` line over all of them. It
# first checks the disk (tools/disk_space.sh: 16 GiB free for a new checkout, else 6).
set -uo pipefail
cd "$(dirname "$0")/.."
tools/disk_space.sh prepare || exit 1
tools/setup.sh || exit 1
# Tests that compare with Python (safetensors) find it here; .bazelrc passes it on.
export DTENSOR_PYTHON="${DTENSOR_HOME:-$HOME/.cache/dtensor}/python"

passed=0
failed=0
worst=0
# count LOG: adds the PASSED / failed target lines of a bazel test log.
count() {
  passed=$((passed + $(grep -cE '^//[^ ]+ +PASSED' "$1")))
  failed=$((failed + $(grep -cE '^//[^ ]+ +(FAILED|TIMEOUT|NO STATUS|FAILED TO BUILD|INCOMPLETE)' "$1")))
}
note_status() { (($1 != 0)) && worst=$1; return 0; }
stage() { echo "==== $* ($(date +%T))"; }

log=$(mktemp)
trap 'rm -f "$log"' EXIT

stage "LibTorch of the default build"
bazel run --ui_event_filters=-info,-stdout,-stderr --noshow_progress //tools/build_info || exit 1

# --keep_going: report every failing test, not just the first.
# --cache_test_results=no: a test run runs the tests (objects still come from the disk cache).
stage "tests (default LibTorch)"
bazel test --keep_going --cache_test_results=no --test_summary=short "${@:-//...}" 2>&1 | tee "$log"
note_status "${PIPESTATUS[0]}"
count "$log"
main_output_base=$(bazel info output_base 2> /dev/null)
tools/disk_space.sh release "$main_output_base"

if (($# == 0)); then
  if [[ ${DTENSOR_SANITIZE:-1} != 0 ]]; then
    stage "ASan+UBSan subset"
    tools/sanitize.sh ci 2>&1 | tee "$log"
    note_status "${PIPESTATUS[0]}"
    count "$log"
    tools/disk_space.sh release "$main_output_base"
  fi

  if [[ ${DTENSOR_CUDA:-1} != 0 ]]; then
    stage "CUDA configuration (build only)"
    # What has CUDA code paths: the backends (NCCL's streams) and what links
    # them directly; `//...` builds too, but in its own output tree that is a
    # second full build. --symlink_prefix=/: bazel-bin stays the CPU build's.
    # The CUDA fake world (backends/fake:cuda_rank) is in //backends/...; its
    # GPU check program needs only the backends (cuda_dtensor_check, which
    # needs the core, is left to CMake on GPU hosts: tools/gpu_check.sh).
    if bazel build --config=cuda --keep_going --symlink_prefix=/ //backends/... \
        //tests/backends/nccl:nccl_smoke_test //tools/build_info \
        //tests/backends/cuda:cuda_fake_world_check 2>&1 | tee "$log"; then
      echo "//:cuda_configuration_build PASSED"
      passed=$((passed + 1))
    else
      echo "//:cuda_configuration_build FAILED"
      failed=$((failed + 1))
      worst=1
    fi
    tools/disk_space.sh release "$main_output_base"
  fi

  if [[ ${DTENSOR_CONSUMERS:-1} != 0 ]]; then
    stage "build files in sync, and a user's project on the CMake package and on @dtensor"
    { tools/check_build_sync.py && echo "//tools:check_build_sync PASSED" ||
        echo "//tools:check_build_sync FAILED"; } 2>&1 | tee "$log"
    tools/check_consumers.sh 2>&1 | tee -a "$log"
    note_status "${PIPESTATUS[0]}"
    grep -q "check_build_sync FAILED" "$log" && worst=1
    count "$log"
  fi

  # The suites that must build and pass against every supported LibTorch.
  suites=(//tests/core/... //tests/backends/... //tests/examples/...)
  # other_libtorch NAME ENV...: those suites with the LibTorch that ENV selects
  # (Note [Which LibTorch]), in an output base of their own (one per checkout,
  # as Bazel's own): switching LibTorch in the main one would rebuild it all.
  # The disk cache is shared.
  other_libtorch() {
    local name="$1"
    shift
    local base="${DTENSOR_HOME:-$HOME/.cache/dtensor}/bazel-$name-$(pwd | md5sum | cut -c1-8)"
    local bazel=(env -u LIBTORCH -u DTENSOR_LIBTORCH "$@" bazel --output_base="$base")
    "${bazel[@]}" run --symlink_prefix=/ --ui_event_filters=-info,-stdout,-stderr --noshow_progress \
      //tools/build_info || worst=1
    "${bazel[@]}" test --keep_going --cache_test_results=no --test_summary=short --symlink_prefix=/ \
      "${suites[@]}" 2>&1 | tee "$log"
    note_status "${PIPESTATUS[0]}"
    count "$log"
    # The server would hold ~1 GB until CI ends.
    "${bazel[@]}" shutdown
    tools/disk_space.sh release "$base"
  }

  if [[ ${DTENSOR_2_11:-1} != 0 ]]; then
    stage "core, backends and examples against PyTorch 2.11's LibTorch"
    tools/setup.sh pytorch-2.11 || worst=1
    other_libtorch 2.11 LIBTORCH="${DTENSOR_HOME:-$HOME/.cache/dtensor}/libtorch-2.11"
  fi

  if [[ ${DTENSOR_DEBIAN:-1} != 0 ]]; then
    stage "core, backends and examples against Debian's LibTorch 1.13"
    tools/setup.sh debian || worst=1
    other_libtorch debian DTENSOR_LIBTORCH=debian
  fi
fi

echo "targets: ${passed} passed, ${failed} failed"
exit "$worst"
