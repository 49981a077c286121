"""Records what PyTorch's DTensor does with _fused_rms_norm_backward, which
has no CPU kernel (so the differential corpus cannot run it): its sharding
strategy and meta kernel can run. Each case calls it on DTensors over meta
tensors (a fake process group, rank 5 of a world of 8, on a 1-D mesh [8] or
a 2-D mesh [2, 4]) and writes the placements of grad_input and grad_weight
and the collectives the call issued, or that it raised.
tests/core/ops/norm_plans_test.cc replays every case on a solo world (no
Python in CI).
  python tests/core/ops/pytorch_rms_norm_plans.py tests/core/ops/testdata/rms_norm_plans-2.15.json
"""
import json
import sys

import torch
import torch.distributed as dist
from torch.distributed.tensor import DTensor, Replicate, Shard
from torch.distributed.tensor.debug import CommDebugMode
from torch.distributed.device_mesh import init_device_mesh
from torch.testing._internal.distributed.fake_pg import FakeStore

INPUT = [16, 8, 64]    # [batch, seq, dim], normalized over dim
RSTD = [16, 8, 1]
# (grad_out and input, rstd, weight) placements per case.
CASES_1D = [(["S(0)"], ["S(0)"], ["R"]), (["S(1)"], ["S(1)"], ["R"]), (["R"], ["R"], ["R"]),
            (["S(0)"], ["R"], ["R"]), (["S(2)"], ["R"], ["R"]), (["S(1)"], ["S(0)"], ["R"])]
CASES_2D = [(["S(0)", "S(1)"], ["S(0)", "S(1)"], ["R", "R"]), (["S(1)", "S(0)"], ["S(1)", "S(0)"], ["R", "R"]),
            (["S(0)", "R"], ["S(0)", "R"], ["R", "R"]), (["R", "S(2)"], ["R", "R"], ["R", "R"]),
            (["S(0)", "S(0)"], ["S(0)", "S(0)"], ["R", "R"])]


def parse(p):
    return Replicate() if p == "R" else Shard(int(p[2:-1]))


def spell(placements):
    return ["R" if p.is_replicate() else "S(%d)" % p.dim if p.is_shard() else "P(sum)" if p.is_partial() else str(p)
            for p in placements]


def dtensor(shape, mesh, names):
    placements = [parse(p) for p in names]
    local = list(shape)
    for mesh_dim, p in enumerate(placements):
        if p.is_shard():
            local[p.dim] //= mesh.size(mesh_dim)
    return DTensor.from_local(torch.empty(local, device="meta", dtype=torch.float32), mesh, placements,
                              run_check=False)


def run(mesh, case):
    x_names, rstd_names, w_names = case
    grad, x = dtensor(INPUT, mesh, x_names), dtensor(INPUT, mesh, x_names)
    rstd, w = dtensor(RSTD, mesh, rstd_names), dtensor(INPUT[-1:], mesh, w_names)
    record = {"mesh": list(mesh.shape), "input": x_names, "rstd": rstd_names, "weight": w_names}
    try:
        with CommDebugMode() as comm:
            gi, gw = torch.ops.aten._fused_rms_norm_backward(grad, x, INPUT[-1:], rstd, w, [True, True])
        record.update(grad_input=spell(gi.placements), grad_weight=spell(gw.placements),
                      comms={str(k).split(".")[-1]: v for k, v in comm.get_comm_counts().items()})
    except Exception as e:  # noqa: BLE001: a refusal is what gets recorded
        record["raised"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
    return record


def main():
    dist.init_process_group("fake", store=FakeStore(), rank=5, world_size=8)
    cases = [run(init_device_mesh("cpu", (8,)), c) for c in CASES_1D]
    cases += [run(init_device_mesh("cpu", (2, 4)), c) for c in CASES_2D]
    with open(sys.argv[1], "w") as f:
        json.dump({"pytorch": torch.__version__.split("+")[0], "world_size": 8, "rank": 5, "input": INPUT,
                   "rstd": RSTD, "cases": cases}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
