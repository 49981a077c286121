#!/usr/bin/env bash
# Builds every benchmark optimised, runs them one after another, writes each
# one's JSON and console output to benchmarks/results/, prints a summary, and
# redraws the plot of BENCHMARKS.md when gnuplot and jq are installed.
#   tools/bench.sh                        # all benches (about 15 minutes on 2 cores)
#   tools/bench.sh --smoke                # tiny sizes: checks that everything runs
#   tools/bench.sh dispatch planner_quality   # a subset, by name
#   tools/bench.sh --callgrind            # instructions per op of dispatch_bench (needs valgrind)
#   tools/bench.sh pytorch                # PyTorch's own DTensor benchmark cases, ours and
#                                         # PyTorch's (its venv, fake process group) side by side
#   tools/bench.sh pytorch --callgrind    # instructions per call of our side of those cases
#   tools/bench.sh fsdp                   # FSDP's host cost per step, ours (fake ranks) and
#                                         # PyTorch's (fully_shard on Gloo processes) side by side
# BAZEL="bazel --output_base=/tmp/ob" tools/bench.sh  uses another output base;
# BENCH_BIN=/path/to/folder tools/bench.sh  runs prebuilt binaries.
# Benchmarks are never tests of time; their numbers go into BENCHMARKS.md.
set -uo pipefail
cd "$(dirname "$0")/.."
BAZEL=${BAZEL:-bazel}
ALL=(dispatch fake_collectives planner_quality solo_scale training_step gloo rank_memory)
smoke=() callgrind=0 names=()
for arg in "$@"; do
  case "$arg" in
    --smoke) smoke=(--smoke) ;;
    --callgrind) callgrind=1 ;;
    -h|--help) sed -n 2,10p "$0"; exit 0 ;;
    *) names+=("$arg") ;;
  esac
done
[ ${#names[@]} -eq 0 ] && names=("${ALL[@]}")
pytorch_side=0 fsdp_side=0
if [ "${names[*]}" = pytorch ]; then pytorch_side=1; names=(pytorch_cases); fi
if [ "${names[*]}" = fsdp ]; then fsdp_side=1; names=(fsdp_host_cost); fi
cg_bench=dispatch_bench cg_args=(--reps 1 --steps 0)
if [ "$callgrind" = 1 ] && [ "$pytorch_side" = 1 ]; then cg_bench=pytorch_cases_bench cg_args=(--reps 1); fi
[ "$callgrind" = 1 ] && names=("${cg_bench%_bench}")
targets=()
for n in "${names[@]}"; do targets+=("//benchmarks:${n}_bench"); done
if [ -n "${BENCH_BIN:-}" ]; then
  bin=$BENCH_BIN  # prebuilt binaries (a folder holding <name>_bench), no build
else
  $BAZEL build -c opt "${targets[@]}" || exit 1
  bin=$($BAZEL info -c opt bazel-bin 2>/dev/null)/benchmarks
fi
out=benchmarks/results
mkdir -p "$out"

if [ "$callgrind" = 1 ]; then
  # Instructions per call of each case: callgrind collects only inside
  # the timed loops (bench::cpu_us_per_call's client requests) and dumps one
  # profile per case and side.
  command -v valgrind >/dev/null || { echo "valgrind is not installed (apt-get install valgrind)"; exit 1; }
  dir=$(mktemp -d)
  iters=${CALLGRIND_ITERS:-500}
  (cd "$dir" && OMP_NUM_THREADS=1 valgrind --tool=callgrind --instr-atstart=no \
      "$bin/$cg_bench" "${cg_args[@]}" --iters "$iters" >/dev/null 2>valgrind.log) || {
    tail "$dir/valgrind.log"; exit 1; }
  printf '%-34s %14s\n' "case | side" "instr/call"
  for f in "$dir"/callgrind.out.*; do
    desc=$(sed -n 's/^desc: Trigger: Client Request: //p' "$f")
    [ -n "$desc" ] || continue
    total=$(sed -n 's/^totals: //p' "$f" | awk '{print $1}')
    n=${desc##*iters=}
    printf '%-34s %14d\n' "${desc% iters=*}" $((total / n))
  done | tee "$out/${cg_bench%_bench}_callgrind.txt"
  rm -rf "$dir"
  exit 0
fi

if [ "$pytorch_side" = 1 ]; then
  # Both sides in one run: ours (solo mode, 256 ranks), then PyTorch's (its
  # fake process group, 256 ranks), the same eight cases and timing.
  python=${DTENSOR_HOME:-$HOME/.cache/dtensor}/python
  "$bin/pytorch_cases_bench" "${smoke[@]}" --json "$out/pytorch_cases.json" || exit 1
  "$python" benchmarks/pytorch_cases.py --json "$out/pytorch_cases_pytorch.json" \
      $([ ${#smoke[@]} -gt 0 ] && echo --iters 20 --reps 1) 2>/dev/null || exit 1
  python3 - "$out/pytorch_cases.json" "$out/pytorch_cases_pytorch.json" <<'PY' | tee "$out/pytorch_cases.txt"
import json, sys
ours = {r["case"]: r for r in json.load(open(sys.argv[1]))["rows"]}
theirs = json.load(open(sys.argv[2]))
print(f"{'case':16} {'ours extra us':>14} {theirs['bench'].split('(')[1][:-1] + ' extra us':>24} {'ratio':>8}")
for r in theirs["rows"]:
    o = ours[r["case"]]["extra_us"]
    print(f"{r['case']:16} {o:14.2f} {r['extra_us']:24.2f} {r['extra_us'] / max(o, 1e-9):7.1f}x")
PY
  exit 0
fi

if [ "$fsdp_side" = 1 ]; then
  # Both sides in one run, the same model, world and definition of host cost
  # (a rank's CPU time per step minus one rank's step without FSDP).
  python=${DTENSOR_HOME:-$HOME/.cache/dtensor}/python
  size=(--layers 32 --world 8)
  [ ${#smoke[@]} -gt 0 ] && size=(--layers 2 --world 2 --steps 1 --reps 1)
  "$bin/fsdp_host_cost_bench" "${size[@]}" --json "$out/fsdp_host_cost.json" | tee "$out/fsdp_host_cost.txt" || exit 1
  "$python" benchmarks/pytorch_fsdp_host_cost.py "${size[@]}" --json "$out/fsdp_host_cost_pytorch.json" \
      | tee -a "$out/fsdp_host_cost.txt"
  [ "${PIPESTATUS[0]}" = 0 ] || { echo "PyTorch's side FAILED"; exit 1; }
  exit 0
fi

status=0
for n in "${names[@]}"; do
  echo "=== $n ==="
  "$bin/${n}_bench" "${smoke[@]}" --json "$out/$n.json" 2>&1 | tee "$out/$n.txt"
  [ "${PIPESTATUS[0]}" = 0 ] || { echo "$n FAILED"; status=1; }
  if [ "$n" = training_step ] && [ ${#smoke[@]} -eq 0 ]; then
    # The model whose arithmetic dominates, as issue #38's 1.5x is about
    # (at dim 64 every rank pays LibTorch's per-op cost: BENCHMARKS.md section 3).
    echo "=== training_step, dim 512, sequence 128 ==="
    "$bin/${n}_bench" --dim 512 --seq-len 128 --json "$out/${n}_512.json" 2>&1 | sed 's/^SUMMARY training/SUMMARY training dim 512,/' \
        | tee "$out/${n}_512.txt"
    [ "${PIPESTATUS[0]}" = 0 ] || { echo "$n (dim 512) FAILED"; status=1; }
  fi
done

echo
echo "=== summary (details: BENCHMARKS.md, $out/*.json) ==="
cat "$out"/*.txt 2>/dev/null | grep '^SUMMARY' | sed 's/^SUMMARY //'

# The plot: fake-world all_reduce GB/s vs message size, with the memcpy line.
if [ -f "$out/fake_collectives.json" ] && command -v gnuplot >/dev/null && command -v jq >/dev/null; then
  for r in 2 4 8; do
    jq -r --argjson r "$r" '.rows[] | select(.table == "throughput" and .collective == "all_reduce"
        and .ranks == $r) | "\(.bytes) \(.world_gbs) \(.memcpy_gbs)"' "$out/fake_collectives.json" \
        > "$out/all_reduce_$r.dat"
  done
  gnuplot <<'GP' && echo "plot: benchmarks/results/fake_all_reduce_gbs.png"
set terminal pngcairo size 800,480 font "sans,10"
set output "benchmarks/results/fake_all_reduce_gbs.png"
set title "Fake world all\\_reduce throughput vs one-thread memcpy (2 cores)"
set logscale x 2
set logscale y 10
set format x "%.0b%B"
set xlabel "bytes per rank"
set ylabel "GB/s (ranks x bytes / time), log scale"
set key top left
set grid
plot "benchmarks/results/all_reduce_2.dat" using 1:2 with linespoints title "2 ranks", \
     "benchmarks/results/all_reduce_4.dat" using 1:2 with linespoints title "4 ranks", \
     "benchmarks/results/all_reduce_8.dat" using 1:2 with linespoints title "8 ranks", \
     "benchmarks/results/all_reduce_8.dat" using 1:3 with lines dt 2 lw 2 title "memcpy (1 thread)"
GP
  rm -f "$out"/all_reduce_*.dat
fi
exit "$status"
