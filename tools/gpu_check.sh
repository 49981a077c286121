#!/usr/bin/env bash
# One command for a GPU host with PyTorch installed and no Bazel (README "On a
# GPU host"): builds dtensor with CMake against the installed LibTorch
# (tools/gpu_build.sh), builds the GPU check programs (no GoogleTest needed),
# runs them and the GPU benchmarks, and writes OUT_DIR/report.txt and
# OUT_DIR/report.json with every check and figure.
#   tools/gpu_check.sh OUT_DIR              # build, run, report (< 8 min on 16 cores + H100)
#   tools/gpu_check.sh OUT_DIR --dry-run    # configure + build only, report says so (no GPU needed)
#   tools/gpu_check.sh OUT_DIR --quick      # benchmarks up to 4 MiB only
# Environment: as tools/gpu_build.sh (LIBTORCH, CUDA_HOME, NCCL_ROOT, PYTHON),
# BUILD_DIR (default build-gpu). Exit status: 0 when every check passed (or
# the dry run built), 1 otherwise.
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PYTHON="${PYTHON:-python3}"
export BUILD_DIR="${BUILD_DIR:-$ROOT/build-gpu}"
OUT="" DRY=0 QUICK=()
while (($#)); do
  case "$1" in
    --dry-run) DRY=1 ;;
    --quick) QUICK=(--quick) ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    -*) echo "gpu_check: unknown option $1" >&2; exit 2 ;;
    *) OUT="$1" ;;
  esac
  shift
done
[[ -n "$OUT" ]] || { echo "usage: tools/gpu_check.sh OUT_DIR [--dry-run] [--quick]" >&2; exit 2; }
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
RESULTS="$OUT/results.tsv"   # check<TAB>status<TAB>seconds<TAB>detail
: > "$RESULTS"
START=$(date +%s)

record() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "${4//$'\t'/ }" >> "$RESULTS"; }

# Runs "$@" with a time limit, its output in $OUT/logs/NAME.log; records NAME.
run_check() {
  local name="$1" limit="$2"; shift 2
  local log="$OUT/logs/$name.log" t0 rc
  t0=$(date +%s)
  timeout "$limit" "$@" > "$log" 2>&1
  rc=$?
  local status=PASSED
  ((rc == 0)) || status=FAILED
  ((rc == 124)) && status="FAILED (timeout ${limit}s)"
  record "$name" "$status" "$(( $(date +%s) - t0 ))" "exit $rc, log logs/$name.log"
  return $rc
}
mkdir -p "$OUT/logs"

# ---- 1. build ----------------------------------------------------------------
if command -v ninja > /dev/null && [[ ! -f "$BUILD_DIR/CMakeCache.txt" ]]; then
  export CMAKE_GENERATOR=Ninja
fi
t0=$(date +%s)
if "$ROOT/tools/gpu_build.sh" > "$OUT/logs/build.log" 2>&1; then
  record build PASSED "$(( $(date +%s) - t0 ))" "CMake build in $BUILD_DIR"
else
  record build FAILED "$(( $(date +%s) - t0 ))" "see logs/build.log"
fi
for program in cuda_fake_world_check cuda_dtensor_check nccl_smoke_test; do
  if [[ -x "$BUILD_DIR/$program" ]]; then
    record "built $program" PASSED 0 "$BUILD_DIR/$program"
  else
    record "built $program" FAILED 0 "not built: no CUDA LibTorch / CUDA toolkit / NCCL found (logs/build.log)"
  fi
done

# ---- 2. run ------------------------------------------------------------------
gpu="$("$PYTHON" -c 'import torch; print(torch.cuda.get_device_name(0) if torch.cuda.is_available() else "")' 2>/dev/null)"
if ((DRY)) || [[ -z "$gpu" ]]; then
  why="dry run"; [[ -z "$gpu" ]] && why="no GPU visible to PyTorch"
  record "gpu checks" SKIPPED 0 "$why: built only, nothing ran"
else
  check="$BUILD_DIR/cuda_fake_world_check"
  run_check cuda_fake_world_check 300 "$check"
  run_check cuda_dtensor_check 120 "$BUILD_DIR/cuda_dtensor_check"
  # One line per test of the mini_test output.
  cat "$OUT/logs/cuda_fake_world_check.log" "$OUT/logs/cuda_dtensor_check.log" 2>/dev/null |
    grep -E '^\[ +(OK|FAILED|SKIPPED) +\]' |
    sed -E 's/^\[ +([A-Z]+) +\] +([^ ]+).*/\2\t\1/' |
    while IFS=$'\t' read -r test status; do
      [[ "$status" == OK ]] && status=PASSED
      record "  $test" "$status" "" "cuda_fake_world_check"
    done
  run_check cuda_fake_bench 240 "$check" --bench --json "$OUT/bench.jsonl" "${QUICK[@]}"
  run_check nccl_smoke_test 120 "$BUILD_DIR/nccl_smoke_test"
fi

# ---- 3. report ---------------------------------------------------------------
"$PYTHON" - "$OUT" "$gpu" "$DRY" "$(( $(date +%s) - START ))" <<'EOF'
import json, os, platform, subprocess, sys
out, gpu, dry, seconds = sys.argv[1], sys.argv[2], sys.argv[3] == "1", int(sys.argv[4])
checks = []
for line in open(os.path.join(out, "results.tsv")):
    name, status, secs, detail = (line.rstrip("\n").split("\t") + ["", "", "", ""])[:4]
    checks.append({"check": name.strip(), "status": status, "seconds": secs, "detail": detail})
bench = []
path = os.path.join(out, "bench.jsonl")
if os.path.exists(path):
    bench = [json.loads(l) for l in open(path) if l.strip()]
try:
    import torch
    torch_info = {"torch": torch.__version__, "cuda": torch.version.cuda}
except Exception as e:  # noqa: BLE001
    torch_info = {"torch": "not importable: %s" % e}
failed = [c for c in checks if c["status"].startswith("FAILED")]
doc = {"gpu": gpu or None, "dry_run": dry, "seconds": seconds, "host": platform.node(),
       "cpus": os.cpu_count(), **torch_info, "checks": checks, "benchmarks": bench,
       "passed": not failed}
json.dump(doc, open(os.path.join(out, "report.json"), "w"), indent=2)
with open(os.path.join(out, "report.txt"), "w") as f:
    f.write("dtensor gpu_check: %s\n" % ("PASSED" if not failed else "FAILED (%d)" % len(failed)))
    f.write("GPU: %s%s\n" % (gpu or "none (no GPU)", "  [dry run: built only]" if dry else ""))
    f.write("torch %s, CUDA %s, %s CPUs, %d s\n\n" % (torch_info.get("torch"), torch_info.get("cuda"),
                                                      os.cpu_count(), seconds))
    for c in checks:
        f.write("%-48s %-22s %6s  %s\n" % (c["check"], c["status"], c["seconds"], c["detail"]))
    if bench:
        f.write("\nfake collectives on CUDA ranks vs a device-to-device copy of the same bytes\n")
        f.write("%-16s %6s %12s %12s %12s %8s\n" % ("collective", "ranks", "bytes", "fake us", "copy us", "ratio"))
        for b in bench:
            f.write("%-16s %6d %12d %12.1f %12.1f %8.2f\n" % (b["collective"], b["ranks"], b["bytes"],
                                                            b["fake_us"], b["d2d_copy_us"], b["ratio"]))
print(open(os.path.join(out, "report.txt")).read())
sys.exit(1 if failed else 0)
EOF
