"""PyTorch's own DTensor host-overhead benchmark, PyTorch's side: the eight
cases of PyTorch's benchmarks/dynamo/pr_time_benchmarks/benchmarks/dtensor.py
on its fake process group of 256 ranks, on the CPU (PyTorch runs them on
CUDA in its CI), timed as benchmarks/pytorch_cases_bench.cc times ours:
minimum over repetitions of this thread's CPU time per call, of the DTensor
work, of the plain work it wraps (the same op on the local tensors; for the
redistributes the raw collectives on the same process group), and the extra.

    ~/.cache/dtensor/venv-torch-2.15.0/bin/python benchmarks/pytorch_cases.py [--iters 2000 --reps 7]

tools/bench.sh pytorch runs both sides and prints them side by side.
"""

import argparse
import json
import warnings

import torch
import torch.distributed as dist
from torch.distributed.tensor import DTensor, Partial, Replicate, Shard
from torch.testing._internal.distributed.fake_pg import FakeStore

from pytorch_dtensor_overhead import per_call_us  # the same timing as the 1-rank cases

warnings.filterwarnings("ignore")
WORLD = 256


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=2000)
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    torch.set_num_threads(1)
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=WORLD)
    mesh = torch.distributed.device_mesh.init_device_mesh("cpu", (WORLD,), mesh_dim_names=("dp",))
    la, lb = torch.ones(10, 10), torch.ones(10, 10)
    da = DTensor.from_local(la, mesh, [Replicate()])
    db = DTensor.from_local(lb, mesh, [Replicate()])
    dc = DTensor.from_local(torch.ones(10, 10), mesh, [Partial()])
    ga = DTensor.from_local(torch.ones(2, 512, requires_grad=True), mesh, [Shard(0)])
    gb = DTensor.from_local(torch.ones(512, 2, requires_grad=True), mesh, [Shard(1)])
    px, py = torch.ones(2, 512, requires_grad=True), torch.ones(2, 512, requires_grad=True)
    group = dist.group.WORLD
    piece, gathered = torch.ones(1, 10), torch.empty(WORLD, 10)
    a2a_in, a2a_out = torch.ones(WORLD, 1), torch.empty(WORLD, 1)
    reduced, rs_in, rs_out = torch.ones(10, 10), torch.ones(WORLD, 10), torch.empty(1, 10)

    def collectives():
        x = da.redistribute(placements=[Shard(0)])
        x = x.redistribute(placements=[Shard(1)])
        x = x.redistribute(placements=[Replicate()])
        dc.redistribute(placements=[Replicate()])
        dc.redistribute(placements=[Shard(0)])

    def raw_collectives():
        la.narrow(0, 0, 1)
        dist.all_to_all_single(a2a_out, a2a_in, group=group)
        dist.all_gather_into_tensor(gathered, piece, group=group)
        dist.all_reduce(reduced, group=group)
        dist.reduce_scatter_tensor(rs_out, rs_in, group=group)

    def add_backward():
        (ga + gb).sum().backward()

    def plain_add_backward():
        (px + py).sum().backward()

    cases = [
        ("detach", lambda: da.detach(), lambda: la.detach()),
        ("to_from_local", lambda: DTensor.from_local(da.to_local(), mesh, [Replicate()]), None),
        ("collectives", collectives, raw_collectives),
        ("add_backward", add_backward, plain_add_backward),
        ("inplace", lambda: da.add_(db), lambda: la.add_(lb)),
        ("view", lambda: da.view(100), lambda: la.view(100)),
        ("random", lambda: da.uniform_(), lambda: la.uniform_()),
        ("custom_handler", lambda: torch.ops.aten.is_same_size(da, db), None),
    ]
    rows = []
    print(f"{'case':16} {'dtensor us':>12} {'plain us':>12} {'extra us':>12}")
    for name, dtensor_fn, plain_fn in cases:
        d = per_call_us(dtensor_fn, a.iters, a.reps)
        p = per_call_us(plain_fn, a.iters, a.reps) if plain_fn else 0.0
        print(f"{name:16} {d:12.2f} {p:12.2f} {d - p:12.2f}")
        rows.append({"case": name, "dtensor_us": d, "plain_us": p, "extra_us": d - p})
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"bench": "pytorch_cases (PyTorch " + torch.__version__ + ")", "rows": rows}, f, indent=1)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
