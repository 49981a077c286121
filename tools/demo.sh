#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine (Debian packages only) and runs the main demo.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
bazel run //examples:sharding_layouts
