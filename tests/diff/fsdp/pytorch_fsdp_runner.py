#!/usr/bin/env python3
"""Runs the FSDP programs of programs.json with PyTorch's fully_shard on Gloo
processes (one per rank, on loopback) and writes what PyTorch issues on rank
0, per training step (from CommDebugMode): the collectives of forward and of
backward, and of forward + backward per module that fully_shard was applied
to (cumulative over its children, keyed by the path from the root: "" is the
root, "layer0" a layer). fsdp_golden_test.cc runs the same programs on
dtensor's fake world and compares.
  ~/.cache/dtensor/venv-torch-2.15.0/bin/python tests/diff/fsdp/pytorch_fsdp_runner.py \
      tests/diff/fsdp/programs.json tests/diff/fsdp/pytorch-2.15.json
The models and data are built from the program (Linear widths, seeds) the way
the C++ test builds them; only the collectives and the reference PyTorch
version are recorded, values are checked against one device by the C++ test.
With "tp", the mesh is (dp, tp): the layers are parallelized on mesh["tp"]
(tensor_parallel) before fully_shard on mesh["dp"], and the batch is split
over dp only.
"""
import json
import os
import sys
import tempfile

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn

try:
    from torch.distributed.fsdp import fully_shard, MixedPrecisionPolicy
except ImportError:  # 2.4 - 2.5 kept it under _composable
    from torch.distributed._composable.fsdp import fully_shard, MixedPrecisionPolicy
from torch.distributed.tensor.debug import CommDebugMode

# CommDebugMode's spellings -> the collective names dtensor traces use.
NAMES = {
    "all_gather_into_tensor": "all_gather_into_tensor",
    "_allgather_base_": "all_gather_into_tensor",
    "allgather_into_tensor_coalesced_": "all_gather_into_tensor",
    "reduce_scatter_tensor": "reduce_scatter_tensor",
    "_reduce_scatter_base_": "reduce_scatter_tensor",
    "reduce_scatter_tensor_coalesced_": "reduce_scatter_tensor",
    "allreduce_": "all_reduce",
    "all_reduce": "all_reduce",
}


class Stack(nn.Module):
    def __init__(self, widths):
        super().__init__()
        for i in range(len(widths) - 1):
            self.add_module(f"layer{i}", nn.Linear(widths[i], widths[i + 1], dtype=torch.float64))
        self.n = len(widths) - 1

    def forward(self, x):
        for i in range(self.n):
            x = getattr(self, f"layer{i}")(x)
            if i + 1 < self.n:
                x = torch.relu(x)
        return x


def module_counts(mode, root_name, paths):
    """CommDebugMode's per-module counts (comm_module_counts: get_comm_module_counts
    is C++ only) of the fully_shard modules, by path."""
    out = {}
    for fqn, phases in mode.comm_module_counts.items():
        if fqn != root_name and not fqn.startswith(root_name + "."):
            continue
        path = fqn[len(root_name) + 1:]
        if path not in paths:
            continue
        entry = {}
        for phase, ops in phases.items():
            counts = {}
            for op, n in ops.items():
                name = NAMES.get(getattr(op, "__name__", str(op)).split(".")[-1], str(op))
                counts[name] = counts.get(name, 0) + n
            if counts:
                entry[phase] = counts
        out[path] = entry
    return out


def torchtitan_op_sac_context():
    """torchtitan's selective op AC policy (torchtitan/models/llama3/infra/parallelize.py):
    keep every other mm, the attention kernels, max and reduce_scatter."""
    from collections import defaultdict
    from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts
    aten = torch.ops.aten
    save = {aten.mm.default, aten._scaled_dot_product_efficient_attention.default,
            aten._scaled_dot_product_flash_attention.default, aten.max.default,
            torch.ops._c10d_functional.reduce_scatter_tensor.default}
    meta = defaultdict(int)

    def policy(ctx, func, *args, **kwargs):
        key = ("recompute" if ctx.is_recompute else "forward") + "_mm_count"
        if func == aten.mm.default:
            meta[key] += 1
        keep = func in save and not (func == aten.mm.default and meta[key] % 2 == 0)
        return CheckpointPolicy.MUST_SAVE if keep else CheckpointPolicy.PREFER_RECOMPUTE
    return create_selective_checkpoint_contexts(policy)


def make_model(program):
    """The root, its layers (fully_shard'ed first) and loss(rows of a step's batch)."""
    batch = program.get("batch", 12)
    if program.get("model") == "transformer":
        # PyTorch's DTensor test Transformer (needs `pip install expecttest`).
        from torch.testing._internal.distributed._tensor.common_dtensor import ModelArgs, Transformer
        args = ModelArgs(n_layers=program["n_layers"], vocab_size=program["vocab_size"],
                         max_seq_len=program["seq_len"], dim=program["dim"], n_heads=program["n_heads"],
                         dropout_p=0.0)
        ac = program.get("ac", "none")
        args.checkpoint_activations = ac == "full"  # torch.utils.checkpoint around each block
        model = Transformer(args).to(torch.float64)

        def wrap_blocks():
            if ac == "op":  # torchtitan's selective op AC: each block in a checkpoint_wrapper
                from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper
                for i, layer in enumerate(model.layers):
                    model.layers[i] = checkpoint_wrapper(layer, context_fn=torchtitan_op_sac_context)
        if program.get("tp"):  # tensor (+ sequence) parallel on mesh["tp"], then AC, as torchtitan
            def tp(tp_mesh):
                Transformer.parallelize(model, tp_mesh, program.get("sp", True))
                wrap_blocks()
            model._tp = tp
        else:
            wrap_blocks()

        def loss(step, world, rank):
            g = torch.Generator().manual_seed(100 + step)
            tokens = torch.randint(0, args.vocab_size, (batch, program["seq_len"]), generator=g)
            targets = torch.randint(0, args.vocab_size, (batch, program["seq_len"]), generator=g)
            logits = model(tokens.chunk(world, 0)[rank])
            return nn.functional.cross_entropy(logits.flatten(0, 1), targets.chunk(world, 0)[rank].flatten())
        return model, list(model.layers), [f"layers.{i}" for i in range(len(model.layers))], loss
    model = Stack(program["widths"])

    def loss(step, world, rank):
        g = torch.Generator().manual_seed(100 + step)
        x = torch.randn(batch, program["widths"][0], generator=g, dtype=torch.float64)
        return model(x.chunk(world, 0)[rank]).pow(2).mean()
    return model, [getattr(model, f"layer{i}") for i in range(model.n)], [f"layer{i}" for i in range(model.n)], loss


def tensor_parallel(layers, tp_mesh):
    """Megatron-style: even layers column-wise, odd ones row-wise; a last
    column-wise layer gathers its output (so the loss sees the full rows)."""
    from torch.distributed.tensor import Replicate
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module
    for i, layer in enumerate(layers):
        if i % 2 == 1:
            style = RowwiseParallel()
        elif i + 1 == len(layers):
            style = ColwiseParallel(output_layouts=Replicate())
        else:
            style = ColwiseParallel()
        parallelize_module(layer, tp_mesh, style)


def attention_backend(program):
    """The math SDPA for a tensor-parallel transformer: DTensor has no sharding
    strategy for the CPU flash kernel (_scaled_dot_product_flash_attention_for_cpu);
    the math path decomposes into ops it shards (so does dtensor's Transformer),
    with its causal mask (a plain tensor) implicitly replicated."""
    import contextlib
    if not (program.get("tp") and program.get("model") == "transformer"):
        return contextlib.nullcontext()
    from torch.distributed.tensor.experimental import implicit_replication
    from torch.nn.attention import SDPBackend, sdpa_kernel
    stack = contextlib.ExitStack()
    stack.enter_context(sdpa_kernel(SDPBackend.MATH))
    stack.enter_context(implicit_replication())  # the math path's causal mask is a plain tensor
    return stack


def run_program(rank, world, program):
    torch.manual_seed(program.get("seed", 0))
    model, layers, layer_paths, loss_of = make_model(program)
    mp_policy = MixedPrecisionPolicy()
    kwargs = {"mp_policy": mp_policy}
    if "reshard_after_forward" in program:  # else PyTorch's default (None: all but the root)
        kwargs["reshard_after_forward"] = program["reshard_after_forward"]
    data_ranks, data_rank = world, rank
    if program.get("tp"):  # FSDP over tensor parallelism on a (dp, tp) mesh
        from torch.distributed.device_mesh import init_device_mesh
        mesh = init_device_mesh("cpu", tuple(program["mesh"]), mesh_dim_names=("dp", "tp"))
        if hasattr(model, "_tp"):
            model._tp(mesh["tp"])
            layers = list(model.layers)  # the checkpoint wrappers, if any
        else:
            tensor_parallel(layers, mesh["tp"])
        kwargs["mesh"] = mesh["dp"]
        data_ranks, data_rank = mesh["dp"].size(), mesh["dp"].get_local_rank()
    elif "mesh" in program:  # HSDP
        from torch.distributed.device_mesh import init_device_mesh
        kwargs["mesh"] = init_device_mesh("cpu", tuple(program["mesh"]), mesh_dim_names=("replicate", "shard"))
    for layer in layers:
        fully_shard(layer, **kwargs)
    fully_shard(model, **kwargs)
    # Explicit prefetch: each layer gathers the next `forward_prefetch` layers
    # in forward, the previous `backward_prefetch` ones in backward.
    for i, layer in enumerate(layers):
        if program.get("forward_prefetch"):
            layer.set_modules_to_forward_prefetch(layers[i + 1:i + 1 + program["forward_prefetch"]])
        if program.get("backward_prefetch"):
            layer.set_modules_to_backward_prefetch(layers[max(0, i - program["backward_prefetch"]):i][::-1])
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    paths = {""} | set(layer_paths)
    steps = []
    for step in range(program.get("steps", 2)):
        micro = program.get("micro_steps", 1)
        record = {"micro_steps": []}
        for m in range(micro):
            if micro > 1:
                model.set_requires_gradient_sync(m == micro - 1)
            with CommDebugMode() as mode, attention_backend(program):
                loss = loss_of(step * 10 + m, data_ranks, data_rank)
                loss.backward()
            modules = module_counts(mode, type(model).__name__, paths)
            total = module_counts(mode, "Global", {""})[""]
            record["micro_steps"].append({"forward": total.get("forward", {}),
                                          "backward": total.get("backward", {}),
                                          "modules": modules})
        opt.step()
        opt.zero_grad()
        steps.append(record)
    return steps


def worker(rank, world, init_file, programs, out_file):
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    from torch.distributed.device_mesh import init_device_mesh
    init_device_mesh("cpu", (world,))
    results = {}
    for program in programs:
        results[program["name"]] = run_program(rank, world, program)
    if rank == 0:
        with open(out_file, "w") as f:
            json.dump(results, f)
    dist.barrier()
    dist.destroy_process_group()


def main():
    version = torch.__version__.split("+")[0]
    programs = [p for p in json.load(open(sys.argv[1]))["programs"]
                if any(version.startswith(v + ".") for v in p.get("pytorch", [version.rsplit(".", 1)[0]]))]
    out = {"pytorch": version, "programs": {}}
    for world in sorted({p["world"] for p in programs}):
        group = [p for p in programs if p["world"] == world]
        with tempfile.TemporaryDirectory() as tmp:
            part = os.path.join(tmp, "out.json")
            mp.spawn(worker, args=(world, os.path.join(tmp, "init"), group, part), nprocs=world, join=True)
            out["programs"].update(json.load(open(part)))
    with open(sys.argv[2], "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
