#!/usr/bin/env bash
# Regenerates the differential-test goldens with real PyTorch (tests/diff/README.md):
# the corpus (generate_programs.py: 8 shards of op programs, a 9th of
# structured ones, a 10th of out= and in-place overloads, an 11th of PyTorch
# 2.15's other pointwise ops, a 12th of convolution, pooling and norms, a
# 13th of indexing, scatters and linear algebra, a 14th of uneven, strided and
# flattened-mesh views, a 15th to 18th validating every other overload 2.15 shards
# from samples sample_overloads.py builds from the schemas, with the followed
# version's torch, a 19th of redistributions on meshes with flattened dims, a
# 20th validating the overloads whose schema-built calls fail, from the
# recipes of sample_recipes.py, a 21st validating the random-valued
# overloads, values not compared, a 22nd the recipes with float8 or uint8
# tensors),
# one PyTorch version's records (pytorch_runner.py, one
# process per shard, in parallel: pytorch-<version>_NN.json), and that
# version's known_divergences-<version>.txt (diff_runner).
#   tests/diff/regenerate_goldens.sh 2.15      # the venv of tools/setup.sh (the followed version)
#   tests/diff/regenerate_goldens.sh 2.11      # the venv of tools/setup.sh pytorch-2.11
# Against an older version than the followed one, steps the followed version
# changed are expected to differ (diff_runner --newer).
#   PYTHON=/path/to/python SEED=18 COUNT=2400 tests/diff/regenerate_goldens.sh 2.15
#   LISTS_ONLY=1 tests/diff/regenerate_goldens.sh 2.15   # after a fix: the lists from the checked-in records
# A new SEED or COUNT changes the programs: regenerate every version then.
set -euo pipefail
cd "$(dirname "$0")/../.."
VERSION="${1:?usage: regenerate_goldens.sh VERSION (2.11 or 2.15)}"
PYTHON="${PYTHON:-${DTENSOR_HOME:-$HOME/.cache/dtensor}/venv-torch-$VERSION.0/bin/python}"
SEED="${SEED:-18}"
COUNT="${COUNT:-2400}"
SHARDS=8  # of op programs; then the structured, out=/in-place, more-pointwise, spatial, more-ops, uneven-views
LAST=$((SHARDS + 13))  # and 4 validation shards, the flattened-mesh shard, the recipes', the random ops' and the float8/uint8 validation shards
OUT=tests/diff/testdata
FOLLOWED=2.15  # golden_test.cc's reference_versions().back()
if [[ -z ${LISTS_ONLY:-} ]]; then
  got="$("$PYTHON" -c "import torch; print(torch.__version__.split('+')[0])")"
  [[ $got == "$VERSION".* ]] || { echo "regenerate_goldens: $PYTHON has torch $got, not $VERSION" >&2; exit 1; }
  echo "reference: pytorch $got"
  # The validation samples come from the followed version's schemas; older
  # versions record the same programs (ops they lack raise there).
  [[ $VERSION != "$FOLLOWED" ]] || "$PYTHON" tests/diff/sample_overloads.py --out "$OUT/validation_samples.json"
  python3 tests/diff/generate_programs.py --seed "$SEED" --count "$COUNT" --shards "$SHARDS" --out "$OUT"
  jobs="${JOBS:-$(nproc)}"
  for s in $(seq -f %02g 0 "$LAST"); do
    echo "$s"
  done | xargs -P "$jobs" -I{} sh -c "\"$PYTHON\" tests/diff/pytorch_runner.py --isolate 60 $OUT/programs_{}.json $OUT/pytorch-${VERSION}_{}.json 2>/dev/null"
fi
bazel build //tests/diff:diff_runner
known="$OUT/known_divergences-$VERSION.txt"
{
  echo "# Differences from PyTorch $VERSION that are neither fixed nor a deviation row (README.md, \"Open divergences\")."
  [[ $VERSION == "$FOLLOWED" ]] ||
    echo "# Steps PyTorch $FOLLOWED changed are expected to differ here: dtensor follows $FOLLOWED (diff_runner --newer)."
  echo "# One line per program step and field: id step op field. Written by regenerate_goldens.sh."
} > "$known"
for s in $(seq -f %02g 0 "$LAST"); do
  newer=()
  [[ $VERSION == "$FOLLOWED" ]] ||
    newer=(--newer "$OUT/pytorch-${FOLLOWED}_$s.json" --newer-version "$FOLLOWED")
  bazel-bin/tests/diff/diff_runner --programs "$OUT/programs_$s.json" --pytorch "$OUT/pytorch-${VERSION}_$s.json" \
    "${newer[@]}" --write-known "$known" --report "$OUT/report_$s.txt" > /dev/null 2>&1 || true
done
if [[ $VERSION == "$FOLLOWED" ]]; then
  # Per overload, how its programs compare (issue #33; tools/op_coverage --validation reads it).
  rm -f "$OUT/by_op.tmp"
  for s in $(seq -f %02g 0 "$LAST"); do
    bazel-bin/tests/diff/diff_runner --programs "$OUT/programs_$s.json" --pytorch "$OUT/pytorch-${VERSION}_$s.json" \
      --by-op "$OUT/by_op.tmp" > /dev/null 2>&1 || true
  done
  {
    echo "# Per aten overload: programs whose first op it is, and how they compare with PyTorch $VERSION:"
    echo "# identical, differing only by tested deviation rows, PyTorch wrong or refusing, open. Written by regenerate_goldens.sh."
    awk '{n[$1]++; c[$1 " " $2]++} END {for (op in n) print op, n[op], c[op " identical"]+0, c[op " row"]+0, c[op " pytorch-wrong"]+0, c[op " open"]+0}' \
      "$OUT/by_op.tmp" | sort
  } > "$OUT/validation-$VERSION.txt"
  rm -f "$OUT/by_op.tmp"
fi
cat "$OUT"/report_*.txt | grep "^[0-9]* programs" 
rm -f "$OUT"/report_*.txt
echo "unexplained differences listed: $(grep -vc '^#' "$known")"
