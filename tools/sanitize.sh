#!/usr/bin/env bash
# Runs test subsets under the sanitizer configs of .bazelrc (asan_ubsan, tsan)
# and prints a `sanitizers: N passed, M failed` line. tools/test.sh calls it
# with `ci` after the main run; the other sets are for people (slower).
#   tools/sanitize.sh            # = ci: ASan+UBSan on the fake world, layout, reliability suites
#   tools/sanitize.sh tsan       # TSan on the fake/solo world and reliability threading suites
#   tools/sanitize.sh full       # ASan+UBSan on tests/backends, tests/core, tests/reliability
#   tools/sanitize.sh asan //tests/core:redistribute_test   # one config, your targets
# Suppressions and runtime options: tools/sanitizers/README.md.
set -uo pipefail
cd "$(dirname "$0")/.."

# ASan+UBSan in CI: the fake world (threads, rendezvous, abort paths), the pure
# layout code and planner, and the reliability suites that drive redistribute
# through core/ on the fake world. Chosen to stay under ~15 min on 2 cores
# with a warm disk cache (figures in tools/sanitizers/README.md).
CI_TARGETS=(
  //tests/backends:fake_world_test
  //tests/backends:fake_world_failure_test
  //tests/backends:solo_world_test
  //tests/layout/...
  //tests/core:redistribute_counts_test
  //tests/core:dtensor_smoke_test
  //tests/core/fsdp:fully_shard_test
  //tests/reliability:planner_property_test
  //tests/reliability:fake_world_injection_test
  //tests/reliability:redistribute_property_test
  //tests/reliability:strided_shard_property_test
  //tests/reliability:bad_input_sweep_test
  //tests/reliability:fuzz_corpus_test
)
TSAN_TARGETS=(
  //tests/backends:fake_world_test
  //tests/backends:fake_world_failure_test
  //tests/backends:fake_world_stress_test
  //tests/backends:solo_world_test
  //tests/reliability:fake_world_injection_test
)
FULL_TARGETS=(//tests/backends/... //tests/core/... //tests/reliability/...)

set_name=${1:-ci}
shift || true
case $set_name in
  ci) config=asan_ubsan; targets=("${CI_TARGETS[@]}") ;;
  full) config=asan_ubsan; targets=("${FULL_TARGETS[@]}") ;;
  tsan) config=tsan; targets=("${TSAN_TARGETS[@]}") ;;
  asan|ubsan|asan_ubsan) config=$set_name; targets=("$@") ;;
  *) echo "usage: tools/sanitize.sh [ci|full|tsan|asan|ubsan|asan_ubsan TARGETS...]" >&2; exit 2 ;;
esac
if [[ $set_name == tsan && $# -gt 0 ]]; then targets=("$@"); fi
((${#targets[@]})) || { echo "tools/sanitize.sh: no targets" >&2; exit 2; }

# Runtime options that name files: suppression paths must be absolute, since
# a test runs in its runfiles tree (the rest of the options are in .bazelrc).
supp="$PWD/tools/sanitizers"
case $config in
  tsan) env=(--test_env=TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=$supp/tsan.supp) ;;
  *) env=(--test_env=LSAN_OPTIONS=suppressions=$supp/lsan.supp:print_suppressions=0
          --test_env=UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:suppressions=$supp/ubsan.supp) ;;
esac

log=$(mktemp)
start=$(date +%s)
# Manual (GPU) tests stay out, as in tools/test.sh's `//...`.
# DTENSOR_BAZEL_STARTUP: startup flags, e.g. --output_base=/tmp/ob (unset in CI).
# shellcheck disable=SC2086
# --symlink_prefix=/: no bazel-bin symlink, so it keeps pointing at the main
# build's outputs (the README runs bazel-bin/gui/dtensor_viewer after a test run).
bazel ${DTENSOR_BAZEL_STARTUP:-} test --config="$config" "${env[@]}" --keep_going --symlink_prefix=/ \
  --cache_test_results=no --test_summary=short --test_tag_filters=-manual -- "${targets[@]}" \
  2>&1 | tee "$log"
status=${PIPESTATUS[0]}
passed=$(grep -cE '^//[^ ]+ +PASSED' "$log")
failed=$(grep -cE '^//[^ ]+ +(FAILED|TIMEOUT|NO STATUS|FAILED TO BUILD|INCOMPLETE)' "$log")
rm -f "$log"
echo "sanitizers ($config, $set_name, $(( $(date +%s) - start )) s): ${passed} passed, ${failed} failed"
exit "$status"
