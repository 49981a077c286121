"""FSDP's host cost per training step, PyTorch's side (issue #38, item 3):
PyTorch's DTensor test Transformer (32 layers by default) under fully_shard
(every block, then the root) on WORLD Gloo processes on loopback, each rank
training on its share of the batch, against the same model without FSDP
trained on one rank's share in one process. Host cost per step and rank =
the rank's CPU time per step (the process's: Gloo's threads included) minus
the one-process step's. benchmarks/fsdp_host_cost_bench.cc measures dtensor
the same way (fully_shard on WORLD fake ranks, each rank thread's CPU time).

    ~/.cache/dtensor/venv-torch-2.15.0/bin/python benchmarks/pytorch_fsdp_host_cost.py \
        [--layers 32 --world 8 --steps 5 --json out.json]

Both sides: dim 64, 4 heads, vocab 128, sequence 16, global batch = world
(one sequence per rank), Adam lr 0.01, dropout 0, ATen threads 1. Prints one
line per measurement and a JSON document with --json.
"""

import argparse
import json
import os
import tempfile
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn

try:
    from torch.distributed.fsdp import fully_shard
except ImportError:  # 2.4 - 2.5
    from torch.distributed._composable.fsdp import fully_shard
from torch.testing._internal.distributed._tensor.common_dtensor import ModelArgs, Transformer

SEQ, VOCAB, DIM, HEADS = 16, 128, 64, 4


def make_model(layers):
    torch.manual_seed(0)
    args = ModelArgs(n_layers=layers, vocab_size=VOCAB, max_seq_len=SEQ, dim=DIM, n_heads=HEADS, dropout_p=0.0)
    return Transformer(args)


def batch(step, rank):
    g = torch.Generator().manual_seed(1000 * step + rank)
    return torch.randint(0, VOCAB, (1, SEQ), generator=g), torch.randint(0, VOCAB, (1, SEQ), generator=g)


def cpu_per_step(model, opt, rank, warm, steps, reps, barrier):
    def step(i):
        tokens, targets = batch(i, rank)
        loss = nn.functional.cross_entropy(model(tokens).flatten(0, 1), targets.flatten())
        loss.backward()
        opt.step()
        opt.zero_grad()

    for i in range(warm):
        step(i)
    best = float("inf")
    for _ in range(reps):
        barrier()
        start = time.process_time()
        for i in range(steps):
            step(i)
        best = min(best, (time.process_time() - start) / steps)
    return best


def fsdp_worker(rank, world, init_file, layers, warm, steps, reps, out_file):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    from torch.distributed.device_mesh import init_device_mesh
    mesh = init_device_mesh("cpu", (world,), mesh_dim_names=("dp",))
    model = make_model(layers)
    for layer in model.layers:
        fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    seconds = cpu_per_step(model, opt, rank, warm, steps, reps, dist.barrier)
    gathered = [None] * world
    dist.all_gather_object(gathered, seconds)
    if rank == 0:
        with open(out_file, "w") as f:
            json.dump(gathered, f)
    dist.barrier()
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=32)
    ap.add_argument("--world", type=int, default=8)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    warm = 2
    torch.set_num_threads(1)
    one = make_model(a.layers)
    single = cpu_per_step(one, torch.optim.Adam(one.parameters(), lr=0.01), 0, warm, a.steps, a.reps, lambda: None)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out.json")
        mp.spawn(fsdp_worker, args=(a.world, os.path.join(tmp, "init"), a.layers, warm, a.steps, a.reps, out),
                 nprocs=a.world, join=True)
        ranks = json.load(open(out))
    mean = sum(ranks) / len(ranks)
    result = {"side": "pytorch", "pytorch": torch.__version__.split("+")[0], "layers": a.layers, "world": a.world,
              "one_rank_cpu_ms": single * 1e3, "fsdp_cpu_ms_per_rank": [s * 1e3 for s in ranks],
              "fsdp_cpu_ms_mean": mean * 1e3, "host_cost_ms": (mean - single) * 1e3}
    print(f"PyTorch {result['pytorch']} fully_shard, {a.layers} layers, {a.world} Gloo processes: "
          f"one-rank step {single * 1e3:.2f} ms CPU, FSDP step {mean * 1e3:.2f} ms CPU per rank "
          f"(min {min(ranks) * 1e3:.2f}, max {max(ranks) * 1e3:.2f}), host cost {(mean - single) * 1e3:.2f} ms")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
