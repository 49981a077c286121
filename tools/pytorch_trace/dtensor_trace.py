"""Trace a PyTorch DTensor program into dtensor's comm-trace JSON (schema 2,
trace/comm_trace_schema.md), for dtensor's viewer and comm_report.

    from dtensor_trace import dtensor_trace
    with dtensor_trace("step.json", mesh=mesh):   # every rank enters it
        loss = model(x).sum()
        loss.backward()

On exit every rank's collectives are gathered to rank 0, which writes one
merged trace (rank -1): PyTorch's CommDebugMode module tree (counts per module,
forward and backward, its operations at the noise level), plus dtensor's
`events`: each collective of each rank in issue order with its kind, bytes,
process group, mesh dim, module, phase, shapes, dtype, reduce op, time, and
its origin: the redistribution it is a step of (from / to placements,
explicit or implicit, the op and input that caused an implicit one). Origins
come from PyTorch's DebugMode hook (DTensor reports each redistribution to
the active DebugMode); collectives issued outside a redistribution (FSDP,
direct torch.distributed calls) have none.

Requires PyTorch 2.11 or newer (DebugMode's redistribute hook).
"""
import contextlib
import json
import os
import tempfile
import time

import torch
import torch.distributed as dist
from torch.distributed.tensor import DTensor
from torch.distributed.tensor.debug import CommDebugMode
from torch.utils._debug_mode import DebugMode

# Collective op names (functional, native functional and c10d) -> the names
# dtensor's traces use (PyTorch's functional collective names).
_KINDS = {
    "all_reduce": "all_reduce",
    "allreduce_": "all_reduce",
    "all_gather_into_tensor": "all_gather_into_tensor",
    "_allgather_base_": "all_gather_into_tensor",
    "allgather_into_tensor_coalesced_": "all_gather_into_tensor",
    "reduce_scatter_tensor": "reduce_scatter_tensor",
    "_reduce_scatter_base_": "reduce_scatter_tensor",
    "reduce_scatter_tensor_coalesced_": "reduce_scatter_tensor",
    "all_to_all_single": "all_to_all_single",
    "alltoall_base_": "all_to_all_single",
    "broadcast": "broadcast",
    "broadcast_": "broadcast",
    "scatter_": "scatter",
    "barrier": "barrier",
}

# torch dtype -> the c10 name dtensor's traces use ("Float").
_DTYPES = {
    torch.float32: "Float", torch.float64: "Double", torch.float16: "Half", torch.bfloat16: "BFloat16",
    torch.int64: "Long", torch.int32: "Int", torch.int8: "Char", torch.uint8: "Byte", torch.bool: "Bool",
}


def _placements_text(placements):
    """dtensor's text of a placements tuple: "[S(0), R]"."""
    return "[" + ", ".join(str(p) for p in placements) + "]"


def _tensors(value):
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    return []


def _group_ranks(args):
    """The global ranks of the process group a collective's arguments name."""
    for a in args:
        try:
            if isinstance(a, str):  # functional collectives pass the group's name
                from torch.distributed.distributed_c10d import _resolve_process_group
                return dist.get_process_group_ranks(_resolve_process_group(a))
            if isinstance(a, torch._C.ScriptObject) or type(a).__name__ == "ProcessGroup":
                return dist.get_process_group_ranks(a)
        except Exception:  # not a group after all
            continue
    return list(range(dist.get_world_size()))


def _reduce_op(name, args):
    if "reduce" not in name:
        return ""
    for a in args:
        if isinstance(a, str) and a.lower() in ("sum", "avg", "max", "min", "product", "prod"):
            return "product" if a.lower() == "prod" else a.lower()
        if hasattr(a, "op") or type(a).__name__ == "ReduceOp":
            text = str(getattr(a, "op", a)).split(".")[-1].lower()
            return {"prod": "product"}.get(text, text)
    return "sum"


class _OriginMode(DebugMode):
    """A DebugMode (so that DTensor reports its redistributions to it) that
    records collectives with the redistribution they belong to."""

    def __init__(self, comm_mode, mesh):
        super().__init__(record_output=False, record_profiler_context=False)
        self.comm_mode = comm_mode
        self.mesh = mesh
        self.frames = []  # open redistributions, innermost last
        self.current_op = ""
        self.events = []
        self.start = time.perf_counter()

    @contextlib.contextmanager
    def record_redistribute_calls(self, arg, src_placement, dst_placement, transform_info_str=None,
                                  is_explicit=False):
        def placements(p):
            return tuple(getattr(p, "placements", p))
        self.frames.append({"arg": arg, "from": placements(src_placement), "to": placements(dst_placement),
                            "explicit": is_explicit})
        try:
            yield
        finally:
            self.frames.pop()

    def record_output_placements(self, output_spec):
        pass

    def _mesh_dim(self, group):
        if self.mesh is None:
            return -1
        for d in range(self.mesh.ndim):
            if sorted(dist.get_process_group_ranks(self.mesh.get_group(d))) == sorted(group):
                return d
        return -1

    def _origin(self, mesh_dim):
        if not self.frames:
            return None
        explicit = any(f["explicit"] for f in self.frames)
        index = next((f["arg"] for f in self.frames if isinstance(f["arg"], int)), -1)
        inner = self.frames[-1]
        changed = [d for d, (a, b) in enumerate(zip(inner["from"], inner["to"])) if a != b]
        # The step on the collective's mesh dim, or the only dim that changes.
        dim = mesh_dim if mesh_dim in changed else (changed[0] if len(changed) == 1 else -1)
        step = f"{inner['from'][dim]} -> {inner['to'][dim]}" if dim >= 0 else ""
        return {"explicit": explicit, "cause": "redistribute" if explicit else "implicit",
                "op": "DTensor.redistribute" if explicit else self.current_op,
                "input_index": -1 if explicit else index,
                "from": _placements_text(inner["from"]), "to": _placements_text(inner["to"]),
                "mesh_dim": dim, "step": step}

    def _module(self):
        """The module running, as CommDebugMode attributes it (its tracker's
        `name`: a module's forward hooks, where TP styles redistribute
        outputs, still count as the module), except that code run after
        every module returned (no module open but Global) is Global, where
        CommDebugMode would keep the last module's name."""
        tracker = self.comm_mode.advanced_module_tracker
        parents = getattr(tracker, "parents", None)
        if parents is not None and not (set(parents) - {"Global"}):
            return "Global"
        return tracker.name or "Global"

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if isinstance(func, torch._ops.HigherOrderOperator):
            return func(*args, **kwargs)
        if any(t is DTensor or issubclass(t, DTensor) for t in types):
            # Let DTensor run first: its redistributions come back here.
            self.current_op = "aten::" + func.name().split("::")[-1]
            return NotImplemented
        out = func(*args, **kwargs)
        name = func._overloadpacket.__name__
        kind = _KINDS.get(name)
        if kind is not None:
            inputs, outputs = _tensors(args), _tensors(out)
            group = _group_ranks(args)
            tracker = self.comm_mode.advanced_module_tracker
            mesh_dim = self._mesh_dim(group)
            names = self.mesh.mesh_dim_names if self.mesh is not None else None
            self.events.append({
                "rank": dist.get_rank(), "seq": len(self.events), "kind": kind,
                "bytes": inputs[0].nbytes if inputs else 0,
                "output_bytes": outputs[0].nbytes if outputs else 0,
                "group": group, "mesh_dim": mesh_dim,
                "mesh_dim_name": names[mesh_dim] if names and mesh_dim >= 0 else "",
                "module": self._module(), "phase": "backward" if tracker.is_bw else "forward",
                "shape": list(inputs[0].shape) if inputs else [],
                "input_shapes": [list(t.shape) for t in inputs],
                "output_shapes": [list(t.shape) for t in outputs],
                "dtype": _DTYPES.get(inputs[0].dtype, str(inputs[0].dtype)) if inputs else "",
                "reduce_op": _reduce_op(name, args),
                "ts_us": (time.perf_counter() - self.start) * 1e6,
                "origin": self._origin(mesh_dim),
            })
        return out


class dtensor_trace:
    """Context manager tracing the collectives of the code it wraps (see the
    module docstring). `path`: where rank 0 writes the merged trace; `mesh`:
    the DeviceMesh that names mesh dims in events (optional); `noise_level`:
    CommDebugMode's (0: counts only ... 3: all operations)."""

    def __init__(self, path, mesh=None, noise_level=1):
        self.path = path
        self.mesh = mesh
        self.noise_level = noise_level

    def __enter__(self):
        self.comm = CommDebugMode()
        self.comm.__enter__()
        self.origins = _OriginMode(self.comm, self.mesh)
        self.origins.__enter__()
        return self

    def __exit__(self, *exc):
        self.origins.__exit__(*exc)
        self.comm.__exit__(*exc)
        if exc[0] is not None:
            return False
        with tempfile.TemporaryDirectory() as tmp:
            tree_file = os.path.join(tmp, "tree.json")
            self.comm.generate_json_dump(tree_file, noise_level=self.noise_level)
            tree = json.load(open(tree_file))
        world = dist.get_world_size()
        all_events = [None] * world
        dist.all_gather_object(all_events, self.origins.events)
        if dist.get_rank() == 0:
            events = [e for rank_events in all_events for e in rank_events]
            counts = {}
            for e in events:
                per_rank = counts.setdefault(str(e["rank"]), {})
                per_rank[e["kind"]] = per_rank.get(e["kind"], 0) + 1
            tree.update({
                "dtensor_schema_version": 2, "noise_level": self.noise_level, "world_size": world,
                "rank": -1, "reference_rank": 0, "events": events, "per_rank_counts": counts,
                "differing_ranks": [], "rank_differences": [],
                "producer": "pytorch " + torch.__version__,
            })
            if self.mesh is not None:
                tree["mesh"] = {"shape": list(self.mesh.shape), "dim_names": list(self.mesh.mesh_dim_names or []),
                                "device": self.mesh.device_type}
            with open(self.path, "w") as f:
                json.dump(tree, f, indent=1)
        dist.barrier()
        return False
