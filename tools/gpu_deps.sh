#!/usr/bin/env bash
# Copies the headers the CMake build needs beyond LibTorch's (Gloo's, which
# c10d's ProcessGroupGloo.hpp includes and the PyPI wheel does not ship, and
# nlohmann/json) from this machine into .gpu-deps/include (git-ignored), for a
# GPU host that has PyTorch, CMake and nvcc but no Debian dev packages and no
# network. tools/gpu_build.sh searches .gpu-deps/include when it exists.
#   tools/gpu_deps.sh        # here, after tools/setup.sh; then copy or carry .gpu-deps
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DEST="$ROOT/.gpu-deps/include"
rm -rf "$DEST"
mkdir -p "$DEST"
for header in gloo/algorithm.h nlohmann/json.hpp; do
  dir="/usr/include/${header%%/*}"
  [[ -f "/usr/include/$header" ]] || { echo "gpu_deps: /usr/include/$header missing (run tools/setup.sh)" >&2; exit 1; }
  cp -r "$dir" "$DEST/"
done
echo "gpu_deps: $(du -sh "$DEST" | cut -f1) of headers in $DEST"
