"""Per-call overhead of PyTorch's Python DTensor (CPU, eager), the cases of
benchmarks/dispatch_bench.cc: the same op on a DTensor of a 1-rank mesh and on
its plain local tensor, float32 8x8. Times: minimum over repetitions of this
thread's CPU time per call, as dispatch_bench measures ours.

    ~/.cache/dtensor/venv-torch-2.11.0/bin/python benchmarks/pytorch_dtensor_overhead.py [--iters 2000 --reps 7]

Prints one line per case: plain us, DTensor us, extra us, ratio.
"""

import argparse
import os
import time
import warnings

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import Replicate, Shard, distribute_tensor

warnings.filterwarnings("ignore")


def per_call_us(fn, iters, reps):
    for _ in range(max(1, iters // 10)):
        fn()
    best = float("inf")
    for _ in range(reps):
        t0 = time.thread_time_ns()
        for _ in range(iters):
            fn()
        best = min(best, (time.thread_time_ns() - t0) / iters / 1e3)
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=2000)
    ap.add_argument("--reps", type=int, default=7)
    a = ap.parse_args()
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29517")
    dist.init_process_group("gloo", rank=0, world_size=1)
    torch.set_num_threads(1)
    mesh = init_device_mesh("cpu", (1,))
    torch.manual_seed(0)
    x, y, bias = torch.randn(8, 8), torch.randn(8, 8), torch.randn(8)
    dx = distribute_tensor(x, mesh, [Shard(0)])
    dy = distribute_tensor(y, mesh, [Replicate()])
    dbias = distribute_tensor(bias, mesh, [Replicate()])
    cases = [
        ("add", lambda: x + y, lambda: dx + dx),
        ("mul", lambda: x * y, lambda: dx * dx),
        ("mul_scalar", lambda: x * 2.0, lambda: dx * 2.0),
        ("mm", lambda: torch.mm(x, y), lambda: torch.mm(dx, dy)),
        ("relu", lambda: x.relu(), lambda: dx.relu()),
        ("sum", lambda: x.sum(), lambda: dx.sum()),
        ("view", lambda: x.view(64), lambda: dx.view(64)),
        ("transpose", lambda: x.transpose(0, 1), lambda: dx.transpose(0, 1)),
        ("addmm", lambda: torch.addmm(bias, x, y), lambda: torch.addmm(dbias, dx, dy)),
    ]
    print(f"PyTorch {torch.__version__} Python DTensor, 1-rank mesh, float32 8x8, "
          f"{a.iters} iters x {a.reps} reps (thread CPU time, min)")
    print(f"{'op':<12}{'plain us':>10}{'DTensor us':>12}{'extra us':>10}{'ratio':>8}")
    for name, plain, dt in cases:
        p = per_call_us(plain, a.iters, a.reps)
        d = per_call_us(dt, a.iters, a.reps)
        print(f"{name:<12}{p:>10.2f}{d:>12.2f}{d - p:>10.2f}{d / p:>8.1f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
