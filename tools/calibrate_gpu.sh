#!/usr/bin/env bash
# Measures what the GPU at hand achieves on the kernels the capacity planner
# costs (tools/calibrate/calibrate_gpu.cc) and writes a calibration file
# (Note [Calibration file format] in planner/calibration.h). For GPU hosts
# without Bazel: builds with CMake through tools/gpu_build.sh (environment as
# there), unless --prebuilt names programs already built against this PyTorch.
#   tools/calibrate_gpu.sh OUT.calib              # build, then < 1 minute on an H100
#   tools/calibrate_gpu.sh OUT.calib --prebuilt   # BUILD_DIR's calibrate_gpu as it is
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
export BUILD_DIR="${BUILD_DIR:-$ROOT/build-gpu}"
OUT="" PREBUILT=0
while (($#)); do
  case "$1" in
    --prebuilt) PREBUILT=1 ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    -*) echo "calibrate_gpu: unknown option $1" >&2; exit 2 ;;
    *) OUT="$1" ;;
  esac
  shift
done
[[ -n "$OUT" ]] || { echo "usage: tools/calibrate_gpu.sh OUT.calib [--prebuilt]" >&2; exit 2; }
((PREBUILT)) || "$ROOT/tools/gpu_build.sh"
[[ -x "$BUILD_DIR/calibrate_gpu" ]] || {
  echo "calibrate_gpu: $BUILD_DIR/calibrate_gpu was not built (no CUDA LibTorch or toolkit found)" >&2
  exit 1
}
exec "$BUILD_DIR/calibrate_gpu" "$OUT"
