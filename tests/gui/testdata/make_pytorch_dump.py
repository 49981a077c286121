#!/usr/bin/env python3
# Writes pytorch_tp_embedding_dump.json: run with the PyTorch of tools/setup.sh
# (~/.cache/dtensor/venv-torch-*/bin/python make_pytorch_dump.py OUT.json).
# A real PyTorch CommDebugMode dump: TP MLP + a row-wise sharded embedding
# (its lookup makes a _MaskPartial) on a fake process group of 4 ranks.
import sys, torch, torch.nn as nn
import torch.distributed as dist
from torch.testing._internal.distributed.fake_pg import FakeStore
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module
from torch.distributed.tensor.debug import CommDebugMode

dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=4)
mesh = init_device_mesh("cpu", (4,), mesh_dim_names=("tp",))

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(16, 8)
        self.net1 = nn.Linear(8, 16)
        self.net2 = nn.Linear(16, 8)
    def forward(self, x):
        return self.net2(torch.relu(self.net1(self.tok(x))))

torch.manual_seed(0)
m = Model()
parallelize_module(m, mesh, {"tok": RowwiseParallel(), "net1": ColwiseParallel(), "net2": RowwiseParallel()})
x = torch.randint(0, 16, (4, 3))
comm = CommDebugMode()
with comm:
    out = m(x)
    out.sum().backward()
comm.generate_json_dump(sys.argv[1], noise_level=3)
print(comm.get_comm_counts())
