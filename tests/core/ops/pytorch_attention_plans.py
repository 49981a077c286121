"""Records what PyTorch's DTensor does with the fused CUDA attention kernels,
which cannot run on a CPU: their sharding strategies and meta kernels can.
Each case runs one kernel on DTensors over meta tensors (a fake process group,
one rank of a world of 8, on a 1-D mesh [8] or a 2-D mesh [2, 4]), then the
backward of out.sum(), and writes the placements of the output, the
log-sum-exp and the gradients of q, k and v, and whether any collective ran.
tests/core/ops/attention_ops_test.cc replays every case on a solo world and
compares (no Python in CI).
  python tests/core/ops/pytorch_attention_plans.py tests/core/ops/testdata/attention_plans-2.15.json
"""
import json
import sys

import torch
import torch.distributed as dist
from torch.distributed.tensor import DTensor, Replicate, Shard
from torch.distributed.tensor.debug import CommDebugMode
from torch.distributed.device_mesh import init_device_mesh
from torch.testing._internal.distributed.fake_pg import FakeStore

aten = torch.ops.aten
KERNELS = {
    "flash": lambda q, k, v: aten._scaled_dot_product_flash_attention(q, k, v, 0.0, True),
    "efficient": lambda q, k, v: aten._scaled_dot_product_efficient_attention(q, k, v, None, True),
    "cudnn": lambda q, k, v: aten._scaled_dot_product_cudnn_attention(q, k, v, None, True),
}
# Placements as dtensor spells them (layout/placement.h).
PLACEMENTS_1D = [["S(0)"], ["S(1)"], ["S(2)"], ["S(3)"], ["R"]]
PLACEMENTS_2D = [["S(0)", "S(1)"], ["S(1)", "S(0)"], ["S(0)", "S(2)"], ["R", "S(1)"], ["S(0)", "S(0)"]]


def parse(p):
    return Replicate() if p == "R" else Shard(int(p[2:-1]))


def spell(placements):
    return ["R" if p.is_replicate() else "S(%d)" % p.dim if p.is_shard() else str(p) for p in placements]


def local_shape(shape, mesh, placements):
    shape = list(shape)
    for mesh_dim, p in enumerate(placements):
        if p.is_shard():
            shape[p.dim] //= mesh.size(mesh_dim)
    return shape


def run(kernel, mesh, names):
    placements = [parse(p) for p in names]

    def leaf(shape):
        local = torch.empty(local_shape(shape, mesh, placements), device="meta", dtype=torch.bfloat16)
        return DTensor.from_local(local, mesh, placements, run_check=False).requires_grad_()

    q, k, v = leaf((16, 8, 128, 64)), leaf((16, 8, 256, 64)), leaf((16, 8, 256, 64))
    with CommDebugMode() as comm:
        outputs = KERNELS[kernel](q, k, v)
        outputs[0].sum().backward()
    return {"kernel": kernel, "mesh": list(mesh.shape), "inputs": names,
            "output": spell(outputs[0].placements), "logsumexp": spell(outputs[1].placements),
            "grads": [spell(t.grad.placements) for t in (q, k, v)],
            "communicates": comm.get_total_counts() > 0}


def main():
    dist.init_process_group("fake", store=FakeStore(), rank=5, world_size=8)
    cases = []
    for kernel in KERNELS:
        mesh = init_device_mesh("cpu", (8,))
        cases += [run(kernel, mesh, names) for names in PLACEMENTS_1D]
        mesh = init_device_mesh("cpu", (2, 4))
        cases += [run(kernel, mesh, names) for names in PLACEMENTS_2D]
    with open(sys.argv[1], "w") as f:
        json.dump({"pytorch": torch.__version__.split("+")[0], "world_size": 8, "rank": 5,
                   "shapes": {"q": [16, 8, 128, 64], "kv": [16, 8, 256, 64]}, "dtype": "bfloat16",
                   "cases": cases}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
