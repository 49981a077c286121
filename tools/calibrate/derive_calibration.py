#!/usr/bin/env python3
"""A planner calibration for a GPU no one here could measure, derived from one
that was measured (tools/calibrate_gpu.sh) and the target's published figures
(Note [Calibration file format] in planner/calibration.h).

Assumption: each kernel reaches the same fraction of the GPU's best matmul
rate (bf16 rows and attention) or of its datasheet bandwidth (the memory rows)
on the target as on the measured GPU. So a matmul shape that ran at 92% of
the H100's best bf16 rate is costed at 92% of the A100's best published one;
attention, which the H100 ran at 77% (forward) and 59% (backward) of its best
matmul, at those fractions of the A100's. Measuring the target with
calibrate_gpu.sh replaces all of it.

    python3 tools/calibrate/derive_calibration.py \\
        --measured planner/calibration/h100-sxm-80gb.calib --measured-hbm-gbps 3350 \\
        --measured-fp32-tflops 66.9 --best-bf16-tflops 271.2 --hbm-gbps 2039 --fp32-tflops 19.5 \\
        --gpu "NVIDIA A100-SXM4-80GB (derived)" --source "..." > planner/calibration/a100-sxm-80gb-derived.calib
"""
import argparse
import sys


def fmt(x):
    return f"{x:.4g}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--measured", required=True, help="a calibration file calibrate_gpu.sh wrote")
    ap.add_argument("--measured-hbm-gbps", type=float, required=True, help="the measured GPU's datasheet HBM GB/s")
    ap.add_argument("--measured-fp32-tflops", type=float, required=True, help="its datasheet fp32 (no TF32) TFLOP/s")
    ap.add_argument("--best-bf16-tflops", type=float, required=True, help="the target's best published bf16 matmul rate")
    ap.add_argument("--hbm-gbps", type=float, required=True, help="the target's datasheet HBM GB/s")
    ap.add_argument("--fp32-tflops", type=float, required=True, help="the target's datasheet fp32 TFLOP/s")
    ap.add_argument("--gpu", required=True)
    ap.add_argument("--source", required=True)
    a = ap.parse_args()

    lines = [l.split("#")[0].split() for l in open(a.measured)]
    lines = [l for l in lines if l]
    best = max(float(l[5]) for l in lines if l[0] == "matmul" and l[1] == "bf16")
    gpu = next(" ".join(l[1:]) for l in lines if l[0] == "gpu")
    bf16 = a.best_bf16_tflops / best
    fp32 = a.fp32_tflops / a.measured_fp32_tflops
    hbm = a.hbm_gbps / a.measured_hbm_gbps
    out = [f"# Derived by tools/calibrate/derive_calibration.py from {a.measured} ({gpu}): each rate",
           f"# is the measured one's fraction of its best bf16 matmul ({fmt(best)} TFLOP/s) times the",
           f"# target's best published one ({fmt(a.best_bf16_tflops)}); fp32 rows by the datasheet fp32",
           f"# peaks ({fmt(a.fp32_tflops)} / {fmt(a.measured_fp32_tflops)}), memory rows by the datasheet HBM",
           f"# bandwidths ({fmt(a.hbm_gbps)} / {fmt(a.measured_hbm_gbps)} GB/s). An assumption, not a measurement:",
           "# run tools/calibrate_gpu.sh on the target to replace it.",
           f"gpu {a.gpu}", f"source {a.source}"]
    for l in lines:
        key = l[0]
        if key in ("gpu", "source"):
            continue
        if key in ("hbm_gbps", "pointwise_gbps"):
            out.append(f"{key} {fmt(float(l[1]) * hbm)}")
        elif key == "adam_us_per_mparam":
            out.append(f"{key} {fmt(float(l[1]) / hbm)}")
        elif key == "matmul":
            scale = bf16 if l[1] in ("bf16", "fp16") else fp32
            out.append(" ".join(l[:5] + [fmt(float(l[5]) * scale)]))
        elif key == "attention":
            out.append(" ".join(l[:6] + [fmt(float(l[6]) * bf16), fmt(float(l[7]) * bf16)]))
        else:
            sys.exit(f"derive_calibration: unknown line {' '.join(l)}")
    print("\n".join(out))


if __name__ == "__main__":
    main()
