#!/usr/bin/env python3
"""Where a tools/test.sh run spends its time: each stage's wall time and the
slowest test targets, read from the run's output.

    tools/test.sh 2>&1 | tee /tmp/test.log
    tools/test_times.py /tmp/test.log [--top 15]

Stages are the "==== NAME (HH:MM:SS)" lines tools/test.sh prints; a stage
lasts until the next one (the last one until the log's last timestamp).
Test times are Bazel's "PASSED in 12.3s" (a sharded test: the longest
shard, "max = 12.3s"); tests run two at a time here, so their sum is more
than the stage's wall time.
"""
import argparse
import re
import sys

STAGE = re.compile(r"^==== (.*) \((\d\d):(\d\d):(\d\d)\)$")
CLOCK = re.compile(r"^\((\d\d):(\d\d):(\d\d)\) ")
TARGET = re.compile(r"^(//\S+)\s+(PASSED|FAILED|TIMEOUT|FLAKY)\b(?: in ([\d.]+)s)?")
SHARDS = re.compile(r"Stats over \d+ runs: max = ([\d.]+)s")


def seconds(h, m, s):
    return int(h) * 3600 + int(m) * 60 + int(s)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("log")
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()

    stages, last_clock = [], None
    tests = {}  # (stage, target) -> seconds
    pending = None  # a sharded target whose max comes on the next line
    with open(args.log, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if m := STAGE.match(line):
                stages.append([m.group(1), seconds(*m.groups()[1:])])
                last_clock = stages[-1][1]
                continue
            if m := CLOCK.match(line):
                last_clock = seconds(*m.groups())
            stage = stages[-1][0] if stages else "?"
            if m := TARGET.match(line):
                pending = None
                if m.group(3):
                    tests[(stage, m.group(1))] = float(m.group(3))
                else:
                    pending = (stage, m.group(1))
            elif pending and (m := SHARDS.search(line)):
                tests[pending] = float(m.group(1))
                pending = None
    if not stages:
        sys.exit(f"{args.log}: no '==== stage (HH:MM:SS)' lines: not a tools/test.sh log")

    print(f"{'stage':50} {'wall s':>8}")
    for i, (name, start) in enumerate(stages):
        end = stages[i + 1][1] if i + 1 < len(stages) else last_clock
        if end is not None and end < start:
            end += 86400  # past midnight
        print(f"{name:50} {end - start if end is not None else float('nan'):8.0f}")
    print()
    print(f"{'slowest test targets':62} {'s':>7}  stage")
    for (stage, target), t in sorted(tests.items(), key=lambda kv: -kv[1])[: args.top]:
        print(f"{target:62} {t:7.1f}  {stage}")
    print(f"\n{len(tests)} targets, {sum(tests.values()):.0f} s of test time in all")


if __name__ == "__main__":
    main()
