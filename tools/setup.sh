#!/usr/bin/env bash
# Installs what dtensor builds and tests with: Debian's packages (Bazel,
# GoogleTest, the viewer's libraries) and PyTorch 2.15 from PyPI (its LibTorch
# is the default build; its Python is the reference the differential tests
# are recorded with). Idempotent: a second run installs nothing.
#   tools/setup.sh            # as root, or with sudo available
#   tools/setup.sh debian     # also Debian's LibTorch 1.13 and torchrun 1.13, for
#                             # the DTENSOR_LIBTORCH=debian build (tools/test.sh's
#                             # last stage; ~200 more packages the demo never needs)
#   tools/setup.sh pytorch-2.11   # also PyTorch 2.11 in its own venv, linked at
#                                 # $DTENSOR_HOME/libtorch-2.11: tools/test.sh's 2.11
#                                 # stage builds with it (the LibTorch of the GPU hosts),
#                                 # and it records the 2.11 goldens (tests/diff)
# Environment: DTENSOR_HOME (default ~/.cache/dtensor), PYTHON (default python3).
# See Note [LibTorch from the PyPI wheel].
set -euo pipefail

PACKAGES=(
  bazel-bootstrap            # Bazel 4.2.3, offline (shims in third_party/)
  g++ python3-venv cmake ninja-build ccache   # the CMake package (tools/check_consumers.sh)
  libgloo-dev                # Gloo headers for c10d's ProcessGroupGloo.hpp
  libimgui-dev libglfw3-dev libstb-dev libgl-dev   # viewer
  nlohmann-json3-dev
  googletest libgmock-dev libbenchmark-dev
  xvfb xauth libgl1-mesa-dri fonts-dejavu-core  # headless viewer tests, font
)
case "${1:-}" in
  "") ;;
  debian)
    PACKAGES+=(
      libtorch-dev           # Debian's LibTorch 1.13 (CPU): DTENSOR_LIBTORCH=debian
      python3-torch          # torchrun 1.13, for the DTENSOR_LIBTORCH=debian build
    ) ;;
  pytorch-2.11) ;;
  *) echo "usage: tools/setup.sh [debian | pytorch-2.11]" >&2; exit 2 ;;
esac

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "setup: all ${#PACKAGES[@]} Debian packages present"
else
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Note [LibTorch from the PyPI wheel]
# PyPI's torch wheels for Linux (2.11, 2.15) are CUDA 13.0 builds; each holds a whole
# LibTorch (torch/include, torch/lib, torch/share/cmake). It goes into a
# virtual environment outside the repository, with --no-deps:
#   - the C++ CPU build links only libtorch_cpu and libc10, which need nothing
#     from the wheel's dependencies (libtorch_cpu's libcudart.so.13 and
#     libcupti.so.13 come from the machine's CUDA 13 toolkit);
#   - `import torch` (the differential tests, torchrun) also loads
#     libtorch_cuda, which needs cuSPARSELt, NVSHMEM and cuFile on top of the
#     toolkit: small wheels, not the 3 GB of cuDNN/cuBLAS wheels the full
#     dependency list would download again. 2.15's libtorch_cuda also needs
#     NCCL 2.30, newer than the toolkit's 2.28: its nvidia-nccl wheel is
#     installed, and @libtorch//:nccl links that one (Note [One NCCL]);
#   - the pure-Python dependencies (sympy, networkx, ...) are installed as usual.
# ~2.1 GB on disk, ~40 s on this machine. $DTENSOR_HOME/libtorch links to the
# default wheel's torch/ directory: third_party/system_libs.bzl builds against it.
DTENSOR_HOME="${DTENSOR_HOME:-$HOME/.cache/dtensor}"

# install_torch VERSION CUDA_WHEEL...: PyTorch VERSION into
# $DTENSOR_HOME/venv-torch-VERSION, --no-deps, with the small CUDA wheels its
# libtorch_cuda needs to load and its pure-Python dependencies.
install_torch() {
  local version="$1" venv="$DTENSOR_HOME/venv-torch-$1"
  shift
  local got
  got="$("$venv/bin/python" -c 'import torch; print(torch.__version__.split("+")[0])' 2>/dev/null || true)"
  if [[ $got == "$version" ]]; then
    echo "setup: PyTorch $version present in $venv"
    return
  fi
  echo "setup: installing PyTorch $version (LibTorch and Python) into $venv"
  mkdir -p "$DTENSOR_HOME"
  "${PYTHON:-python3}" -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check --no-deps "torch==$version" "$@"
  # --no-warn-conflicts: pip would list torch's CUDA wheels left out above
  # as "ERROR: ... dependency conflicts"; leaving them out is the point.
  "$venv/bin/pip" install -q --disable-pip-version-check --no-warn-conflicts filelock "typing-extensions>=4.13" \
    "sympy>=1.13.3" "networkx>=2.5.1" jinja2 "fsspec>=0.8.5" "setuptools>=77,<82" numpy
  got="$("$venv/bin/python" -c 'import torch; print(torch.__version__.split("+")[0])')" ||
    { echo "setup: import torch failed in $venv" >&2; exit 1; }
  [[ $got == "$version" ]] || { echo "setup: got torch $got, wanted $version" >&2; exit 1; }
}

# link_torch PYTHON LINK: LINK -> the torch/ directory of PYTHON's PyTorch.
link_torch() {
  local dir
  dir="$("$1" -c 'import os, torch; print(os.path.dirname(torch.__file__))')"
  if [[ "$(readlink "$2" || true)" != "$dir" ]]; then
    ln -sfn "$dir" "$2"
  fi
}

TORCH_VERSION=2.15.0
VENV="$DTENSOR_HOME/venv-torch-$TORCH_VERSION"
PY="$VENV/bin/python"
install_torch "$TORCH_VERSION" "nvidia-cusparselt-cu13==0.8.1" "nvidia-nvshmem-cu13==3.7.2" "nvidia-nccl-cu13==2.30.7" \
  nvidia-cufile
if [[ ${1:-} == pytorch-2.11 ]]; then
  # 2.11's libtorch_cuda loads the toolkit's NCCL 2.28.
  install_torch 2.11.0 "nvidia-cusparselt-cu13==0.8.0" "nvidia-nvshmem-cu13==3.4.5" nvidia-cufile
  link_torch "$DTENSOR_HOME/venv-torch-2.11.0/bin/python" "$DTENSOR_HOME/libtorch-2.11"
fi
# Python's safetensors reads our checkpoints in tests/core:checkpoint_test.
"$PY" -c 'import safetensors' 2>/dev/null ||
  "$VENV/bin/pip" install -q --disable-pip-version-check --no-deps "safetensors==0.8.0"
# PyTorch's DTensor test Transformer (tools/bench.sh fsdp, the FSDP
# differential runner) imports torch.testing._internal, which needs it.
"$PY" -c 'import expecttest' 2>/dev/null ||
  "$VENV/bin/pip" install -q --disable-pip-version-check --no-deps "expecttest==0.3.0"
# $DTENSOR_HOME/python runs the venv's interpreter, for tests (DTENSOR_PYTHON).
# A script, not a link: a venv is found next to the path Python was run by.
rm -f "$DTENSOR_HOME/python"
printf '#!/bin/sh\nexec "%s" "$@"\n' "$PY" >"$DTENSOR_HOME/python"
chmod +x "$DTENSOR_HOME/python"
link_torch "$PY" "$DTENSOR_HOME/libtorch"
