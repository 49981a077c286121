"""Samples for the validation shards (issue #33): for every aten overload
PyTorch 2.15's DTensor shards (tools/op_coverage/pytorch-2.15-ops.txt) that
the other shards start fewer than six programs with, three calls built from
its schema, or else from its recipe (sample_recipes.py), each checked to run
on plain tensors holding the corpus's own input values (Note [Input values]
in program.cc). Random-valued overloads' samples are flagged "random"
(their values are not compared). Needs torch (run it with the venv of
tools/setup.sh); generate_programs.py, plain Python, then lays the samples
out on meshes.

    $VENV/bin/python tests/diff/sample_overloads.py --out tests/diff/testdata/validation_samples.json

A sample is {"op", "inputs": [input specs without placements], "args",
"kwargs", "written": [input indices the op writes]}, under "samples"
(schema-built), "recipes", "random" or "late" (recipes with float8 or
uint8 tensors); overloads with none are listed under "unsampled" with why.
"""
import argparse
import glob
import json
import os
import warnings

import torch

import sample_recipes
from pytorch_runner import global_values, run_in_child

FORMAT = "dtensor-validation-samples/1"
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# The shapes the samples try, in order; every tensor argument of a call
# takes the same one (what pointwise, reduction and most unary ops accept).
# The shapes after the first FIRST_SHAPES give the overloads that took
# fewer than three samples from those (1-D only, 3- to 5-D only, square
# matrices) more; an overload with three samples, or with none (its
# recipe's, sample_recipes.py), never reaches them, so they move no sample.
SHAPES = [[4, 6], [6], [2, 3, 4], [3, 5], [2, 4, 2, 3], [2, 3, 4, 4], [2, 2, 3, 4, 4],
          [3, 2, 5], [1, 2, 3, 5], [1, 3, 2, 3, 2], [8], [5, 2, 2], [2, 2], [1, 4, 3], [2, 1, 3, 3, 2],
          [5], [2, 5, 3], [3, 4]]
FIRST_SHAPES = 7
# Value domains (program.cc: (raw/1009 - 0.5) * scale + offset): inside
# (0.1, 0.9), where log, sqrt, acos, atanh, logit, ... are defined; then the
# signed (-0.5, 0.5); int64 tensors hold [0, 3).
DOMAINS = [{"scale": 0.8, "offset": 0.5}, {"scale": 1.0, "offset": 0.0}]
INT_HIGH = 3
FOREACH_SHAPES = [[4, 3], [5], [2, 6]]


def foreach_shapes(shape):
    """The list elements' shapes of a _foreach_* sample: FOREACH_SHAPES for
    the first shape (the samples of before), then ones built from `shape`,
    so that each shape gives a sample of its own."""
    if shape == SHAPES[0]:
        return FOREACH_SHAPES
    return [list(shape), [shape[0] + 1], list(reversed(shape))]


# Ops whose values are random or uninitialized: no record can compare their
# values with PyTorch's or one device's (PyTorch's ranks draw their own), so
# their samples are flagged "random" and the comparison skips values there
# (their placements, shapes, collectives and raising are compared; their
# consistency is tested in tests/core/ops/nn_ops_test.cc).
NONDETERMINISTIC = ("rand", "bernoulli", "normal", "uniform", "exponential", "geometric", "log_normal",
                    "multinomial", "dropout", "empty", "cauchy")


def is_random(name):
    """Whether overload `name`'s values are random or uninitialized (dropout's
    backward is not: it scales by the mask it is given)."""
    return any(word in name for word in NONDETERMINISTIC) and "dropout_backward" not in name


# Ops defined only on sorted inputs, which the corpus's values are not (a
# search in unsorted boundaries differs with where the boundaries are split).
NEEDS_SORTED = ("bucketize", "searchsorted")
SCALAR_LIST = [0.5, 2.0, -1.0]
# What a recipe's call may take and return besides float64, int64 and bool
# (the records hold them: Note [Input values] in program.cc, encode_values).
RECIPE_DTYPES = (torch.float64, torch.int64, torch.bool, torch.int32, torch.float32, torch.bfloat16,
                 torch.complex128, torch.float8_e4m3fn, torch.uint8)
# Dtypes the records learnt after the recipes' shard was recorded: samples
# using them go to a shard of their own ("late"), so that no recipe program moves.
LATE_DTYPES = ("float8_e4m3fn", "uint8")


def values(spec, seed):
    """The corpus's input values for `spec` under `seed` (variant 0 of
    pytorch_runner.global_values, which program.cc computes alike)."""
    return global_values(spec["shape"], dict(spec, seed=seed), 0)


def corpus_ops():
    """Per overload, the programs of the other shards (the validation shards,
    ids x*, the recipes' y* and the random-valued overloads' r*, excluded)
    whose first op step calls it."""
    calls = {}
    for path in sorted(glob.glob(os.path.join(HERE, "testdata", "programs_*.json"))):
        for prog in json.load(open(path))["programs"]:
            if prog["id"].startswith(("x", "y", "r", "z")):
                break
            first = next((step["op"] for step in prog["steps"] if step.get("kind") == "op"), None)
            if first:  # the op diff_runner --by-op credits the program to
                calls[first] = calls.get(first, 0) + 1
    return calls


# An overload the other shards start fewer programs with gets samples too:
# three samples on two meshes each (issue #33).
ENOUGH_PROGRAMS = 6


def overload(name):
    base, _, ov = name[len("aten::"):].partition(".")
    return getattr(getattr(torch.ops.aten, base), ov or "default")


def spatial_rank(op_name):
    """2 for "max_pool2d_with_indices", 1 for "upsample_linear1d", else None."""
    for k in (1, 2, 3):
        if f"{k}d" in op_name:
            return k
    return None


def literal(arg, shape, int_dtype, list_len, op_name):
    """A value for a non-tensor argument without a default, or None to give up.
    Types as torch's Python schema prints them (number = Scalar)."""
    t, name = str(arg.type), arg.name
    k = spatial_rank(op_name) or 1
    if t in ("int", "SymInt"):
        return 0 if "dim" in name else 1
    if t in ("List[int]", "List[SymInt]"):
        if "dim" in name:
            return [0]
        if name in ("size", "shape", "input_sizes", "input_size", "self_sizes"):
            return list(shape)
        if name == "normalized_shape":
            return list(shape[-1:])
        if name in ("output_size", "kernel_size"):
            return [2] * k
        return [1] * k
    if t == "bool":
        return False
    if t == "float":
        return 0.5
    if t == "number":
        return 2 if int_dtype else 0.5
    if t == "List[number]":
        return SCALAR_LIST[:list_len]
    if t == "List[bool]":
        return [True, True, True]
    if t.startswith("Optional["):
        return "none"  # JSON null: the argument's None
    if t == "str":
        return {"reduce": "sum", "approximate": "none", "rounding_mode": "trunc"}.get(name)
    return None


def build(op, schema, shape, domain, int_dtype):
    """(inputs, args, kwargs, written) for one call, or None."""
    inputs, args, kwargs, written = [], [], {}, []
    foreach = schema.name.startswith("aten::_foreach_")
    list_len = len(foreach_shapes(shape)) if foreach else 2

    def tensor(shape_):
        spec = {"shape": list(shape_), "seed": 0}
        if int_dtype:
            spec.update(dtype="int64", high=INT_HIGH)
        else:
            spec.update(domain)
        inputs.append(spec)
        return {"t": len(inputs) - 1}

    for a in schema.arguments:
        t = str(a.type)
        is_written = a.alias_info is not None and a.alias_info.is_write
        if a.is_out:
            ref = tensor([0])  # resized below to what the op returns
            written.append(ref["t"])
            kwargs[a.name] = ref
            continue
        if t == "Tensor":
            ref = tensor(shape)
            if a.name == "scalars":  # one scalar per list element
                inputs[ref["t"]]["shape"] = [list_len]
            elif foreach:  # _foreach_add.Tensor(xs, other): one 0-d tensor for every element
                inputs[ref["t"]]["shape"] = []
            if is_written:
                written.append(ref["t"])
            (kwargs.__setitem__(a.name, ref) if a.kwarg_only else args.append(ref))
            continue
        if t in ("Tensor[]", "List[Tensor]"):
            shapes = foreach_shapes(shape) if foreach else [shape] * list_len
            refs = [tensor(s) for s in shapes]
            if is_written:
                written.extend(r["t"] for r in refs)
            (kwargs.__setitem__(a.name, refs) if a.kwarg_only else args.append(refs))
            continue
        if a.has_default_value():
            if a.kwarg_only:
                continue
            # Positional: its default, dropped below if nothing follows it.
            default = a.default_value
            if not (default is None or isinstance(default, (bool, int, float, str, list))):
                return None
            args.append(default)
            continue
        v = literal(a, shape, int_dtype, list_len, schema.name)
        if v is None:
            return str(a.type) + " " + a.name
        if v == "none":
            v = None
        (kwargs.__setitem__(a.name, v) if a.kwarg_only else args.append(v))
    drop_trailing_defaults(schema, args)
    return inputs, args, kwargs, written


def drop_trailing_defaults(schema, args):
    """Drops the trailing positional arguments equal to their defaults (the
    schema fills them)."""
    defaults = [a for a in schema.arguments if not a.kwarg_only]
    while args and len(args) <= len(defaults) and defaults[len(args) - 1].has_default_value() and \
            not isinstance(args[-1], (dict, list)) and args[-1] == defaults[len(args) - 1].default_value:
        args.pop()


def materialize(value, tensors):
    if isinstance(value, dict) and "t" in value:
        return tensors[value["t"]]
    if isinstance(value, dict) and "dtype" in value:  # a ScalarType argument
        return getattr(torch, value["dtype"])
    if isinstance(value, list):
        return [materialize(v, tensors) for v in value]
    return value


def functional_of(op):
    """The overload of the same name whose arguments are op's without its
    outs (what sizes the out tensors), or None."""
    schema = op._schema
    want = [(a.name, str(a.type)) for a in schema.arguments if not a.is_out]
    packet = getattr(torch.ops.aten, schema.name[len("aten::"):])
    for ov in packet.overloads():
        cand = getattr(packet, ov)
        args = cand._schema.arguments
        if any(a.is_out for a in args):
            continue
        if [(a.name, str(a.type)) for a in args] == want:
            return cand
    return None


def try_call(op, inputs, args, kwargs, written, recipe=False):
    """Runs the call on plain tensors, out tensors shaped as the functional
    overload's results (an empty out crashes some kernels). Returns None or
    the error text. A recipe's call (sample_recipes.py) may also pass
    non-tensor keywords to the functional overload, have bool outs, and
    return int32 tensors (pivots, exponents) and empty ones."""
    tensors = [values(spec, 11 + 7 * i) for i, spec in enumerate(inputs)]
    if recipe:  # not views (detach_ refuses to detach a view in place)
        tensors = [t.clone() for t in tensors]
    outs = [i for i in written if inputs[i]["shape"] == [0]]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if outs:
                functional = functional_of(op)
                if functional is None:
                    return "no functional overload to size its outs"
                if recipe:
                    plain = {k: materialize(v, tensors) for k, v in kwargs.items()
                             if not (isinstance(v, dict) and "t" in v and v["t"] in outs)}
                else:
                    plain = {k: materialize(v, tensors) for k, v in kwargs.items() if int(v["t"]) not in outs} \
                        if all(isinstance(v, dict) and "t" in v for v in kwargs.values()) else None
                if plain is None:
                    return "out= with non-tensor kwargs"
                res = functional(*materialize(args, tensors), **plain)
                res = list(res) if isinstance(res, (tuple, list)) else [res]
                if len(res) != len(outs):
                    return "outs and results differ in number"
                for i, r in zip(outs, res):
                    if r.dtype not in (RECIPE_DTYPES if recipe else (torch.float64, torch.int64)):
                        return f"out dtype {r.dtype}"
                    inputs[i] = {"shape": list(r.shape), "seed": 0}
                    if r.dtype == torch.bool:
                        inputs[i]["dtype"] = "bool"
                    elif r.dtype in (torch.int64, torch.int32, torch.uint8):
                        inputs[i].update({"dtype": str(r.dtype)[len("torch."):], "high": INT_HIGH})
                    else:
                        inputs[i].update(DOMAINS[1])
                        if r.dtype != torch.float64:
                            inputs[i]["dtype"] = str(r.dtype)[len("torch."):]
                    tensors[i] = torch.empty_like(r)
            result = op(*materialize(args, tensors), **{k: materialize(v, tensors) for k, v in kwargs.items()})
    except Exception as e:  # noqa: BLE001: any refusal means "try another shape"
        return str(e).splitlines()[0][:200] if str(e) else type(e).__name__
    results = result if isinstance(result, (tuple, list)) else [result]
    for r in results:
        if isinstance(r, torch.Tensor) and r.dtype not in (torch.float64, torch.int64, torch.bool) and \
                not (recipe and (r.dtype in RECIPE_DTYPES or r.numel() == 0)):
            return f"result dtype {r.dtype}"
    return None


def samples_of(name, want, recipe=False):
    try:
        op = overload(name)
    except AttributeError:
        return [], "not in this PyTorch"
    schema = op._schema
    found, error, seen = [], "no schema-built call", set()
    for i, shape in enumerate(SHAPES):
        if i == FIRST_SHAPES and not found:
            break  # the overload's recipe's, as before the later shapes were added
        for int_dtype in (False, True):
            for domain in DOMAINS if not int_dtype else [None]:
                built = build(op, schema, shape, domain, int_dtype)
                if isinstance(built, str) or built is None:
                    return found, f"an argument the sampler cannot build: {built}"
                inputs, args, kwargs, written = built
                err = try_call(op, inputs, args, kwargs, written, recipe)
                if err is not None:
                    error = err
                    continue
                key = json.dumps([inputs, args, kwargs], sort_keys=True)
                if key in seen:
                    continue
                seen.add(key)
                found.append({"op": name, "inputs": inputs, "args": args, "kwargs": kwargs, "written": written})
                break  # one domain per shape and dtype
            if len(found) >= want:
                return found, None
            if found and found[-1]["inputs"] and found[-1]["inputs"][0]["shape"] == shape:
                break  # this shape ran: the next shape, not another dtype
    return found, (None if found else error)


def build_recipe(schema, variant):
    """(inputs, args, kwargs, written) for one recipe variant, or the name
    of an argument the variant lacks."""
    inputs, args, kwargs, written = [], [], {}, []

    def tensor(spec):
        inputs.append(dict(spec))
        return {"t": len(inputs) - 1}

    def value(v):
        if sample_recipes.is_tensor_spec(v):
            return tensor(v)
        if isinstance(v, list):
            return [value(x) for x in v]
        return v

    for a in schema.arguments:
        t = str(a.type)
        name = a.name + "@Tensor" if "Tensor" in t and a.name + "@Tensor" in variant else a.name
        is_written = a.alias_info is not None and a.alias_info.is_write
        if name in variant:
            v = value(variant[name])
            refs = v if isinstance(v, list) else [v]
            if is_written or a.is_out:
                written.extend(r["t"] for r in refs if isinstance(r, dict))
        elif a.is_out:
            v = tensor(dict(sample_recipes.SIGNED, shape=[0], seed=0))  # shaped by try_call
            written.append(v["t"])
        elif a.has_default_value():
            if a.kwarg_only:
                continue
            default = a.default_value
            if not (default is None or isinstance(default, (bool, int, float, str, list))):
                return f"{t} {a.name}"
            v = default
        else:
            return f"{t} {a.name}"
        (kwargs.__setitem__(a.name, v) if a.kwarg_only else args.append(v))
    drop_trailing_defaults(schema, args)
    return inputs, args, kwargs, written


def recipe_samples_of(name):
    """Samples of `name` from its recipe (sample_recipes.py): (found, error)."""
    base = name[len("aten::"):].partition(".")[0]
    reason = sample_recipes.not_recordable(base)
    if reason:
        return [], reason
    variants = sample_recipes.recipe_of(base)
    if variants is None:  # the schema-built calls again, with what a recipe may do
        found, _ = samples_of(name, 3, recipe=True)
        return found, (None if found else "no recipe")
    try:
        op = overload(name)
    except AttributeError:
        return [], "not in this PyTorch"
    found, error = [], None
    for variant in variants:
        built = build_recipe(op._schema, variant)
        if isinstance(built, str):
            error = f"the recipe lacks {built}"
            continue
        inputs, args, kwargs, written = built
        err = try_call(op, inputs, args, kwargs, written, recipe=True)
        if err is not None:
            error = err
            continue
        sample = {"op": name, "inputs": inputs, "args": args, "kwargs": kwargs, "written": written}
        if sample not in found:
            found.append(sample)
    return found, (None if found else error)


def isolated(fn, *args):
    """fn(*args) in a forked child: a call some kernel crashes on (a
    segmentation fault on arguments it does not check) costs that overload
    its samples, not the run."""
    result, why = run_in_child(fn, *args)
    if why is not None:
        return [], f"a sample's call crashed PyTorch or the sampler: {why}"
    found, error = result
    return found, error


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--ops", default=os.path.join(ROOT, "tools", "op_coverage", "pytorch-2.15-ops.txt"))
    ap.add_argument("--per-op", type=int, default=3)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    calls = corpus_ops()
    names = [l.strip() for l in open(a.ops) if l.strip() and not l.startswith("#")]
    uncalled = [n for n in names if n.startswith("aten::") and calls.get(n, 0) < ENOUGH_PROGRAMS]
    samples, recipes, random_samples, late, unsampled = [], [], [], [], {}
    for name in uncalled:
        if is_random(name):
            found, error = isolated(samples_of, name, a.per_op)
            if not found:
                found, recipe_error = isolated(recipe_samples_of, name)
                error = error if recipe_error == "no recipe" else recipe_error
            random_samples.extend(dict(sample, random=True) for sample in found)
            if not found:
                unsampled[name] = error
            continue
        # Sorted boundaries: the recipes' (sorted inputs), never schema-built.
        found, error = ([], "needs sorted boundaries") if any(w in name for w in NEEDS_SORTED) \
            else isolated(samples_of, name, a.per_op)
        samples.extend(found)
        if found:
            continue
        # Stage 2: the overload's hand-written recipe (sample_recipes.py).
        found, recipe_error = isolated(recipe_samples_of, name)
        for sample in found:
            (late if any(spec.get("dtype") in LATE_DTYPES for spec in sample["inputs"]) else recipes).append(sample)
        if not found:
            unsampled[name] = error if recipe_error == "no recipe" else recipe_error
    with open(a.out, "w") as f:
        json.dump({"format": FORMAT, "pytorch": torch.__version__.split("+")[0], "samples": samples,
                   "recipes": recipes, "random": random_samples, "late": late, "unsampled": unsampled}, f, indent=None, separators=(",", ":"),
                  sort_keys=True)
        f.write("\n")
    ops = len({s["op"] for s in samples})
    by_recipe = len({s["op"] for s in recipes})
    randoms = len({s["op"] for s in random_samples})
    print(f"{len(uncalled)} overloads other shards call in fewer than {ENOUGH_PROGRAMS} programs: {ops} sampled ({len(samples)} samples), "
          f"{by_recipe} by recipe ({len(recipes)} samples), {randoms} with random values ({len(random_samples)} "
          f"samples), {len({s['op'] for s in late})} with float8 or uint8 tensors ({len(late)} samples), "
          f"{len(unsampled)} unsampled -> {a.out}")


if __name__ == "__main__":
    main()
