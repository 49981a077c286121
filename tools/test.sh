#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine (Debian packages only) and runs every test.
#   tools/test.sh                 # all tests that need no GPU
#   tools/test.sh //tests/core/...  # a subset
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
# --keep_going: report every failing test, not just the first.
bazel test --keep_going "${@:-//...}"
