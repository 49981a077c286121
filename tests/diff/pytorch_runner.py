"""Runs differential-test programs (tests/diff/README.md) with PyTorch's own
DTensor and writes one record per program.

    python tests/diff/pytorch_runner.py programs.json records.json
    python tests/diff/pytorch_runner.py --isolate SECONDS programs.json records.json
    python tests/diff/pytorch_runner.py --gloo-crosscheck programs.json records.json EVERY_NTH

--isolate runs each program in a forked child: a program PyTorch crashes on
or never finishes (2.11's native_batch_norm_backward and
native_layer_norm_backward on some recipe programs) is recorded as raising
"PyTorchCrash: ..." instead of losing the whole shard.

Ranks are simulated by PyTorch's LocalTensorMode (torch.distributed._local_tensor)
over a "fake" process group: one process holds every rank's real values, the
same machinery PyTorch's own LocalDTensorTestBase uses. See the README for why.
"""

import json
import logging
import os
import sys
import warnings

import torch
import torch.distributed as dist
from torch.distributed._local_tensor import LocalTensor, LocalTensorMode
from torch.distributed.device_mesh import DeviceMesh
from torch.distributed.tensor import DTensor, Partial, Replicate, Shard
from torch.distributed.tensor.debug import CommDebugMode
from torch.distributed.tensor.parallel import (ColwiseParallel, PrepareModuleInput, RowwiseParallel,
                                               SequenceParallel, parallelize_module)
from torch.distributed.tensor.placement_types import _StridedShard

warnings.filterwarnings("ignore")
logging.getLogger("torch").setLevel(logging.ERROR)

FORMAT = "dtensor-diff/1"
LOCAL_MODE = True  # False in the Gloo cross-check workers


# ---------------------------------------------------------------- placements

def parse_placement(text):
    text = text.strip()
    if text == "R":
        return Replicate()
    if text.startswith("S(") and text.endswith(")"):
        return Shard(int(text[2:-1]))
    if text.startswith("_S(") and text.endswith(")"):  # "_S(dim, split_factor)", str() of _StridedShard
        dim, split_factor = (int(v) for v in text[3:-1].split(","))
        return _StridedShard(dim, split_factor=split_factor)
    if text == "P":
        return Partial("sum")
    if text.startswith("P(") and text.endswith(")"):
        return Partial(text[2:-1])
    raise ValueError(f"bad placement {text!r}")


def placement_str(p):
    if isinstance(p, Replicate):
        return "R"
    if isinstance(p, _StridedShard):  # a subclass of Shard in 2.11
        return f"_S({p.dim}, {p.split_factor})"
    if isinstance(p, Shard):
        return f"S({p.dim})"
    if type(p).__name__ == "_NormPartial":  # a p-norm's partial: sum of |x|^p, reduced with the root
        return f"P(norm{p.norm_type:g})"
    if isinstance(p, Partial):
        return f"P({p.reduce_op})"
    return str(p)  # placements we do not have: never equal to ours


# ---------------------------------------------------------------- values

def global_values(shape, spec, variant):
    """The deterministic generator both runners implement (README, "Inputs")."""
    n = 1
    for s in shape:
        n *= s
    def raw_of(seed):
        a = 1 + (seed * 389) % 1008
        b = (seed * 7) % 1009
        return (torch.arange(n, dtype=torch.int64) * a + b) % 1009

    def float_of(seed):
        return (raw_of(seed).to(torch.float64) / 1009.0 - 0.5) * spec.get("scale", 1.0) + spec.get("offset", 0.0)

    seed = spec["seed"] + 101 * variant
    dtype = spec.get("dtype", "float64")
    if dtype in ("int64", "int32", "uint8"):
        low = spec.get("low", 0)
        v = (raw_of(seed) % (spec["high"] - low) + low).to(getattr(torch, dtype))
    elif dtype == "bool":
        v = raw_of(seed) % 2 == 1
    elif dtype == "complex128":
        v = torch.complex(float_of(seed), float_of(seed + 1))
    else:
        v = float_of(seed).to(getattr(torch, dtype))
    v = v.reshape(shape)
    return v.sort(-1).values if spec.get("sorted") and v.dim() > 0 else v


def partial_index(coord, mesh_shape, placements):
    """Row-major index of a rank among the Partial mesh dims (0 when none)."""
    k = 0
    for d, p in enumerate(placements):
        if p.is_partial():
            k = k * mesh_shape[d] + coord[d]
    return k


def make_input(spec, mesh, world, coords):
    placements = [parse_placement(p) for p in spec["placements"]]
    shape = list(spec["shape"])
    plain = [Replicate() if p.is_partial() else p for p in placements]
    if not LOCAL_MODE:  # a real process group: this process is one rank
        k = partial_index(mesh.get_coordinate(), mesh.shape, placements)
        d = torch.distributed.tensor.distribute_tensor(global_values(shape, spec, k), mesh, plain,
                                                       src_data_rank=None)
        x = DTensor.from_local(d.to_local().clone(), mesh, placements, shape=torch.Size(shape),
                               stride=torch.empty(shape).stride())
        return x.requires_grad_(True) if spec.get("requires_grad", False) else x
    locals_by_variant = {}
    per_rank = {}
    for r in range(world):
        k = partial_index(coords[r], mesh.shape, placements)
        if k not in locals_by_variant:
            with torch.distributed._local_tensor.maybe_disable_local_tensor_mode():
                g = global_values(shape, spec, k)
            d = torch.distributed.tensor.distribute_tensor(g, mesh, plain, src_data_rank=None)
            locals_by_variant[k] = d.to_local()
        lt = locals_by_variant[k]
        per_rank[r] = (lt._local_tensors[r] if isinstance(lt, LocalTensor) else lt).clone()
    local = LocalTensor(per_rank)
    stride = torch.empty(shape).stride()
    x = DTensor.from_local(local, mesh, placements, shape=torch.Size(shape), stride=stride)
    if spec.get("requires_grad", False):
        x.requires_grad_(True)
    return x


def encode_values(t):
    """Float64 numbers in row-major order; a complex tensor's as (real,
    imaginary) pairs (runner.cc alike)."""
    t = t.detach()
    if t.is_complex():
        t = torch.view_as_real(t.resolve_conj().contiguous())
    flat = t.to(torch.float64).reshape(-1).tolist()
    out = []
    for v in flat:
        if v != v:
            out.append("nan")
        elif v in (float("inf"), float("-inf")):
            out.append("inf" if v > 0 else "-inf")
        else:
            out.append(float(f"{v:.15g}"))
    return out


def rank0(t):
    return t._local_tensors[0] if isinstance(t, LocalTensor) else t


def describe(t):
    """Record of one step output: placements, shape, global values."""
    if isinstance(t, (bool, int, float)):  # equal, is_same_size: as dtensor's runner, a plain 0-d tensor
        t = torch.tensor(float(t), dtype=torch.float64)
    if not isinstance(t, torch.Tensor):
        return {"kind": "other", "value": repr(t)}
    if isinstance(t, DTensor):
        with torch.no_grad():
            full = t.full_tensor()
        rec = {"placements": [placement_str(p) for p in t.placements],
               "shape": list(t.shape), "values": encode_values(rank0(full))}
    else:
        local = rank0(t)  # a local tensor: rank 0's (its shape may differ per rank)
        rec = {"placements": None, "shape": list(local.shape), "values": encode_values(local)}
    if t.dtype not in (torch.float64, torch.int64, torch.bool):  # compare.cc's tolerance_of reads it
        rec["dtype"] = str(t.dtype).replace("torch.", "")
    return rec


class CommBytes(torch.utils._python_dispatch.TorchDispatchMode):
    """Input bytes of every collective rank 0 issues, by name (the bytes the
    rank contributes, as dtensor's CommDebugMode records them). Entered inside
    CommDebugMode, so it sees the same functional collectives."""

    NAMESPACES = ("_c10d_functional", "c10d_functional", "_dtensor")

    def __init__(self):
        super().__init__()
        self.bytes = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if any(t == DTensor for t in types):
            return NotImplemented  # let DTensor desugar into collectives first, as CommDebugMode does
        packet = func._overloadpacket
        name = packet.__name__
        if func.namespace in self.NAMESPACES and name != "wait_tensor" and args:
            first = args[0]
            tensors = first if isinstance(first, (list, tuple)) else [first]
            n = sum(rank0(t).numel() * t.element_size() for t in tensors if isinstance(t, torch.Tensor))
            self.bytes[name] = self.bytes.get(name, 0) + n
        return func(*args, **(kwargs or {}))


def comm_bytes(counter, counts):
    """Bytes of the collectives CommDebugMode counted (inner ops of a counted
    one, e.g. the all_to_all_single inside shard_dim_alltoall, are not)."""
    return {k: v for k, v in counter.bytes.items() if k in counts}


def comm_counts(mode):
    out = {}
    for k, v in mode.get_comm_counts().items():
        name = str(k).split(".")[-1]
        out[name] = out.get(name, 0) + v
    return out


# ---------------------------------------------------------------- steps

def resolve(arg, env):
    if isinstance(arg, dict) and "t" in arg:
        return env[arg["t"]]
    if isinstance(arg, dict) and "dtype" in arg:  # a ScalarType argument
        return getattr(torch, arg["dtype"])
    if isinstance(arg, list):
        return [resolve(a, env) for a in arg]
    return arg


def flatten_outputs(result, top=True):
    """An op's results as a flat list: tuples and lists flattened, a None
    inside one kept (an undefined gradient), a None result (an op that
    returns nothing, like the in-place _foreach_ ops) no output at all."""
    if top and result is None:
        return []
    if isinstance(result, (tuple, list)):
        out = []
        for r in result:
            out.extend(flatten_outputs(r, top=False))
        return out
    return [result]


def aten_op(name):
    ns, rest = name.split("::")
    base, _, overload = rest.partition(".")
    packet = getattr(getattr(torch.ops, ns), base)
    return getattr(packet, overload or "default")


# ---------------------------------------------------------------- modules and optimizers

def module_params(step):
    """(name, global shape, value spec) of a module step's parameters, in
    order (README, "Module steps"; program.cc implements the same)."""
    kind, dims, seed = step["module"], step["dims"], step["seed"]
    if kind == "linear":
        out = [("weight", [dims[1], dims[0]], {"seed": seed})]
        return out + ([("bias", [dims[1]], {"seed": seed + 1})] if step.get("bias", True) else [])
    if kind == "embedding":
        return [("weight", list(dims), {"seed": seed})]
    if kind == "layer_norm":
        return [("weight", list(dims), {"seed": seed, "scale": 0.5, "offset": 1.0}),
                ("bias", list(dims), {"seed": seed + 1})]
    raise ValueError(f"unknown module {kind!r}")


def make_style(style):
    kw = {"use_local_output": False}  # outputs stay DTensors, comparable as a whole
    for key in ("input_layouts", "output_layouts"):
        if key in style:
            kw[key] = parse_placement(style[key])
    name = style["name"]
    if name == "colwise":
        return ColwiseParallel(**kw)
    if name == "rowwise":
        return RowwiseParallel(**kw)
    if name == "sequence":
        return SequenceParallel(use_local_output=False)
    raise ValueError(f"unknown style {name!r}")


def build_module(step, mesh):
    """The module with its deterministic parameters, parallelized (outside
    the counted region: src_data_rank=None slices locally, no collective)."""
    kind, dims = step["module"], step["dims"]
    with torch.distributed._local_tensor.maybe_disable_local_tensor_mode():
        if kind == "linear":
            m = torch.nn.Linear(dims[0], dims[1], bias=step.get("bias", True), dtype=torch.float64)
        elif kind == "embedding":
            m = torch.nn.Embedding(dims[0], dims[1], dtype=torch.float64)
        else:
            m = torch.nn.LayerNorm(dims, dtype=torch.float64)
        with torch.no_grad():
            for name, shape, spec in module_params(step):
                getattr(m, name).copy_(global_values(shape, spec, 0))
    if "prepare_input" in step:
        pi = step["prepare_input"]
        parallelize_module(m, mesh, PrepareModuleInput(
            input_layouts=[parse_placement(p) for p in pi["input_layouts"]],
            desired_input_layouts=[parse_placement(p) for p in pi["desired_input_layouts"]],
            use_local_output=False), src_data_rank=None)
    parallelize_module(m, mesh, make_style(step["style"]), src_data_rank=None)
    unshare_rank_storage(m, mesh)
    return m


def unshare_rank_storage(m, mesh):
    """Under LocalTensorMode, distribute_tensor(src_data_rank=None) of a
    Replicate parameter keeps one plain tensor for all ranks, so an in-place
    optimizer update runs once per rank on one storage (a replicated bias
    moved 4x; the Gloo cross-check caught it). Real ranks own their memory:
    give each simulated rank its own copy."""
    if not LOCAL_MODE:
        return
    ranks = [int(r) for r in mesh.mesh.flatten().tolist()]
    for name, p in list(m.named_parameters(recurse=False)):
        lt = p._local_tensor
        with torch.distributed._local_tensor.maybe_disable_local_tensor_mode():
            per_rank = ({r: t.detach().clone() for r, t in lt._local_tensors.items()} if isinstance(lt, LocalTensor)
                        else {r: lt.detach().clone() for r in ranks})
        fresh = LocalTensor(per_rank)
        d = DTensor.from_local(fresh, mesh, p.placements, run_check=False, shape=p.shape, stride=p.stride())
        m.register_parameter(name, torch.nn.Parameter(d, requires_grad=p.requires_grad))


def optimizer(step, params):
    kind, lr = step["optimizer"], step["lr"]
    if kind == "sgd":
        return torch.optim.SGD(params, lr=lr)
    if kind == "sgd_momentum":
        return torch.optim.SGD(params, lr=lr, momentum=0.9)
    if kind == "adam":
        return torch.optim.Adam(params, lr=lr)
    if kind == "adamw":
        return torch.optim.AdamW(params, lr=lr)
    raise ValueError(f"unknown optimizer {kind!r}")


def contiguous_stride(shape):
    return torch.empty(shape, device="meta").stride()


def run_step(step, env, mesh, built):
    kind = step["kind"]
    if kind == "module":
        m = built
        out = m(*[resolve(a, env) for a in step["args"]])
        return [out] + [getattr(m, name) for name, _, _ in module_params(step)], True
    if kind == "optimizer":
        params = [env[i] for i in step["params"]]
        optimizer(step, params).step()
        return params, False
    if kind == "op":
        fn = aten_op(step["op"])
        args = [resolve(a, env) for a in step.get("args", [])]
        kwargs = {k: resolve(v, env) for k, v in step.get("kwargs", {}).items()}
        return flatten_outputs(fn(*args, **kwargs)), True
    x = env[step["t"]]
    if kind == "redistribute":
        return [x.redistribute(mesh, [parse_placement(p) for p in step["placements"]])], True
    if kind == "full_tensor":
        return [x.full_tensor()], False
    if kind == "to_local":
        gp = step.get("grad_placements")
        return [x.to_local(grad_placements=None if gp is None else [parse_placement(p) for p in gp])], True
    if kind == "from_local":
        shape = step["shape"]
        return [DTensor.from_local(x, mesh, [parse_placement(p) for p in step["placements"]], run_check=False,
                                   shape=torch.Size(shape), stride=contiguous_stride(shape))], True
    if kind == "backward":
        x.sum().backward()
        return [env[i].grad for i in step.get("grads", [])], False
    raise ValueError(f"unknown step kind {kind!r}")


def error_text(e):
    first = str(e).strip().splitlines()[0] if str(e).strip() else ""
    return f"{type(e).__name__}: {first}"[:300]


def program_mesh(prog, meshes):
    """The mesh a program's tensors live on (mesh.flatten: a `_flatten()` of
    some of its dims), built once per shape, names and flattened dims. Each
    flattening gets its own root mesh: PyTorch 2.15 merges collectives of
    several mesh dims into one over a flattened mesh its root already has,
    so sharing roots would make a record depend on the programs before it."""
    spec = prog["mesh"]
    shape, names = tuple(spec["shape"]), tuple(spec.get("names") or ())
    flat = tuple(spec.get("flatten") or ())
    # mesh.flattened: dims flattened while the tensors stay on the root.
    flattened = tuple(tuple(dims) for dims in spec.get("flattened") or ())
    key = (shape, names, flat, flattened)
    if key not in meshes:
        root = DeviceMesh("cpu", torch.arange(prog["world_size"]).reshape(shape), mesh_dim_names=names or None)
        for dims in flattened:
            root[dims]._flatten()
        meshes[key] = root[flat]._flatten() if flat else root
    return meshes[key]


def rank_coordinates(prog):
    """Each rank's coordinate on the program's mesh: row-major, over the
    flattened dims only when mesh.flatten names some."""
    spec = prog["mesh"]
    shape, names = spec["shape"], spec.get("names") or []
    flat = [names.index(n) for n in spec.get("flatten") or []]
    out = {}
    for r in range(prog["world_size"]):
        coord, rest = [], r
        for size in reversed(shape):
            coord.insert(0, rest % size)
            rest //= size
        if flat:
            k = 0
            for d in flat:
                k = k * shape[d] + coord[d]
            coord = [k]
        out[r] = coord
    return out


def run_program(prog, mesh):
    world = prog["world_size"]
    coords = rank_coordinates(prog)
    try:
        env = [make_input(spec, mesh, world, coords) for spec in prog["inputs"]]
    except Exception as e:  # noqa: BLE001 - e.g. mixed Partial reduce ops
        return {"id": prog["id"], "inputs_raised": True, "error": error_text(e), "steps": []}
    steps = []
    for step in prog["steps"]:
        rec = {"raised": False}
        mode = CommDebugMode()
        counter = CommBytes()
        try:
            built = build_module(step, mesh) if step["kind"] == "module" else None
            with mode, counter:
                outs, keep = run_step(step, env, mesh, built)
            rec["comms"] = comm_counts(mode)
            rec["bytes"] = comm_bytes(counter, rec["comms"])
            rec["outputs"] = [None if o is None else describe(o) for o in outs]
            if keep:
                env.extend(outs)
        except Exception as e:  # noqa: BLE001 - raising is what we record
            rec["raised"] = True
            rec["error"] = error_text(e)
            steps.append(rec)
            break
        steps.append(rec)
    return {"id": prog["id"], "steps": steps}


def gloo_worker(rank, world, programs, out_path, port):
    """One rank of the Gloo cross-check: real processes, real collectives."""
    global LOCAL_MODE
    LOCAL_MODE = False
    import datetime
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=60))
    torch.set_num_threads(1)
    meshes, records = {}, []
    for p in programs:
        torch.manual_seed(0)
        records.append(run_program(p, program_mesh(p, meshes)))
    dist.destroy_process_group()
    if rank == 0:
        with open(out_path, "w") as f:
            json.dump({"format": FORMAT, "producer": f"pytorch {torch.__version__} gloo", "records": records}, f)


def gloo_comms(counts):
    """On Gloo (no all_to_all on CPU), PyTorch's shard_dim_alltoall falls
    back to all_gather + local chunk: map LocalTensorMode's counts to that."""
    out = dict(counts)
    k = out.pop("shard_dim_alltoall", 0)
    if k:
        out["all_gather_into_tensor"] = out.get("all_gather_into_tensor", 0) + k
    return out


def same_record(a, b, backend_only=False):
    """Equal raising, counts, placements, shapes; values to 1e-10. With
    backend_only, b's counts are first mapped by gloo_comms."""
    if a.get("inputs_raised", False) != b.get("inputs_raised", False) or len(a["steps"]) != len(b["steps"]):
        return False
    for x, y in zip(a["steps"], b["steps"]):
        if x["raised"] != y["raised"]:
            return False
        if x["raised"]:
            continue
        if x["comms"] != (gloo_comms(y["comms"]) if backend_only else y["comms"]):
            return False
        if len(x["outputs"]) != len(y["outputs"]):
            return False
        for o, q in zip(x["outputs"], y["outputs"]):
            if (o is None) != (q is None):
                return False
            if o is None:
                continue
            if o["placements"] != q["placements"] or o["shape"] != q["shape"]:
                return False
            for u, v in zip(o["values"], q["values"]):
                if isinstance(u, str) or isinstance(v, str):
                    if u != v:
                        return False
                elif abs(u - v) > 1e-10 * max(1.0, abs(v)):
                    return False
    return True


def gloo_crosscheck(programs_path, records_path, sample):
    """Runs every `sample`-th world-4 program on 4 Gloo processes and compares
    with the LocalTensorMode records: the simulation must be faithful."""
    import tempfile
    import torch.multiprocessing as mp
    with open(programs_path) as f:
        programs = [p for p in json.load(f)["programs"] if p["world_size"] == 4][::sample]
    with open(records_path) as f:
        local = {r["id"]: r for r in json.load(f)["records"]}
    out = tempfile.mktemp(suffix=".json")
    mp.start_processes(gloo_worker, args=(4, programs, out, 29600 + os.getpid() % 300), nprocs=4,
                       start_method="spawn")
    with open(out) as f:
        gloo = json.load(f)["records"]
    # A rank-dependent failure (one rank raises, the others wait) times out
    # the group; later programs then fail too and are not compared.
    for n, r in enumerate(gloo):
        if any("timeout" in s.get("error", "") for s in r["steps"]):
            gloo = gloo[:n]
            print(f"gloo cross-check: {r['id']} timed out (a rank-dependent failure); stopping there")
            break
    same = [r["id"] for r in gloo if same_record(r, local[r["id"]])]
    backend = [r["id"] for r in gloo if r["id"] not in same and same_record(r, local[r["id"]], True)]
    bad = [r["id"] for r in gloo if r["id"] not in same and r["id"] not in backend]
    print(f"gloo cross-check: {len(gloo)} programs: {len(same)} identical to LocalTensorMode, "
          f"{len(backend)} identical but for Gloo's all_gather fallback of shard_dim_alltoall"
          + (f"; differ: {bad}" if bad else ""))
    for pid in bad[:5]:  # show where the first few differ
        g, l = next(r for r in gloo if r["id"] == pid), local[pid]
        for k, (x, y) in enumerate(zip(g["steps"], l["steps"])):
            if not same_record({"steps": [x]}, {"steps": [y]}, True):
                print(f"  {pid} step {k}: gloo {json.dumps(x)[:200]}\n  {' ' * len(pid)} local {json.dumps(y)[:200]}")
                break
    os.remove(out)
    return not bad


def run_in_child(fn, *args, seconds=None):
    """fn(*args) in a forked child, its JSON result back through a pipe:
    (result, None), or (None, why) when fn raised, the child died (a kernel's
    segmentation fault) or it outlived `seconds` (then it is killed). Used by
    --isolate here and by sample_overloads.py."""
    import select
    import signal
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            data = json.dumps({"result": fn(*args)}).encode()
        except BaseException as e:  # noqa: BLE001 - the child must exit here, whatever happened
            data = json.dumps({"raised": error_text(e)}).encode()
        with os.fdopen(write, "wb") as f:
            f.write(data)
        os._exit(0)
    os.close(write)
    chunks, why = [], None
    with os.fdopen(read, "rb") as f:
        while True:
            ready, _, _ = select.select([f], [], [], seconds)
            if not ready:
                os.kill(pid, signal.SIGKILL)
                why = f"no result after {seconds} s (killed)"
                break
            chunk = os.read(f.fileno(), 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
    _, status = os.waitpid(pid, 0)
    if why is None and (status != 0 or not chunks):
        why = f"the process died (wait status {status})"
    if why is not None:
        return None, why
    reply = json.loads(b"".join(chunks))
    return (reply["result"], None) if "result" in reply else (None, f"raised {reply['raised']}")


def run_isolated(prog, mesh, seconds):
    """run_program in a forked child (the parent seeded the generator it
    inherits); a child that crashes or outlives `seconds` gives a record
    that raised."""
    record, why = run_in_child(run_program, prog, mesh, seconds=seconds)
    if why is not None:
        return {"id": prog["id"], "steps": [{"raised": True, "error": f"PyTorchCrash: {why}"}]}
    return record


def main(argv):
    if len(argv) == 5 and argv[1] == "--gloo-crosscheck":
        sys.exit(0 if gloo_crosscheck(argv[2], argv[3], int(argv[4])) else 1)
    isolate = None
    if len(argv) == 5 and argv[1] == "--isolate":
        isolate = float(argv[2])
        argv = [argv[0]] + argv[3:]
    if len(argv) != 3:
        sys.exit(__doc__)
    with open(argv[1]) as f:
        doc = json.load(f)
    if doc.get("format") != FORMAT:
        sys.exit(f"{argv[1]}: not a {FORMAT} file")
    programs = doc["programs"]
    records = [None] * len(programs)
    by_world = {}
    for i, p in enumerate(programs):
        by_world.setdefault(p["world_size"], []).append(i)
    for world, idxs in sorted(by_world.items()):
        dist.init_process_group("fake", rank=0, world_size=world)
        meshes = {}
        with LocalTensorMode(frozenset(range(world))):
            for i in idxs:
                torch.manual_seed(0)
                mesh = program_mesh(programs[i], meshes)
                records[i] = run_isolated(programs[i], mesh, isolate) if isolate else run_program(programs[i], mesh)
        dist.destroy_process_group()
    out = {"format": FORMAT, "producer": f"pytorch {torch.__version__}", "records": records}
    with open(argv[2], "w") as f:
        json.dump(out, f, separators=(",", ":"))


if __name__ == "__main__":
    main(sys.argv)
