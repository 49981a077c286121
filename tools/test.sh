#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine (Debian packages only) and runs every test.
#   tools/test.sh                   # all tests that need no GPU
#   tools/test.sh //tests/core/...  # a subset
set -uo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh || exit 1
log=$(mktemp)
# --keep_going: report every failing test, not just the first.
# --cache_test_results=no: a test run runs the tests (objects still come from the disk cache).
bazel test --keep_going --cache_test_results=no --test_summary=short "${@:-//...}" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
passed=$(grep -cE '^//[^ ]+ +PASSED' "$log")
failed=$(grep -cE '^//[^ ]+ +(FAILED|TIMEOUT|NO STATUS|FAILED TO BUILD|INCOMPLETE)' "$log")
rm -f "$log"
# A full run (no targets given) also runs the ASan+UBSan subset; see tools/sanitize.sh.
# DTENSOR_SANITIZE=0 skips it.
san_status=0
if (($# == 0)) && [[ ${DTENSOR_SANITIZE:-1} != 0 ]]; then
  san_log=$(mktemp)
  tools/sanitize.sh ci 2>&1 | tee "$san_log"
  san_status=${PIPESTATUS[0]}
  passed=$((passed + $(grep -cE '^//[^ ]+ +PASSED' "$san_log")))
  failed=$((failed + $(grep -cE '^//[^ ]+ +(FAILED|TIMEOUT|NO STATUS|FAILED TO BUILD|INCOMPLETE)' "$san_log")))
  rm -f "$san_log"
fi
echo "targets: ${passed} passed, ${failed} failed"
((status != 0)) && exit "$status"
exit "$san_status"
