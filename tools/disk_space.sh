#!/usr/bin/env bash
# Keeps tools/test.sh from running out of disk (Note [Disk space of a test run]).
#   tools/disk_space.sh prepare               # before a run: prune, then check
#   tools/disk_space.sh release OUTPUT_BASE   # after a Bazel command: drop its sandboxes
# Environment: DTENSOR_HOME (default ~/.cache/dtensor), DTENSOR_MIN_FREE_GIB
# (default 16 for a checkout Bazel has not built yet, else 6),
# DTENSOR_DISK_CACHE_GIB (default 10).
#
# Note [Disk space of a test run]
# CI and every session share one disk, and a run that fills it fails late and
# obscurely (a CI run died in its 2.11 stage with "No space left on device",
# exit 141 from tee). Three things grew without bound:
#   - Debian's Bazel 4.2.3 deletes no sandbox directory until its server
#     restarts. A compile's sandbox is ~45 MB (9,300 symlinks to LibTorch's
#     headers, one 4 KiB block each), so one cold build left ~8 GB per output
#     base. .bazelrc now compiles outside the sandbox (the undeclared-inclusion
#     check still runs), and `release` removes what tests leave.
#   - Output bases of checkouts that no longer exist (fresh clones in /tmp),
#     removed once unused for two days.
#   - The disk cache, which Bazel 4 never trims: `prepare` drops the least
#     recently used entries above DTENSOR_DISK_CACHE_GIB.
# Then `prepare` fails at once, naming the biggest directories, when less is
# free than the run needs: 16 GiB when this checkout has no output base yet
# (measured: a full run in a fresh clone left 5.7 GB of output bases and
# CMake build and grew the disk cache by 0.7 GB; an empty HOME adds the
# venvs, 3.8 GB, and a 5 GB disk cache), else 6 GiB; DTENSOR_MIN_FREE_GIB
# overrides.
set -euo pipefail

DTENSOR_HOME="${DTENSOR_HOME:-$HOME/.cache/dtensor}"
gib=$((1024 * 1024 * 1024))

free_bytes() { df --output=avail -B1 "$1" | tail -1 | tr -d ' '; }

# The workspace an output base serves, from the README Bazel writes into it.
workspace_of() { sed -n 's/^WORKSPACE: //p' "$1/README" 2>/dev/null | head -1; }

release() {
  local base="$1"
  # Safe while the server is idle: the next command recreates the directory.
  [[ -d "$base/sandbox" ]] && rm -rf "$base/sandbox"
  return 0
}

prune_stale_output_bases() {
  local base ws
  for base in "$HOME"/.cache/bazel/_bazel_*/*/ "$DTENSOR_HOME"/bazel-*-*/; do
    [[ -f "$base/README" ]] || continue
    ws=$(workspace_of "$base")
    # Two days unused: another mount namespace (CI's checkout) may see a path
    # this one does not, and runs there at least daily.
    if [[ -n "$ws" && ! -d "$ws" ]] && [[ -z $(find "$base" -maxdepth 1 -name command.log -mtime -2) ]]; then
      echo "disk: removing the output base of $ws (checkout gone): $(du -sh "$base" | cut -f1)"
      # A server may still run there (a killed session's): stop it first.
      (cd / && bazel --output_base="$base" shutdown > /dev/null 2>&1) || true
      chmod -R u+w "$base" 2>/dev/null || true
      rm -rf "$base"
    fi
  done
}

trim_disk_cache() {
  local cache="$DTENSOR_HOME/bazel-disk" cap=$((${DTENSOR_DISK_CACHE_GIB:-10} * gib))
  [[ -d "$cache" ]] || return 0
  local total
  total=$(du -sb "$cache" | cut -f1)
  ((total > cap)) || return 0
  echo "disk: trimming the disk cache from $((total / gib)) GiB to $((cap / gib)) GiB"
  # Oldest access first; delete until under the cap.
  find "$cache" -type f -printf '%A@ %s %p\n' | sort -n |
    while read -r _ size path; do
      ((total <= cap)) && break
      rm -f "$path"
      total=$((total - size))
    done || true  # sort is cut off (SIGPIPE) when the loop stops early
}

prepare() {
  prune_stale_output_bases
  trim_disk_cache
  # Bazel's own output base of this checkout (md5 of its path): present, the
  # run is warm and needs little; absent, it builds everything.
  local need_gib=16 free
  [[ -d "$HOME/.cache/bazel/_bazel_$(id -un)/$(pwd | tr -d '\n' | md5sum | cut -c1-32)" ]] && need_gib=6
  need_gib=${DTENSOR_MIN_FREE_GIB:-$need_gib}
  free=$(free_bytes "$DTENSOR_HOME")
  echo "disk: $((free / gib)) GiB free on $(df --output=target "$DTENSOR_HOME" | tail -1), $need_gib GiB needed"
  if ((free < need_gib * gib)); then
    echo "disk: ERROR: $need_gib GiB must be free for this test run; the biggest users:" >&2
    du -xsh /tmp/* "$HOME"/.cache/* "$DTENSOR_HOME"/* 2>/dev/null | sort -h | tail -8 >&2
    echo "disk: free space (remove old clones or caches), or set DTENSOR_MIN_FREE_GIB" >&2
    return 1
  fi
}

mkdir -p "$DTENSOR_HOME"
case "${1:-}" in
  prepare) prepare ;;
  release) shift; for b in "$@"; do release "$b"; done ;;
  *) echo "usage: tools/disk_space.sh prepare | release OUTPUT_BASE..." >&2; exit 2 ;;
esac
