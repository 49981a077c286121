#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine (tools/setup.sh) and runs the main
# demo: sharding layouts, then the quickstart (the test Transformer trained
# with tensor + sequence + data parallelism on 4 fake ranks).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
bazel run //examples:sharding_layouts
bazel run //examples:quickstart -- --json "$PWD/comm_trace.json"
echo "Open the trace in the viewer: bazel run //gui:dtensor_viewer -- $PWD/comm_trace.json"
