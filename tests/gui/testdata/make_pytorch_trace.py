#!/usr/bin/env python3
# Writes pytorch_trace.json: run with the PyTorch of tools/setup.sh
# (~/.cache/dtensor/venv-torch-2.15.0/bin/python make_pytorch_trace.py OUT.json).
# A real PyTorch program on 4 Gloo processes, traced with
# tools/pytorch_trace/dtensor_trace.py: a TP MLP on a (dp=2, tp=2) mesh
# (explicit all_reduce of the row-wise output), then a matmul whose sharded
# operands make DTensor redistribute implicitly, and a full_tensor().
import os
import sys
import tempfile

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import Shard, distribute_tensor
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../tools/pytorch_trace"))
from dtensor_trace import dtensor_trace  # noqa: E402


class MLPModule(nn.Module):
    def __init__(self):
        super().__init__()
        self.net1 = nn.Linear(10, 16)
        self.relu = nn.ReLU()
        self.net2 = nn.Linear(16, 10)

    def forward(self, x):
        return self.net2(self.relu(self.net1(x)))


def worker(rank, world, init_file, out):
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp", "tp"))
    torch.manual_seed(0)
    model = parallelize_module(MLPModule(), mesh["tp"], {"net1": ColwiseParallel(), "net2": RowwiseParallel()})
    a = distribute_tensor(torch.randn(8, 8), mesh, [Shard(0), Shard(1)])
    b = distribute_tensor(torch.randn(8, 4), mesh, [Shard(0), Shard(0)])
    with dtensor_trace(out, mesh=mesh):
        model(torch.rand(8, 10)).sum().backward()
        c = torch.mm(a, b)  # implicit: the operands are redistributed
        c.full_tensor()     # explicit
    dist.destroy_process_group()


if __name__ == "__main__":
    out = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory() as tmp:
        mp.spawn(worker, args=(4, os.path.join(tmp, "init"), out), nprocs=4, join=True)
