#!/usr/bin/env bash
# Installs the Debian packages dtensor builds and tests with. Idempotent: it
# asks apt only for what is missing, so a second run does nothing.
#   tools/setup.sh            # as root, or with sudo available
set -euo pipefail

PACKAGES=(
  bazel-bootstrap            # Bazel 4.2.3, offline (shims in third_party/)
  g++ libtorch-dev           # LibTorch 1.13 (CPU): tensors, autograd, c10d
  libgloo-dev                # Gloo for c10d's ProcessGroupGloo
  python3-torch              # torchrun, to launch multi-process Gloo runs
  libimgui-dev libglfw3-dev libstb-dev libgl-dev   # viewer
  nlohmann-json3-dev libfmt-dev
  googletest libgmock-dev libbenchmark-dev
  xvfb xauth libgl1-mesa-dri fonts-dejavu-core  # headless viewer tests, font
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "setup: all ${#PACKAGES[@]} packages present"
  exit 0
fi

SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
