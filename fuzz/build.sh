#!/usr/bin/env bash
# Builds the libFuzzer targets with Debian's clang (outside Bazel: Bazel's
# toolchain here is gcc, which has no -fsanitize=fuzzer) and runs them.
#   fuzz/build.sh                      # build both, fuzz each for 60 s
#   fuzz/build.sh placement_parser 600 # one target, 10 minutes
#   FUZZ_MERGE=1 fuzz/build.sh         # also merge new interesting inputs into fuzz/corpus/
# Needs: clang (apt-get install clang), libtorch-dev, nlohmann-json3-dev.
# Binaries and scratch corpora go to ${FUZZ_OUT:-/tmp/dtensor-fuzz}.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${FUZZ_OUT:-/tmp/dtensor-fuzz}
mkdir -p "$out"
CXX=${CXX:-clang++}
command -v "$CXX" >/dev/null || { echo "fuzz/build.sh: $CXX not found; apt-get install clang" >&2; exit 2; }
flags=(-std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
       -I. -isystem /usr/include/torch/csrc/api/include)

build() {  # name sources... [-- link flags...]
  local name=$1; shift
  local srcs=() link=()
  while (($#)); do
    if [[ $1 == -- ]]; then shift; link=("$@"); break; fi
    srcs+=("$1"); shift
  done
  echo "fuzz/build.sh: building $out/$name"
  "$CXX" "${flags[@]}" -DDTENSOR_FUZZ_ENTRY="$name" fuzz/libfuzzer_main.cc "${srcs[@]}" \
    -o "$out/$name" "${link[@]}"
}

layout_srcs=(layout/layout_error.cc layout/mesh_shape.cc layout/placement.cc
             layout/shard_layout.cc layout/comm_cost.cc layout/redistribute_plan.cc)
targets=("${1:-placement_parser trace_json}")
seconds=${2:-60}
for t in ${targets[@]}; do
  case $t in
    placement_parser) build placement_parser fuzz/placement_fuzz.cc "${layout_srcs[@]}"; corpus=placement ;;
    trace_json) build trace_json fuzz/trace_json_fuzz.cc trace/trace_json.cc trace/trace_json_reader.cc trace/trace_model.cc \
                  trace/module_tree.cc gui/model/trace_loader.cc -- -lc10; corpus=trace_json ;;
    *) echo "fuzz/build.sh: unknown target $t (placement_parser, trace_json)" >&2; exit 2 ;;
  esac
  scratch="$out/corpus_$t"
  mkdir -p "$scratch"
  echo "fuzz/build.sh: fuzzing $t for ${seconds}s"
  "$out/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 \
    -artifact_prefix="$out/$t-" "$scratch" "fuzz/corpus/$corpus"
  if [[ ${FUZZ_MERGE:-0} == 1 ]]; then
    "$out/$t" -merge=1 "fuzz/corpus/$corpus" "$scratch"
  fi
done
