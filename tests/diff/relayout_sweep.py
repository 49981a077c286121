"""Random relayouts of the corpus: a bug-finding sweep, not a corpus shard.

Takes the corpus programs that call one aten op (and may then redistribute,
gather or run backward, but build no input with from_local, whose local
shapes a relayout would break), gives each input of N randomly chosen ones
random placements (Replicate, Shard of any dim, Partial for floating
inputs: a Partial integer input sums to other values, e.g. indices out of
range), and writes them as a program file to run on both sides:

    python3 tests/diff/relayout_sweep.py 1500 11 /tmp/sweep.json      # N, seed, out
    ~/.cache/dtensor/python tests/diff/pytorch_runner.py --isolate 30 /tmp/sweep.json /tmp/sweep-2.15.json
    bazel-bin/tests/diff/diff_runner --programs /tmp/sweep.json --pytorch /tmp/sweep-2.15.json --list 600

The corpus samples a few layouts per overload; this finds the layouts where
we cost more than PyTorch (native_layer_norm_backward beside row-sharded
statistics, copy_ along a split dim of size 1) or refuse what it runs.
"""

import copy
import glob
import json
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def relayoutable(program):
    kinds = [s["kind"] for s in program["steps"]]
    return (kinds.count("op") == 1 and "from_local" not in kinds and len(program["inputs"]) >= 1
            and all("placements" in x for x in program["inputs"]))


def placements_for(shape, integral):
    return ["R"] + ([] if integral else ["P(sum)"]) + [f"S({d})" for d in range(len(shape))]


def main():
    n, seed, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    rng = random.Random(seed)
    programs, header = [], None
    for path in sorted(glob.glob(os.path.join(HERE, "testdata", "programs_*.json"))):
        data = json.load(open(path))
        header = header or {k: v for k, v in data.items() if k != "programs"}
        programs += [p for p in data["programs"] if relayoutable(p)]
    sweep = []
    for i in range(n):
        p = copy.deepcopy(rng.choice(programs))
        p["id"] = f"sw_{i:05d}_{p['id']}"
        for x in p["inputs"]:
            integral = x.get("dtype", "float").startswith(("int", "uint", "bool"))
            x["placements"] = [rng.choice(placements_for(x["shape"], integral)) for _ in x["placements"]]
        sweep.append(p)
    json.dump(dict(header, programs=sweep), open(out, "w"))
    print(f"{len(programs)} relayoutable programs; {n} relayouts written to {out}")


if __name__ == "__main__":
    main()
