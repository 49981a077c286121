#!/usr/bin/env bash
# Runs every failure and kill test RUNS times (default 30) while BUSY busy
# loops (default 4) load the cores: a failure test must pass whatever the
# scheduling, within its own timeouts. Not part of CI (about half an hour).
#   tools/stress_failures.sh          # 30 runs of //tests:failure_tests
#   tools/stress_failures.sh 5        # 5 runs
# Ends with bazel's summary: each target's runs passed or how many failed.
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-30}"
busy="${BUSY:-4}"
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true' EXIT
for _ in $(seq "$busy"); do
  (while :; do :; done) &
  pids+=($!)
done
echo "stress: $busy busy loops on $(nproc) cores, $runs runs per test ($(date +%T))"
bazel test --runs_per_test="$runs" --cache_test_results=no --test_output=errors \
  --test_summary=detailed //tests:failure_tests
echo "stress: done ($(date +%T))"
