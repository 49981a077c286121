#!/usr/bin/env python3
"""PyTorch's side of pytorch_dcp_test.cc: torch.distributed.checkpoint with its
Hugging Face storage reader and writer, on Gloo processes (one per rank, on
loopback), against dtensor checkpoints.

  pytorch_dcp.py load DIR EXPECTED RANKS   # dcp.load a dtensor checkpoint onto RANKS
                                           # ranks (DTensors sharded on their last dim,
                                           # 1-D ones replicated), compare with EXPECTED
  pytorch_dcp.py save DIR EXPECTED         # dcp.save DTensors of a (2, 2) mesh on 4
                                           # ranks (save_distributed=True); EXPECTED
                                           # gets the full tensors
  pytorch_dcp.py hf DIR                    # Hugging Face weights with the safetensors
                                           # library: two files and their index

EXPECTED is a safetensors file of the full tensors. Exits 77 when torch or
safetensors is missing, 1 on a mismatch; prints DCP_LOAD_OK / DCP_SAVE_OK.
"""
import os
import sys
import tempfile

try:
    import torch
    import torch.distributed as dist
    import torch.distributed.checkpoint as dcp
    import torch.multiprocessing as mp
    from safetensors.torch import load_file, save_file
    from torch.distributed.checkpoint import HuggingFaceStorageReader, HuggingFaceStorageWriter
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Replicate, Shard, distribute_tensor
except ImportError as e:
    print(f"missing: {e}")
    sys.exit(77)


def finished(path, rank):
    """Marks that `rank` got past the last barrier: its work is done and
    checked; only the process group's teardown is left."""
    open(f"{path}.finished{rank}", "w").close()


def spawn(worker, args, world, marker):
    """mp.spawn, except that a rank killed in Gloo's teardown after every rank
    finished its work (PyTorch's destroy_process_group on Gloo has aborted
    with 'terminate called without an active exception' under load) is
    reported, not failed: what the test checks was already written."""
    try:
        mp.spawn(worker, args=args, nprocs=world, join=True)
    except mp.ProcessExitedException as e:
        if not all(os.path.exists(f"{marker}.finished{r}") for r in range(world)):
            raise
        print(f"warning: every rank finished, then PyTorch's Gloo teardown failed: {e}", file=sys.stderr)


def load_worker(rank, world, init_file, ckpt, expected_path, result_file):
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    mesh = init_device_mesh("cpu", (world,))
    expected = load_file(expected_path)
    state = {}
    for name, full in expected.items():
        placement = Shard(full.dim() - 1) if full.dim() >= 2 else Replicate()
        state[name] = distribute_tensor(torch.zeros_like(full), mesh, [placement])
    dcp.load(state, storage_reader=HuggingFaceStorageReader(ckpt))
    bad = []
    for name, full in expected.items():
        got = state[name].full_tensor()
        if got.dtype != full.dtype or not torch.equal(got, full):
            bad.append(f"{name}: {got.tolist()} != {full.tolist()}")
    if rank == 0:
        with open(result_file, "w") as f:
            f.write("\n".join(bad) if bad else f"DCP_LOAD_OK {len(expected)} tensors on {world} ranks")
    dist.barrier()
    finished(init_file, rank)
    dist.destroy_process_group()


def save_worker(rank, world, init_file, ckpt, expected_path):
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    mesh = init_device_mesh("cpu", (2, 2))
    g = torch.Generator().manual_seed(7)
    full = {
        "w": torch.randn(8, 6, generator=g, dtype=torch.float64),
        "b": torch.randn(6, generator=g, dtype=torch.float64),
        "uneven": torch.randn(5, 3, generator=g, dtype=torch.float32),
        "steps": torch.arange(7, dtype=torch.int64),
    }
    placements = {
        "w": [Shard(0), Shard(1)],
        "b": [Replicate(), Shard(0)],
        "uneven": [Shard(0), Replicate()],
        "steps": [Replicate(), Replicate()],
    }
    state = {name: distribute_tensor(t, mesh, placements[name]) for name, t in full.items()}
    dcp.save(state, storage_writer=HuggingFaceStorageWriter(ckpt, save_distributed=True))
    if rank == 0:
        save_file(full, expected_path)
    dist.barrier()
    finished(init_file, rank)
    dist.destroy_process_group()


def write_hf(directory):
    """A sharded Hugging Face checkpoint as transformers writes one: float32
    weights under "model." names in model-0000x-of-00002.safetensors files,
    and model.safetensors.index.json's weight_map."""
    os.makedirs(directory, exist_ok=True)
    g = torch.Generator().manual_seed(5)
    files = {
        "model-00001-of-00002.safetensors": {"model.embed.weight": torch.randn(10, 6, generator=g)},
        "model-00002-of-00002.safetensors": {"model.proj.weight": torch.randn(6, 6, generator=g),
                                             "model.proj.bias": torch.randn(6, generator=g)},
    }
    weight_map = {}
    for name, tensors in files.items():
        save_file(tensors, os.path.join(directory, name), metadata={"format": "pt"})
        weight_map.update({t: name for t in tensors})
    with open(os.path.join(directory, "model.safetensors.index.json"), "w") as f:
        import json
        json.dump({"metadata": {"total_size": 4 * (60 + 36 + 6)}, "weight_map": weight_map}, f)
    print("HF_WRITE_OK")


def main():
    if sys.argv[1] == "hf":
        write_hf(sys.argv[2])
        return
    mode, ckpt, expected = sys.argv[1], sys.argv[2], sys.argv[3]
    with tempfile.TemporaryDirectory() as tmp:
        init_file = os.path.join(tmp, "init")
        if mode == "load":
            world = int(sys.argv[4])
            result = os.path.join(tmp, "result")
            spawn(load_worker, (world, init_file, ckpt, expected, result), world, init_file)
            text = open(result).read()
            print(text)
            sys.exit(0 if text.startswith("DCP_LOAD_OK") else 1)
        spawn(save_worker, (4, init_file, ckpt, expected), 4, init_file)
        print("DCP_SAVE_OK")


if __name__ == "__main__":
    main()
