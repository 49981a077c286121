#!/usr/bin/env bash
# One command for a GPU host with PyTorch installed and no Bazel (README "On a
# GPU host"): builds dtensor with CMake against the installed LibTorch
# (tools/gpu_build.sh), builds the GPU check programs (no GoogleTest needed),
# runs them and the GPU benchmarks, and writes OUT_DIR/report.txt and
# OUT_DIR/report.json with every check and figure.
#   tools/gpu_check.sh OUT_DIR              # build, run, report (< 8 min on 16 cores + H100)
#   tools/gpu_check.sh OUT_DIR --dry-run    # configure + build only, report says so (no GPU needed)
#   tools/gpu_check.sh OUT_DIR --quick      # benchmarks up to 4 MiB, fewer training steps
#   tools/gpu_check.sh OUT_DIR --prebuilt   # run the programs already in BUILD_DIR (built elsewhere
#                                           # against the same PyTorch; their libraries on LD_LIBRARY_PATH)
# A PyPI PyTorch lacks Gloo's headers: run tools/gpu_deps.sh where they are
# installed and bring .gpu-deps/ along (README "On a GPU host").
# Environment: as tools/gpu_build.sh (LIBTORCH, CUDA_HOME, NCCL_ROOT, PYTHON),
# BUILD_DIR (default build-gpu), GPU_CHECK_BUDGET_S (default 450: checks that
# would start later are SKIPPED and running ones are cut there, so the whole
# run stays under 8 minutes). Exit status: 0 when every check passed (or the
# dry run built), 1 otherwise.
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PYTHON="${PYTHON:-python3}"
export BUILD_DIR="${BUILD_DIR:-$ROOT/build-gpu}"
OUT="" DRY=0 QUICK=() PREBUILT=0
while (($#)); do
  case "$1" in
    --dry-run) DRY=1 ;;
    --quick) QUICK=(--quick) ;;
    --prebuilt) PREBUILT=1 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
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
BUDGET_S="${GPU_CHECK_BUDGET_S:-450}"

record() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "${4//$'\t'/ }" >> "$RESULTS"; }

# Runs "$@" with a time limit (cut to what is left of BUDGET_S), its output in
# $OUT/logs/NAME.log; records NAME.
run_check() {
  local name="$1" limit="$2"; shift 2
  local log="$OUT/logs/$name.log" t0 rc left
  t0=$(date +%s)
  left=$(( START + BUDGET_S - t0 ))
  if ((left < 15)); then
    record "$name" SKIPPED 0 "gpu_check's time budget (${BUDGET_S}s) is spent"
    return 0
  fi
  ((limit > left)) && limit=$left
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
built_why="no CUDA LibTorch / CUDA toolkit / NCCL found (logs/build.log)"
if ((PREBUILT)); then
  record build SKIPPED 0 "--prebuilt: the programs in $BUILD_DIR"
  built_why="not in $BUILD_DIR (--prebuilt)"
elif "$ROOT/tools/gpu_build.sh" > "$OUT/logs/build.log" 2>&1; then
  record build PASSED "$(( $(date +%s) - t0 ))" "CMake build in $BUILD_DIR"
else
  record build FAILED "$(( $(date +%s) - t0 ))" "see logs/build.log"
  built_why="the build failed or stopped (logs/build.log)"
fi
for program in cuda_fake_world_check cuda_dtensor_check cuda_async_check cuda_transformer_check \
               cuda_planner_check nccl_smoke_test quickstart dtensor-launch; do
  if [[ -x "$BUILD_DIR/$program" ]]; then
    record "built $program" PASSED 0 "$BUILD_DIR/$program"
  else
    record "built $program" FAILED 0 "not built: $built_why"
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
  run_check cuda_async_check 120 "$BUILD_DIR/cuda_async_check"
  run_check cuda_transformer_check 180 "$BUILD_DIR/cuda_transformer_check"
  # The planner's per-rank peak against the caching allocator's (#37).
  run_check cuda_planner_check 120 "$BUILD_DIR/cuda_planner_check"
  # One line per test of the mini_test output.
  for program in cuda_fake_world_check cuda_dtensor_check cuda_async_check cuda_transformer_check cuda_planner_check; do
    grep -E '^\[ +(OK|FAILED|SKIPPED) +\]' "$OUT/logs/$program.log" 2>/dev/null |
      sed -E 's/^\[ +([A-Z]+) +\] +([^ ]+).*/\2\t\1/' |
      while IFS=$'\t' read -r test status; do
        [[ "$status" == OK ]] && status=PASSED
        record "  $test" "$status" "" "$program"
      done
  done
  grep -o '\[planner\] .*' "$OUT/logs/cuda_planner_check.log" 2>/dev/null |
    while IFS= read -r line; do record "  planner estimate vs CUDA ranks" INFO "" "${line#\[planner\] }"; done
  # Which attention kernel each sharded SDPA ran (Note [Fused attention on CUDA ranks]).
  grep -o 'attention [A-Za-z0-9]* Shard([01]): .*' "$OUT/logs/cuda_dtensor_check.log" 2>/dev/null |
    while IFS= read -r line; do record "  ${line%%:*}" INFO "" "${line#*: }"; done
  run_check nccl_smoke_test 120 "$BUILD_DIR/nccl_smoke_test"
  # The quickstart (the example Transformer, tp + sp, dp) on NCCL with world
  # size 1, under both launchers; --check-against-fake fails the run unless
  # its collectives per phase equal a fake-world run's of the same flags (and
  # the losses agree): see the QUICKSTART_CHECK line in each log.
  qs="$BUILD_DIR/quickstart"
  run_check nccl_ws1_quickstart_dtensor_launch 120 "$BUILD_DIR/dtensor-launch" --nproc 1 -- \
    "$qs" --backend nccl --mesh 1,1 --dtype double --steps 3 --raw --check-against-fake
  run_check nccl_ws1_quickstart_no_sp_dtensor_launch 120 "$BUILD_DIR/dtensor-launch" --nproc 1 -- \
    "$qs" --backend nccl --mesh 1 --no-sp --dtype float --steps 3 --raw --check-against-fake
  run_check nccl_ws1_quickstart_torchrun 120 "$PYTHON" -m torch.distributed.run --standalone \
    --nproc_per_node 1 --no_python "$qs" --backend nccl --mesh 1,1 --dtype double --steps 3 --raw \
    --check-against-fake
  run_check nccl_ws1_quickstart_fsdp 120 "$BUILD_DIR/dtensor-launch" --nproc 1 -- \
    "$qs" --backend nccl --fsdp --mesh 1 --dtype double --steps 3 --raw --check-against-fake
  for name in nccl_ws1_quickstart_dtensor_launch nccl_ws1_quickstart_no_sp_dtensor_launch \
              nccl_ws1_quickstart_torchrun nccl_ws1_quickstart_fsdp; do
    [[ -f "$OUT/logs/$name.log" ]] || continue  # skipped: out of time
    line="$(grep -o 'QUICKSTART_CHECK .*' "$OUT/logs/$name.log" 2>/dev/null | head -1)"
    case "$line" in
      *" PASSED: "*) record "  $name: counts = fake world" PASSED "" "${line#*PASSED: }" ;;
      *" FAILED:"*) record "  $name: counts = fake world" FAILED "" "${line#*FAILED:}" ;;
      *) record "  $name: counts = fake world" FAILED "" "no QUICKSTART_CHECK line (logs/$name.log)" ;;
    esac
  done
  run_check quickstart_cuda_fake_world 120 "$qs" --device cuda --steps 3 --json ""
  # fully_shard on 4 CUDA fake ranks (storage freed and re-allocated through
  # the CUDA caching allocator).
  run_check quickstart_fsdp_cuda_fake_world 120 "$qs" --fsdp --device cuda --dtype double --steps 3 --json ""
  # FSDP + TP (_StridedShard parameters) on 2 x 2 CUDA fake ranks.
  run_check quickstart_fsdp_tp_cuda_fake_world 120 "$qs" --fsdp --mesh 2,2 --device cuda --dtype double \
    --steps 3 --json ""
  # ---- benchmarks (last: the first to be skipped when the budget runs out) ----
  run_check cuda_transformer_bench 120 "$BUILD_DIR/cuda_transformer_check" --bench \
    --json "$OUT/train_bench.jsonl" "${QUICK[@]}"
  run_check cuda_async_bench 120 "$BUILD_DIR/cuda_async_check" --bench \
    --json "$OUT/async_bench.jsonl" "${QUICK[@]}"
  run_check cuda_fake_bench 240 "$check" --bench --json "$OUT/bench.jsonl" "${QUICK[@]}"
fi

# ---- 3. report ---------------------------------------------------------------
"$PYTHON" - "$OUT" "$gpu" "$DRY" "$(( $(date +%s) - START ))" <<'EOF'
import json, os, platform, subprocess, sys
out, gpu, dry, seconds = sys.argv[1], sys.argv[2], sys.argv[3] == "1", int(sys.argv[4])
checks = []
for line in open(os.path.join(out, "results.tsv")):
    name, status, secs, detail = (line.rstrip("\n").split("\t") + ["", "", "", ""])[:4]
    checks.append({"check": name.strip(), "status": status, "seconds": secs, "detail": detail})
def jsonl(name):
    path = os.path.join(out, name)
    return [json.loads(l) for l in open(path) if l.strip()] if os.path.exists(path) else []
bench, train_bench, async_bench = jsonl("bench.jsonl"), jsonl("train_bench.jsonl"), jsonl("async_bench.jsonl")
try:
    import torch
    torch_info = {"torch": torch.__version__, "cuda": torch.version.cuda}
except Exception as e:  # noqa: BLE001
    torch_info = {"torch": "not importable: %s" % e}
failed = [c for c in checks if c["status"].startswith("FAILED")]
doc = {"gpu": gpu or None, "dry_run": dry, "seconds": seconds, "host": platform.node(),
       "cpus": os.cpu_count(), **torch_info, "checks": checks, "benchmarks": bench,
       "training_benchmarks": train_bench, "async_benchmarks": async_bench, "passed": not failed}
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
    if train_bench:
        f.write("\nTransformer training step (tp + sp, float32, Adam) on N fake CUDA ranks vs one GPU\n")
        f.write("%-6s %-12s %12s %12s %8s\n" % ("ranks", "mesh", "fake ms", "1 GPU ms", "ratio"))
        for b in train_bench:
            f.write("%-6d %-12s %12.2f %12.2f %8.2f\n" % (b["ranks"], b["mesh"], b["fake_ms"], b["one_gpu_ms"],
                                                        b["fake_over_one_gpu"]))
    if async_bench:
        f.write("\nredistribute(async_op): all_gather next to a matmul chain, sync vs async\n")
        f.write("%-6s %12s %8s %12s %12s %8s\n" % ("ranks", "gather MiB", "mm n", "sync us", "async us", "ratio"))
        for b in async_bench:
            f.write("%-6d %12.1f %8d %12.1f %12.1f %8.2f\n" % (b["ranks"], b["gathered_mib"], b["matmul_n"],
                                                             b["sync_us"], b["async_us"], b["sync_over_async"]))
print(open(os.path.join(out, "report.txt")).read())
sys.exit(1 if failed else 0)
EOF
