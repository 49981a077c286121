#!/usr/bin/env bash
# Builds libdtensor (with the NCCL backend), dtensor-launch and the NCCL smoke
# test with the repository's CMake build, for GPU hosts without Bazel. Uses the
# LibTorch inside the installed PyTorch unless LIBTORCH is set.
#   tools/gpu_build.sh                      # build into build-gpu/
#   tools/gpu_build.sh --run                # ... then run the smoke test on one GPU
#   tools/gpu_build.sh --run --nproc 2      # ... as 2 ranks on 2 GPUs (dtensor-launch)
# Environment: LIBTORCH, TORCH_CXX11_ABI (0/1), CUDA_HOME (default /usr/local/cuda),
# NCCL_ROOT, BUILD_DIR (default build-gpu), PYTHON (default python3).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PYTHON="${PYTHON:-python3}"
BUILD_DIR="${BUILD_DIR:-$ROOT/build-gpu}"
CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}"
RUN=0
NPROC=1

while (($#)); do
  case "$1" in
    --run) RUN=1 ;;
    --nproc) NPROC="$2"; shift ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "gpu_build: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done

py() { "$PYTHON" -c "$1" 2>/dev/null; }

# The PyTorch package directory holds include/ and lib/ of its LibTorch.
TORCH_PKG="$(py 'import torch, os; print(os.path.dirname(torch.__file__))' || true)"
if [[ -z "${LIBTORCH:-}" ]]; then
  if [[ -z "$TORCH_PKG" ]]; then
    echo "gpu_build: set LIBTORCH=<dir with include/ and lib/> (no importable torch in $PYTHON)" >&2
    exit 1
  fi
  LIBTORCH="$TORCH_PKG"
fi

# -D_GLIBCXX_USE_CXX11_ABI must match how LibTorch was built.
if [[ -z "${TORCH_CXX11_ABI:-}" && -n "$TORCH_PKG" && "$(realpath "$LIBTORCH")" == "$(realpath "$TORCH_PKG")" ]]; then
  TORCH_CXX11_ABI="$(py 'import torch; print(int(torch._C._GLIBCXX_USE_CXX11_ABI))' || true)"
fi

# Prefer the NCCL that PyTorch itself loads (pip's nvidia-nccl), so that one
# process does not mix two NCCL versions.
if [[ -z "${NCCL_ROOT:-}" ]]; then
  NCCL_ROOT="$(py 'import nvidia.nccl as n; print(list(n.__path__)[0])' || true)"
fi

# Headers a GPU host may lack (Gloo's, nlohmann/json): tools/gpu_deps.sh
# copies them here from a machine that has them.
if [[ -d "$ROOT/.gpu-deps/include" ]]; then
  export CMAKE_INCLUDE_PATH="$ROOT/.gpu-deps/include${CMAKE_INCLUDE_PATH:+:$CMAKE_INCLUDE_PATH}"
fi

echo "gpu_build: LIBTORCH=$LIBTORCH ABI=${TORCH_CXX11_ABI:-auto} CUDA_HOME=$CUDA_HOME NCCL_ROOT=${NCCL_ROOT:-auto}"
cmake -S "$ROOT" -B "$BUILD_DIR" -DDTENSOR_WITH_VIEWER=OFF \
  -DLIBTORCH="$LIBTORCH" \
  -DTORCH_CXX11_ABI="${TORCH_CXX11_ABI:-}" \
  -DCUDAToolkit_ROOT="$CUDA_HOME" \
  -DNCCL_ROOT="${NCCL_ROOT:-}"
cmake --build "$BUILD_DIR" -j "$(nproc)"

if ((RUN)); then
  if [[ ! -x "$BUILD_DIR/nccl_smoke_test" ]]; then
    echo "gpu_build: nccl_smoke_test was not built (no CUDA toolkit or NCCL found)" >&2
    exit 1
  fi
  if ((NPROC > 1)); then
    exec "$BUILD_DIR/dtensor-launch" --nproc "$NPROC" -- "$BUILD_DIR/nccl_smoke_test"
  fi
  exec "$BUILD_DIR/nccl_smoke_test"
fi
echo "gpu_build: built in $BUILD_DIR; run $BUILD_DIR/nccl_smoke_test"
