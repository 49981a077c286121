#!/usr/bin/env python3
"""PyTorch's tensor-parallel MLP (net1 column-wise, net2 row-wise) on Gloo
processes, one forward + backward traced with dtensor_trace: the program
dtensor's `comm_report --program mlp` runs, for comparing the two.

  python tools/pytorch_trace/tp_mlp.py OUT.json [RANKS]   # default 4 ranks
  comm_report --program mlp --trace-json ours.json
  comm_report --diff OUT.json ours.json
"""
import os
import sys
import tempfile

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dtensor_trace import dtensor_trace  # noqa: E402


class MLPModule(nn.Module):
    def __init__(self, hidden=16):
        super().__init__()
        self.net1 = nn.Linear(10, hidden)
        self.relu = nn.ReLU()
        self.net2 = nn.Linear(hidden, 10)

    def forward(self, x):
        return self.net2(self.relu(self.net1(x)))


def worker(rank, world, init_file, out):
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    mesh = init_device_mesh("cpu", (world,))  # unnamed, as comm_report's mlp program
    torch.manual_seed(0)
    model = parallelize_module(MLPModule(), mesh, {"net1": ColwiseParallel(), "net2": RowwiseParallel()})
    x = torch.rand(8, 10)
    with dtensor_trace(out, mesh=mesh):
        model(x).sum().backward()
    dist.destroy_process_group()


def main():
    out = os.path.abspath(sys.argv[1])
    world = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    with tempfile.TemporaryDirectory() as tmp:
        mp.spawn(worker, args=(world, os.path.join(tmp, "init"), out), nprocs=world, join=True)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
