#!/usr/bin/env bash
# Regenerates the differential-test goldens with real PyTorch (tests/diff/README.md):
# the corpus (generate_programs.py: 8 shards of op programs, a 9th of
# structured ones), PyTorch's records (pytorch_runner.py, one process per
# shard, in parallel), and known_divergences.txt (diff_runner).
#   tests/diff/regenerate_goldens.sh            # PYTHON defaults to the venv of tools/setup.sh
#   PYTHON=/path/to/python SEED=18 COUNT=2400 tests/diff/regenerate_goldens.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
PYTHON="${PYTHON:-$HOME/.cache/dtensor/venv-torch-2.11.0/bin/python}"
SEED="${SEED:-18}"
COUNT="${COUNT:-2400}"
SHARDS=8  # of op programs; shard $SHARDS holds the structured programs
OUT=tests/diff/testdata
"$PYTHON" -c "import torch; print('reference: pytorch', torch.__version__)"
python3 tests/diff/generate_programs.py --seed "$SEED" --count "$COUNT" --shards "$SHARDS" --out "$OUT"
jobs="${JOBS:-$(nproc)}"
for s in $(seq -f %02g 0 "$SHARDS"); do
  echo "$s"
done | xargs -P "$jobs" -I{} sh -c "\"$PYTHON\" tests/diff/pytorch_runner.py $OUT/programs_{}.json $OUT/pytorch_{}.json 2>/dev/null"
bazel build //tests/diff:diff_runner
known="$OUT/known_divergences.txt"
{
  echo "# Differences from PyTorch that are neither fixed nor a deviation row (README.md, \"Open divergences\")."
  echo "# One line per program step and field: id step op field. Written by regenerate_goldens.sh."
} > "$known"
for s in $(seq -f %02g 0 "$SHARDS"); do
  bazel-bin/tests/diff/diff_runner --programs "$OUT/programs_$s.json" --pytorch "$OUT/pytorch_$s.json" \
    --write-known "$known" --report "$OUT/report_$s.txt" > /dev/null 2>&1 || true
done
cat "$OUT"/report_*.txt | grep "^[0-9]* programs" 
rm -f "$OUT"/report_*.txt
echo "unexplained differences listed: $(grep -vc '^#' "$known")"
