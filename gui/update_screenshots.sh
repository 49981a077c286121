#!/bin/bash
# Regenerates the README screenshots docs/images/viewer_<panel>.png with the
# headless --screenshot mode (needs xvfb-run: Debian package xvfb).
#   gui/update_screenshots.sh            # builds //gui:dtensor_viewer first
set -euo pipefail
cd "$(dirname "$0")/.."
bazel build //gui:dtensor_viewer
viewer="$(bazel info bazel-bin)/gui/dtensor_viewer"
trace=tests/gui/testdata/transformer_divergent_trace.json
out=docs/images
mkdir -p "$out"
shot() {  # shot NAME ARGS...
  local name=$1
  shift
  xvfb-run -a "$viewer" --screenshot "$out/viewer_$name.png" --size 1000x700 "$@"
}
shot mesh --panel mesh --mesh "pp=2, dp=2, tp=2" --tensor "4, 8, 16" --placements "R, S(0), S(2)"
shot layout --panel layout --mesh "dp=2, tp=4" --tensor "12, 10" --placements "R, S(1)"
shot playground --panel playground --mesh "dp=2, tp=2" --tensor "8, 6" \
  --placements "S(0), S(1)" --target "R, S(0)"
shot comm_table --panel comm_table "$trace"
shot timeline --panel timeline "$trace"
origins=tests/gui/testdata/origins_3d_trace.json
shot comm_origins --panel comm_table "$origins" --call 1
shot timeline_implicit --panel timeline "$origins" --implicit-only --call 1
shot mesh_call --panel mesh "$origins" --call 3
shot mesh_4d --panel mesh --mesh "pp=2, dp=2, cp=2, tp=2" --tensor "8, 8" --placements "R, S(0), R, S(1)"
xvfb-run -a "$viewer" --screenshot "$out/viewer_all.png" --size 1280x800 "$trace"
