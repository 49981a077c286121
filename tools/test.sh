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
echo "targets: ${passed} passed, ${failed} failed"
exit "$status"
