"""Generates the differential-test corpus (format: tests/diff/README.md).

    python3 tests/diff/generate_programs.py --seed 18 --count 2400 --out DIR [--shards 8] [--structured 240]

Plain Python (no torch needed): seeded, so the same command writes the same
files. Shards 0..shards-1 hold the op corpus: every program is one op
template (FAMILIES below) applied to inputs with random placements on one of
the meshes (4), (2, 2), (2, 2, 2), optionally followed by a redistribute, a
full_tensor and a backward. One more shard holds the structured programs
(STRUCTURED below, their own random stream so the op corpus does not move):
to_local(grad_placements) / from_local around local computation,
tensor-parallel module applications and optimizer steps.
"""

import argparse
import json
import os
import random

FORMAT = "dtensor-diff/1"
MESHES = [((4,), ["x"], 4), ((2, 2), ["dp", "tp"], 4), ((2, 2, 2), ["a", "b", "c"], 8)]


class Gen:
    def __init__(self, rng):
        self.rng = rng
        self.seed_counter = 0

    def dims(self, ndim, lo=1, hi=6):
        return [self.rng.randint(lo, hi) for _ in range(ndim)]

    def shape(self, lo_nd=1, hi_nd=3):
        return self.dims(self.rng.randint(lo_nd, hi_nd))

    def t(self, shape, **kw):
        self.seed_counter += 1
        spec = {"shape": list(shape), "seed": self.rng.randint(0, 10000)}
        spec.update(kw)
        return spec

    def idx(self, shape, high):
        return self.t(shape, dtype="int64", high=high)

    def pos(self, shape):
        return self.t(shape, offset=1.0)

    def dim(self, ndim):
        d = self.rng.randrange(ndim)
        return d - ndim if self.rng.random() < 0.2 else d

    def dimlist(self, ndim):
        k = self.rng.randint(1, ndim)
        return sorted(self.rng.sample(range(ndim), k))

    def broadcast_pair(self):
        a = self.shape(1, 3)
        b = list(a)
        r = self.rng.random()
        if r < 0.3:
            b = b[self.rng.randint(1, len(b)):] or [1]
            if b == [1] and len(a) >= 1:
                b = [a[-1]]
        elif r < 0.6:
            i = self.rng.randrange(len(b))
            b[i] = 1
        if self.rng.random() < 0.5:
            a, b = b, a
        return a, b


def op(name, *args, **kwargs):
    return {"kind": "op", "op": name, "args": list(args), "kwargs": kwargs}


def T(i):
    return {"t": i}


UNARY = ["abs", "neg", "relu", "sigmoid", "tanh", "exp", "sin", "cos", "gelu", "silu", "erf",
         "atan", "sinh", "cosh", "expm1", "floor", "ceil", "round", "trunc", "sign", "frac",
         "tan", "asin", "acos", "exp2", "clone", "zeros_like", "ones_like", "square"]
POSITIVE_UNARY = ["log", "sqrt", "rsqrt", "reciprocal", "log1p", "log2"]
BINARY = ["add.Tensor", "sub.Tensor", "mul.Tensor", "div.Tensor", "maximum", "minimum", "atan2",
          "hypot", "eq.Tensor", "gt.Tensor", "lt.Tensor", "ge.Tensor", "le.Tensor", "ne.Tensor"]


def unary(g, name):
    spec = g.pos(g.shape()) if name in POSITIVE_UNARY else g.t(g.shape())
    return [spec], [op(f"aten::{name}", T(0))]


def binary(g, name):
    a, b = g.broadcast_pair()
    second = g.pos(b) if name.startswith("div") else g.t(b)
    return [g.t(a), second], [op(f"aten::{name}", T(0), T(1))]


def scalar_ops(g):
    s = g.shape()
    x = g.t(s)
    choice = g.rng.choice([
        op("aten::mul.Scalar", T(0), 2.5), op("aten::div.Scalar", T(0), 4.0),
        op("aten::add.Scalar", T(0), 1.5), op("aten::pow.Tensor_Scalar", T(0), 2),
        op("aten::clamp", T(0), -0.2, 0.3), op("aten::leaky_relu", T(0), 0.1),
        op("aten::hardtanh", T(0), -0.25, 0.25), op("aten::softplus", T(0), 1, 20),
        op("aten::elu", T(0)), op("aten::rsub.Scalar", T(0), 1.0),
        op("aten::add.Tensor", T(0), T(0), alpha=2), op("aten::gelu", T(0), approximate="tanh")])
    return [x], [choice]


def pointwise3(g):
    a, b = g.broadcast_pair()
    kind = g.rng.choice(["addcmul", "where", "lerp", "pow", "xlogy"])
    if kind == "addcmul":
        return [g.t(a), g.t(b), g.t(a)], [op("aten::addcmul", T(0), T(1), T(2), value=0.5)]
    if kind == "where":
        return [g.t(a), g.t(b)], [op("aten::gt.Tensor", T(0), T(1)), op("aten::where.self", T(2), T(0), T(1))]
    if kind == "lerp":
        return [g.t(a), g.t(b)], [op("aten::lerp.Scalar", T(0), T(1), 0.3)]
    if kind == "pow":
        return [g.pos(a), g.t(b)], [op("aten::pow.Tensor_Tensor", T(0), T(1))]
    return [g.t(a), g.pos(b)], [op("aten::xlogy.Tensor", T(0), T(1))]


def reduction(g):
    s = g.shape()
    nd = len(s)
    kd = g.rng.random() < 0.4
    kind = g.rng.choice(["sum", "sum_all", "mean", "mean_all", "amax", "amin", "max_dim", "min_dim",
                         "argmax", "argmin", "prod", "var", "std", "norm", "logsumexp", "cumsum",
                         "max_all"])
    x = g.pos(s) if kind in ("prod",) else g.t(s)
    d = g.dim(nd)
    ops = {
        "sum": op("aten::sum.dim_IntList", T(0), g.dimlist(nd), kd),
        "sum_all": op("aten::sum", T(0)),
        "mean": op("aten::mean.dim", T(0), g.dimlist(nd), kd),
        "mean_all": op("aten::mean", T(0)),
        "amax": op("aten::amax", T(0), g.dimlist(nd), kd),
        "amin": op("aten::amin", T(0), g.dimlist(nd), kd),
        "max_dim": op("aten::max.dim", T(0), d, kd),
        "min_dim": op("aten::min.dim", T(0), d, kd),
        "argmax": op("aten::argmax", T(0), d, kd),
        "argmin": op("aten::argmin", T(0), d, kd),
        "prod": op("aten::prod.dim_int", T(0), d, kd),
        "var": op("aten::var.correction", T(0), g.dimlist(nd), correction=1, keepdim=kd),
        "std": op("aten::std.correction", T(0), g.dimlist(nd), correction=1, keepdim=kd),
        "norm": op("aten::linalg_vector_norm", T(0), 2, g.dimlist(nd), kd),
        "logsumexp": op("aten::logsumexp", T(0), g.dimlist(nd), kd),
        "cumsum": op("aten::cumsum", T(0), d),
        "max_all": op("aten::max", T(0)),
    }
    return [x], [ops[kind]]


def matmul(g):
    m, k, n, b = g.dims(4)
    kind = g.rng.choice(["mm", "bmm", "addmm", "matmul", "baddbmm", "linear", "dot", "mv", "t",
                         "matmul3"])
    if kind == "mm":
        return [g.t([m, k]), g.t([k, n])], [op("aten::mm", T(0), T(1))]
    if kind == "bmm":
        return [g.t([b, m, k]), g.t([b, k, n])], [op("aten::bmm", T(0), T(1))]
    if kind == "addmm":
        bias = [n] if g.rng.random() < 0.5 else [m, n]
        return [g.t(bias), g.t([m, k]), g.t([k, n])], [op("aten::addmm", T(0), T(1), T(2))]
    if kind == "matmul":
        return [g.t([b, m, k]), g.t([k, n])], [op("aten::matmul", T(0), T(1))]
    if kind == "matmul3":
        return [g.t([m, k]), g.t([b, k, n])], [op("aten::matmul", T(0), T(1))]
    if kind == "baddbmm":
        return [g.t([b, m, n]), g.t([b, m, k]), g.t([b, k, n])], [op("aten::baddbmm", T(0), T(1), T(2))]
    if kind == "linear":
        return [g.t([b, m, k]), g.t([n, k]), g.t([n])], [op("aten::linear", T(0), T(1), T(2))]
    if kind == "dot":
        return [g.t([k + 2]), g.t([k + 2])], [op("aten::dot", T(0), T(1))]
    if kind == "mv":
        return [g.t([m, k]), g.t([k])], [op("aten::mv", T(0), T(1))]
    return [g.t([m, k])], [op("aten::t", T(0))]


def view(g):
    s = g.shape(1, 3)
    nd = len(s)
    kind = g.rng.choice(["view", "reshape", "transpose", "permute", "unsqueeze", "squeeze",
                         "flatten", "unflatten", "expand", "slice", "select", "narrow", "movedim",
                         "tril", "view_split", "contiguous_t", "index_select", "repeat"])
    if kind in ("view", "reshape"):
        s = g.rng.choice([[2, 6], [4, 3], [3, 2, 2], [6, 4], [2, 3, 4], [4, 4]])
        total = 1
        for v in s:
            total *= v
        target = g.rng.choice([[total], [-1, s[-1]], [s[0], -1]] + ([[s[0] * s[1]] + s[2:]] if len(s) > 2 else [[s[1], s[0]]]))
        return [g.t(s)], [op(f"aten::{kind}", T(0), target)]
    if kind == "transpose":
        return [g.t(s)], [op("aten::transpose.int", T(0), g.dim(nd), g.dim(nd))]
    if kind == "permute":
        p = list(range(nd))
        g.rng.shuffle(p)
        return [g.t(s)], [op("aten::permute", T(0), p)]
    if kind == "unsqueeze":
        return [g.t(s)], [op("aten::unsqueeze", T(0), g.rng.randint(0, nd))]
    if kind == "squeeze":
        s[g.rng.randrange(nd)] = 1
        return [g.t(s)], [op("aten::squeeze.dim", T(0), g.dim(nd))]
    if kind == "flatten":
        s = g.dims(3)
        return [g.t(s)], [op("aten::flatten.using_ints", T(0), g.rng.choice([0, 1]), 2)]
    if kind == "unflatten":
        s = [g.rng.choice([4, 6, 8]), g.rng.randint(1, 4)]
        return [g.t(s)], [op("aten::unflatten.int", T(0), 0, [2, -1])]
    if kind == "expand":
        s2 = list(s)
        s2[g.rng.randrange(nd)] = 1
        target = [g.rng.randint(2, 4) if v == 1 else v for v in s2]
        return [g.t(s2)], [op("aten::expand", T(0), target)]
    if kind == "slice":
        d = g.rng.randrange(nd)
        return [g.t(s)], [op("aten::slice.Tensor", T(0), d, 0, max(1, s[d] - 1), g.rng.choice([1, 2]))]
    if kind == "select":
        d = g.rng.randrange(nd)
        return [g.t(s)], [op("aten::select.int", T(0), d, s[d] - 1)]
    if kind == "narrow":
        d = g.rng.randrange(nd)
        return [g.t(s)], [op("aten::narrow", T(0), d, 0, max(1, s[d] // 2))]
    if kind == "movedim":
        return [g.t(s)], [op("aten::movedim.int", T(0), g.dim(nd), g.dim(nd))]
    if kind == "tril":
        return [g.t(g.dims(2, 2, 5))], [op("aten::tril", T(0), g.rng.choice([0, 1, -1]))]
    if kind == "view_split":
        return [g.t([4, 6])], [op("aten::view", T(0), [4, 2, 3]), op("aten::transpose.int", T(1), 0, 1)]
    if kind == "contiguous_t":
        return [g.t(g.dims(2))], [op("aten::t", T(0)), op("aten::clone", T(1), memory_format=0)]
    if kind == "index_select":
        d = g.rng.randrange(nd)
        return [g.t(s), g.idx([3], s[d])], [op("aten::index_select", T(0), d, T(1))]
    return [g.t(s)], [op("aten::repeat", T(0), [2] + [1] * (nd - 1))]


def concat(g):
    s = g.shape(1, 3)
    nd = len(s)
    d = g.rng.randrange(nd)
    kind = g.rng.choice(["cat", "stack", "split", "chunk", "split_sizes", "unbind"])
    if kind == "cat":
        s2 = list(s)
        s2[d] = g.rng.randint(1, 5)
        return [g.t(s), g.t(s2)], [op("aten::cat", [T(0), T(1)], d)]
    if kind == "stack":
        return [g.t(s), g.t(s)], [op("aten::stack", [T(0), T(1)], g.rng.randint(0, nd))]
    s[d] = g.rng.randint(2, 7)
    if kind == "split":
        return [g.t(s)], [op("aten::split.Tensor", T(0), g.rng.randint(1, 3), d)]
    if kind == "chunk":
        return [g.t(s)], [op("aten::chunk", T(0), g.rng.randint(2, 3), d)]
    if kind == "split_sizes":
        first = g.rng.randint(1, s[d] - 1)
        return [g.t(s)], [op("aten::split_with_sizes", T(0), [first, s[d] - first], d)]
    return [g.t(s)], [op("aten::unbind.int", T(0), d)]


def nn(g):
    kind = g.rng.choice(["softmax", "log_softmax", "_softmax", "_log_softmax", "layer_norm",
                         "native_layer_norm", "embedding", "cross_entropy", "mse", "sdpa",
                         "dropout_eval", "nll"])
    s = g.shape(2, 3)
    nd = len(s)
    if kind in ("softmax", "log_softmax"):
        return [g.t(s)], [op(f"aten::{kind}.int", T(0), g.dim(nd))]
    if kind in ("_softmax", "_log_softmax"):
        return [g.t(s)], [op(f"aten::{kind}", T(0), g.dim(nd), False)]
    if kind in ("layer_norm", "native_layer_norm"):
        h = s[-1] + 1
        s[-1] = h
        args = [T(0), [h], T(1), T(2)]
        if kind == "layer_norm":
            return [g.t(s), g.t([h], offset=1.0), g.t([h])], [op("aten::layer_norm", *args, 1e-5)]
        return [g.t(s), g.t([h], offset=1.0), g.t([h])], [op("aten::native_layer_norm", *args, 1e-5)]
    if kind == "embedding":
        v, e = g.rng.randint(3, 9), g.rng.randint(2, 6)
        return [g.t([v, e]), g.idx(g.dims(g.rng.randint(1, 2), 1, 5), v)], [op("aten::embedding", T(0), T(1))]
    if kind in ("cross_entropy", "nll"):
        n, c = g.rng.randint(2, 7), g.rng.randint(2, 6)
        name = "aten::cross_entropy_loss" if kind == "cross_entropy" else "aten::nll_loss"
        red = g.rng.choice([0, 1, 2])
        return [g.t([n, c]), g.idx([n], c)], [op(name, T(0), T(1), None, red, -100)]
    if kind == "mse":
        return [g.t(s), g.t(s)], [op("aten::mse_loss", T(0), T(1), g.rng.choice([0, 1, 2]))]
    if kind == "sdpa":
        b, h, l, e = g.rng.randint(1, 2), g.rng.choice([2, 4]), g.rng.randint(2, 5), g.rng.randint(2, 4)
        qs = [b, h, l, e]
        return [g.t(qs), g.t(qs), g.t(qs)], [op("aten::scaled_dot_product_attention", T(0), T(1), T(2),
                                                is_causal=g.rng.random() < 0.5)]
    return [g.t(s)], [op("aten::dropout", T(0), 0.0, False)]


FAMILIES = [("unary", 18), ("positive", 6), ("binary", 22), ("scalar", 8),
            ("pointwise3", 6), ("reduction", 16), ("matmul", 16), ("view", 16), ("concat", 10),
            ("nn", 16), ("redistribute", 20)]


def placement(g, ndim, mesh_ndim, allow_partial):
    # One reduce op per input (PyTorch refuses mixed ones), rarely a mix.
    op_of_input = g.rng.choices(["P(sum)", "P(avg)", "P(max)", "P(min)"], [6, 2, 1, 1])[0]
    mixed = g.rng.random() < 0.03
    out = []
    for _ in range(mesh_ndim):
        r = g.rng.random()
        if r < 0.32 or ndim == 0:
            p = "R"
        elif r < 0.72:
            p = f"S({g.rng.randrange(ndim)})"
        elif not allow_partial:
            p = "R"
        else:
            p = g.rng.choices(["P(sum)", "P(avg)", "P(max)", "P(min)"], [6, 2, 1, 1])[0] if mixed else op_of_input
        out.append(p)
    return out


def redistribute_target(g, ndim, mesh_ndim, current):
    out = []
    for d in range(mesh_ndim):
        r = g.rng.random()
        if current[d].startswith("P") and r < 0.25:
            out.append(current[d])  # keep the existing Partial: allowed
        elif r < 0.06:
            out.append("P(sum)")  # a new Partial: PyTorch refuses unless already P(sum)
        elif r < 0.45 or ndim == 0:
            out.append("R")
        else:
            out.append(f"S({g.rng.randrange(ndim)})")
    return out


def build(g, family):
    if family == "unary":
        return unary(g, g.rng.choice(UNARY))
    if family == "positive":
        return unary(g, g.rng.choice(POSITIVE_UNARY))
    if family == "binary":
        return binary(g, g.rng.choice(BINARY))
    if family == "scalar":
        return scalar_ops(g)
    if family == "pointwise3":
        return pointwise3(g)
    return {"reduction": reduction, "matmul": matmul, "view": view, "concat": concat, "nn": nn}[family](g)


NON_DIFF = ("aten::eq", "aten::gt", "aten::lt", "aten::ge", "aten::le", "aten::ne", "aten::argm",
            "aten::sign", "aten::floor", "aten::ceil", "aten::round", "aten::trunc", "aten::zeros_like",
            "aten::ones_like")


def program(g, pid):
    mesh_shape, names, world = g.rng.choice(MESHES)
    family = g.rng.choices([f for f, _ in FAMILIES], [w for _, w in FAMILIES])[0]
    if family == "redistribute":
        inputs, steps = [g.t(g.shape(1, 3))], []
    else:
        inputs, steps = build(g, family)
    for spec in inputs:
        nd = len(spec["shape"])
        partial_ok = spec.get("dtype", "float64") == "float64"
        spec["placements"] = placement(g, nd, len(mesh_shape), partial_ok)
    n_in = len(inputs)
    last = n_in + len(steps) - 1  # first output of the last op (multi-output: its first)
    if family == "redistribute":
        last = 0
    # a Partial input to a view or nn op often has no reduce op in PyTorch; keep most of them
    diff_ok = all(not s["op"].startswith(NON_DIFF) for s in steps) and any(
        s.get("dtype", "float64") == "float64" for s in inputs)
    outputs_float = diff_ok
    r = g.rng.random()
    if family == "redistribute":
        src, nd = inputs[0]["placements"], len(inputs[0]["shape"])
        target = redistribute_target(g, nd, len(mesh_shape), src)
        steps.append({"kind": "redistribute", "t": last, "placements": target})
        last = n_in + len(steps) - 1
    elif r < 0.2 and len(steps) == 1:
        steps.append({"kind": "redistribute", "t": last, "placements": ["R"] * len(mesh_shape)})
        last = n_in + len(steps) - 1
    if g.rng.random() < 0.35:
        steps.append({"kind": "full_tensor", "t": last})
    want_grad = outputs_float and g.rng.random() < 0.45
    if want_grad:
        grads = [i for i, s in enumerate(inputs) if s.get("dtype", "float64") == "float64"]
        for i in grads:
            inputs[i]["requires_grad"] = True
        steps.append({"kind": "backward", "t": last, "grads": grads})
    return {"id": pid, "world_size": world, "mesh": {"shape": list(mesh_shape), "names": names},
            "inputs": inputs, "steps": steps}


def issue_programs():
    """The two divergences of issue #18, spelled out."""
    ones = {"shape": [2, 2], "seed": 0, "offset": 1.0, "scale": 0.0}
    progs = [{"id": "issue18_pp_mul", "world_size": 4, "mesh": {"shape": [4], "names": ["x"]},
              "inputs": [dict(ones, placements=["P(sum)"]), dict(ones, placements=["P(sum)"])],
              "steps": [op("aten::mul.Tensor", T(0), T(1)), {"kind": "full_tensor", "t": 2}]}]
    cases = [("r_p", [4], ["R"], ["P(sum)"]), ("sr_sp", [2, 2], ["S(0)", "R"], ["S(0)", "P(sum)"]),
             ("sr_rp", [2, 2], ["S(0)", "R"], ["R", "P(sum)"]),
             ("ss_rp", [2, 2], ["S(0)", "S(1)"], ["R", "P(sum)"]),
             ("keep_p", [2, 2], ["P(sum)", "S(0)"], ["P(sum)", "S(1)"])]
    for name, mesh, src, dst in cases:
        progs.append({"id": f"issue18_{name}", "world_size": 4,
                      "mesh": {"shape": mesh, "names": ["x"] if len(mesh) == 1 else ["dp", "tp"]},
                      "inputs": [{"shape": [4, 4], "seed": 7, "placements": src}],
                      "steps": [{"kind": "redistribute", "t": 0, "placements": dst},
                                {"kind": "full_tensor", "t": 1}]})
    return progs


# ---------------------------------------------------------------- structured programs
# Each is valid by construction: local computation between to_local and
# from_local is what a rank would really compute, and grad_placements say how
# the local gradient really relates to the global one, so every value has a
# single-device meaning (the C++ reference run checks it).

def to_local(t, grad_placements=None):
    step = {"kind": "to_local", "t": t}
    if grad_placements is not None:
        step["grad_placements"] = grad_placements
    return step


def from_local(t, placements, shape):
    return {"kind": "from_local", "t": t, "placements": placements, "shape": list(shape)}


class Chain:
    """Steps with the format's tensor numbering: inputs first, then every
    output of an op, redistribute, to_local, from_local or module step.
    `params` are the tensors the final backward and optimizer step reach."""

    def __init__(self, n_inputs, params):
        self.steps, self.next, self.params = [], n_inputs, list(params)

    def add(self, step, outputs=1):
        """Appends `step`; returns the number of its first output."""
        self.steps.append(step)
        first = self.next
        self.next += outputs
        return first

    def add_module(self, step):
        """Appends a module step (outputs: result, then its parameters, which
        join `params`); returns the result's number."""
        out = self.add(step, 1 + n_params(step))
        self.params += list(range(out + 1, out + 1 + n_params(step)))
        return out


def finish(g, chain, last, mesh_ndim):
    """Optional redistribute / full_tensor, then a backward of `last` with the
    gradients of `chain.params` and, sometimes, an optimizer step on them."""
    if g.rng.random() < 0.3:
        last = chain.add({"kind": "redistribute", "t": last, "placements": ["R"] * mesh_ndim})
    if g.rng.random() < 0.3:
        chain.add({"kind": "full_tensor", "t": last}, outputs=0)
    chain.add({"kind": "backward", "t": last, "grads": chain.params}, outputs=0)
    if g.rng.random() < 0.5:
        kind = g.rng.choice(["sgd", "sgd_momentum", "adam", "adamw"])
        chain.add({"kind": "optimizer", "optimizer": kind, "lr": 0.1, "params": chain.params}, outputs=0)
    return chain.steps


def local_pointwise(g):
    """to_local -> a pointwise op per rank -> from_local with the same layout."""
    mesh_shape, names, world = g.rng.choice(MESHES)
    # even shards: LocalTensorMode cannot run to_local's backward on uneven ones (README)
    s = [g.rng.choice([4, 8]) for _ in range(g.rng.randint(1, 3))]
    linear = g.rng.random() < 0.3  # linear ops keep a Partial(sum) meaning
    placements = placement(g, len(s), len(mesh_shape), allow_partial=linear)
    placements = ["P(sum)" if p.startswith("P") else p for p in placements]
    fn = (g.rng.choice([("aten::mul.Scalar", 3.0), ("aten::neg", None)]) if linear else
          g.rng.choice([("aten::tanh", None), ("aten::exp", None), ("aten::mul.Tensor", "self"),
                        ("aten::sigmoid", None)]))
    # a Partial input's local gradient is the whole gradient on every rank:
    # its right grad_placements read Partial as Replicate (the default does too)
    grad_placements = ["R" if p.startswith("P") else p for p in placements] if g.rng.random() < 0.5 else None
    inputs = [g.t(s, placements=placements, requires_grad=True)]
    chain = Chain(1, [0])
    local = chain.add(to_local(0, grad_placements))
    args = [T(local)] + ([] if fn[1] is None else [T(local)] if fn[1] == "self" else [fn[1]])
    result = chain.add(op(fn[0], *args))
    last = chain.add(from_local(result, placements, s))
    return mesh_shape, names, world, inputs, finish(g, chain, last, len(mesh_shape))


def local_matmul(g):
    """Megatron-style local matmuls: column-parallel (x replicated, w
    Shard(1); x's gradient is a partial sum, grad_placements Partial) or
    row-parallel (x Shard(1), w Shard(0); the output a partial sum). On the
    2 x 2 mesh the batch is also sharded over "dp" (w's gradient partial there)."""
    two_d = g.rng.random() < 0.4
    mesh_shape, names, world = MESHES[1] if two_d else MESHES[0]
    b, k, n = g.rng.choice([2, 4, 6]), g.rng.choice([4, 8, 12]), g.rng.choice([4, 8])  # even shards
    dp = ["S(0)"] if two_d else []
    col = g.rng.random() < 0.5
    if col:
        x = g.t([b, k], placements=dp + ["R"], requires_grad=True)
        w = g.t([k, n], placements=(["R"] if two_d else []) + ["S(1)"], requires_grad=True)
        x_grad = dp + ["P(sum)"]
        w_grad = (["P(sum)"] if two_d else []) + ["S(1)"]
        out = dp + ["S(1)"]
    else:
        x = g.t([b, k], placements=dp + ["S(1)"], requires_grad=True)
        w = g.t([k, n], placements=(["R"] if two_d else []) + ["S(0)"], requires_grad=True)
        x_grad = dp + ["S(1)"]  # the forward placements: the default gives the same
        w_grad = (["P(sum)"] if two_d else []) + ["S(0)"]
        out = dp + ["P(sum)"]
    # grad_placements left out (the forward placements) where those are right
    explicit = g.rng.random() < 0.6
    chain = Chain(2, [0, 1])
    x_local = chain.add(to_local(0, x_grad if explicit or col else None))
    w_local = chain.add(to_local(1, w_grad if explicit or two_d else None))
    product = chain.add(op("aten::mm", T(x_local), T(w_local)))
    last = chain.add(from_local(product, out, [b, n]))
    return mesh_shape, names, world, [x, w], finish(g, chain, last, len(mesh_shape))


def module(kind, dims, style, args, seed, bias=True, **layouts):
    step = {"kind": "module", "module": kind, "dims": dims, "bias": bias, "seed": seed,
            "style": dict({"name": style}, **layouts), "args": args}
    return step


def n_params(step):
    return 1 if step["module"] == "embedding" or not step["bias"] else 2


def tp_mlp(g):
    """x -> Linear (Colwise) -> activation -> Linear (Rowwise), on a 1-D mesh;
    the input layout, the Rowwise output layout and sometimes a
    PrepareModuleInput vary; backward reaches every parameter."""
    mesh_shape, names, world = MESHES[0]
    b, s, h, f = g.rng.choice([2, 3]), g.rng.choice([4, 5, 8]), g.rng.choice([4, 6]), g.rng.choice([8, 12])
    seq = g.rng.random() < 0.5
    shape = [b, s, h] if seq else [b, h]
    x_layout = g.rng.choice(["R", "R", "S(0)"] + (["S(1)"] if seq else []))
    inputs = [g.t(shape, placements=[x_layout], requires_grad=True)]
    chain = Chain(1, [0])
    up = module("linear", [h, f], "colwise", [T(0)], g.rng.randint(0, 9999), bias=g.rng.random() < 0.8)
    if x_layout != "R" and g.rng.random() < 0.5:
        up["prepare_input"] = {"input_layouts": [x_layout], "desired_input_layouts": ["R"]}
    elif x_layout != "R":
        up["style"]["input_layouts"] = x_layout
    hidden = chain.add_module(up)
    act = chain.add(op(g.rng.choice(["aten::relu", "aten::gelu", "aten::tanh"]), T(hidden)))
    down = module("linear", [f, h], "rowwise", [T(act)], g.rng.randint(0, 9999), bias=g.rng.random() < 0.8)
    out_layout = g.rng.choice(["R", "R", "S(0)"] + (["S(1)"] if seq else []))
    if out_layout != "R":
        down["style"]["output_layouts"] = out_layout
    last = chain.add_module(down)
    return mesh_shape, names, world, inputs, finish(g, chain, last, 1)


def tp_sequence(g):
    """Sequence parallel block: x Shard(1) -> LayerNorm (SequenceParallel) ->
    Linear (Colwise from S(1), or PrepareModuleInput S(1) -> R) -> relu ->
    Linear (Rowwise to S(1))."""
    mesh_shape, names, world = MESHES[0]
    b, s, h, f = g.rng.choice([1, 2]), g.rng.choice([4, 6, 8]), g.rng.choice([4, 6]), g.rng.choice([8, 12])
    inputs = [g.t([b, s, h], placements=["S(1)"], requires_grad=True)]
    chain = Chain(1, [0])
    normed = chain.add_module(module("layer_norm", [h], "sequence", [T(0)], g.rng.randint(0, 9999)))
    up = module("linear", [h, f], "colwise", [T(normed)], g.rng.randint(0, 9999))
    if g.rng.random() < 0.5:
        up["prepare_input"] = {"input_layouts": ["S(1)"], "desired_input_layouts": ["R"]}
    else:
        up["style"]["input_layouts"] = "S(1)"
    hidden = chain.add_module(up)
    act = chain.add(op("aten::relu", T(hidden)))
    down = module("linear", [f, h], "rowwise", [T(act)], g.rng.randint(0, 9999), output_layouts="S(1)")
    last = chain.add_module(down)
    return mesh_shape, names, world, inputs, finish(g, chain, last, 1)


def tp_embedding(g):
    """Embedding (Colwise: dims sharded; Rowwise: rows sharded, partial
    sums) of replicated indices, then a Rowwise / Colwise Linear or nothing."""
    mesh_shape, names, world = MESHES[0]
    v, e, b, s = g.rng.choice([8, 10, 16]), g.rng.choice([4, 8]), g.rng.choice([1, 2]), g.rng.choice([3, 4])
    inputs = [g.idx([b, s], v)]
    inputs[0]["placements"] = ["R"]
    style = g.rng.choice(["colwise", "rowwise"])
    emb = module("embedding", [v, e], style, [T(0)], g.rng.randint(0, 9999), input_layouts="R")
    if style == "rowwise":
        emb["style"]["output_layouts"] = g.rng.choice(["R", "S(1)"])
    else:
        emb["style"]["output_layouts"] = g.rng.choice(["S(-1)", "R"])
    chain = Chain(1, [])  # the indices are not differentiable
    last = chain.add_module(emb)
    if g.rng.random() < 0.5:
        out = emb["style"]["output_layouts"]
        nxt = module("linear", [e, 4], "rowwise" if out == "S(-1)" else "colwise", [T(last)],
                     g.rng.randint(0, 9999), input_layouts=out)
        if nxt["style"]["name"] == "colwise":
            nxt["style"]["output_layouts"] = "R"
        last = chain.add_module(nxt)
    return mesh_shape, names, world, inputs, finish(g, chain, last, 1)


def tp_single(g):
    """One Linear with a random style and random (possibly mismatched)
    input layouts: a DTensor input is used as it is laid out."""
    mesh_shape, names, world = MESHES[0]
    b, h, f = g.rng.choice([2, 3, 4]), g.rng.choice([4, 6, 8]), g.rng.choice([4, 6, 8])
    x_layout = g.rng.choice(["R", "S(0)", "S(1)", "P(sum)"])
    inputs = [g.t([b, h], placements=[x_layout], requires_grad=True)]
    style = g.rng.choice(["colwise", "rowwise"])
    lin = module("linear", [h, f], style, [T(0)], g.rng.randint(0, 9999), bias=g.rng.random() < 0.7)
    if g.rng.random() < 0.5:
        lin["style"]["input_layouts"] = g.rng.choice(["R", "S(-1)", "S(0)"])
    if g.rng.random() < 0.5:
        lin["style"]["output_layouts"] = g.rng.choice(["R", "S(0)", "S(-1)"])
    chain = Chain(1, [0])
    last = chain.add_module(lin)
    return mesh_shape, names, world, inputs, finish(g, chain, last, 1)


STRUCTURED = [(local_pointwise, 3), (local_matmul, 3), (tp_mlp, 4), (tp_sequence, 2), (tp_embedding, 2),
              (tp_single, 3)]


def structured_program(g, pid):
    fn = g.rng.choices([f for f, _ in STRUCTURED], [w for _, w in STRUCTURED])[0]
    mesh_shape, names, world, inputs, steps = fn(g)
    return {"id": pid, "world_size": world, "mesh": {"shape": list(mesh_shape), "names": names},
            "inputs": inputs, "steps": steps}


# ---------------------------------------------------------------- out= and in-place overloads
# Programs of the overloads whose rule is derived from the functional one's
# (Note [Derived rules: out= and in-place overloads] in
# core/dispatch/derived_rules.h), and of out= overloads that share a rule
# with it by name: the out tensor gets random Replicate/Shard placements,
# which the result must keep.

UNARY_OUT = ["abs", "neg", "relu", "sigmoid", "tanh", "exp", "sin", "cos", "gelu", "silu", "erf", "atan",
             "sinh", "cosh", "expm1", "floor", "ceil", "round", "trunc", "sign", "frac", "tan", "asin",
             "acos", "exp2"]
POSITIVE_OUT = ["log", "sqrt", "rsqrt", "reciprocal", "log1p", "log2"]
BINARY_OUT = ["add", "sub", "mul", "div", "maximum", "minimum", "atan2", "hypot"]


def broadcast(a, b):
    n = max(len(a), len(b))
    a, b = [1] * (n - len(a)) + list(a), [1] * (n - len(b)) + list(b)
    return [max(x, y) for x, y in zip(a, b)]


def derived(g):
    """Returns (inputs, steps, out_index): the out tensor is inputs[out_index] (None: in-place)."""
    kind = g.rng.choice(["unary", "unary", "positive", "binary", "binary", "scalar", "grad_input",
                         "grad_input", "matrix", "reduce", "inplace"])
    s = g.shape()
    if kind in ("unary", "positive"):
        name = g.rng.choice(UNARY_OUT if kind == "unary" else POSITIVE_OUT)
        x = g.pos(s) if kind == "positive" else g.t(s)
        return [x, g.t(s)], [op(f"aten::{name}.out", T(0), out=T(1))], 1
    if kind == "binary":
        name = g.rng.choice(BINARY_OUT)
        a, b = g.broadcast_pair()
        second = g.pos(b) if name == "div" else g.t(b)
        return [g.t(a), second, g.t(broadcast(a, b))], [op(f"aten::{name}.out", T(0), T(1), out=T(2))], 2
    if kind == "scalar":
        call = g.rng.choice([("clamp.out", [-0.2, 0.3], {}), ("leaky_relu.out", [0.1], {}),
                             ("hardtanh.out", [-0.25, 0.25], {}), ("softplus.out", [1, 20], {}),
                             ("elu.out", [], {}), ("gelu.out", [], {"approximate": "tanh"}),
                             ("mul.Scalar_out", [2.5], {}), ("add.Scalar_out", [1.5], {})])
        name, extra, kw = call
        return [g.t(s), g.t(s)], [op(f"aten::{name}", T(0), *extra, out=T(1), **kw)], 1
    if kind == "grad_input":
        name, extra = g.rng.choice([("sigmoid_backward", []), ("tanh_backward", []), ("silu_backward", []),
                                    ("gelu_backward", []), ("threshold_backward", [0.1]),
                                    ("softplus_backward", [1, 20]), ("leaky_relu_backward", [0.1, False]),
                                    ("hardtanh_backward", [-0.25, 0.25])])
        return [g.t(s), g.t(s), g.t(s)], [op(f"aten::{name}.grad_input", T(0), T(1), *extra, grad_input=T(2))], 2
    if kind == "matrix":
        n, k, m = g.dims(3, 1, 6)
        which = g.rng.choice(["mm", "addmm", "bmm", "mv"])
        if which == "mm":
            return [g.t([n, k]), g.t([k, m]), g.t([n, m])], [op("aten::mm.out", T(0), T(1), out=T(2))], 2
        if which == "addmm":
            return ([g.t([m]), g.t([n, k]), g.t([k, m]), g.t([n, m])],
                    [op("aten::addmm.out", T(0), T(1), T(2), out=T(3))], 3)
        if which == "bmm":
            b = g.rng.randint(1, 4)
            return ([g.t([b, n, k]), g.t([b, k, m]), g.t([b, n, m])],
                    [op("aten::bmm.out", T(0), T(1), out=T(2))], 2)
        return [g.t([n, k]), g.t([k]), g.t([n])], [op("aten::mv.out", T(0), T(1), out=T(2))], 2
    if kind == "reduce":
        d = g.rng.randrange(len(s))
        which = g.rng.choice(["amax", "amin", "cumsum", "logsumexp"])
        if which == "cumsum":
            return [g.t(s), g.t(s)], [op("aten::cumsum.out", T(0), d, out=T(1))], 1
        keep = g.rng.random() < 0.5
        rs = [1 if i == d else x for i, x in enumerate(s)] if keep else [x for i, x in enumerate(s) if i != d]
        return [g.t(s), g.t(rs)], [op(f"aten::{which}.out", T(0), [d], keep, out=T(1))], 1
    which = g.rng.choice(["cumprod_", "round_.decimals", "clamp_.Tensor"])
    if which == "cumprod_":
        return [g.t(s)], [op("aten::cumprod_", T(0), g.rng.randrange(len(s)))], None
    if which == "round_.decimals":
        return [g.t(s)], [op("aten::round_.decimals", T(0), decimals=2)], None
    return [g.t(s), g.t(s), g.t(s)], [op("aten::clamp_.Tensor", T(0), T(1), T(2))], None


def derived_program(g, pid):
    mesh_shape, names, world = g.rng.choice(MESHES)
    inputs, steps, out = derived(g)
    for i, spec in enumerate(inputs):
        # The out tensor (and an in-place op's self) is written: no Partial.
        written = i == out or (out is None and i == 0)
        spec["placements"] = placement(g, len(spec["shape"]), len(mesh_shape), not written)
    if g.rng.random() < 0.5:
        steps.append({"kind": "full_tensor", "t": len(inputs)})
    return {"id": pid, "world_size": world, "mesh": {"shape": list(mesh_shape), "names": names},
            "inputs": inputs, "steps": steps}


# ---------------------------------------------------------------- PyTorch 2.15's other pointwise ops
# The pointwise ops of PyTorch 2.15's lists (_pointwise_ops.py) that the op
# corpus above does not use, with 2.15's Partial rows where it has them
# (asinh, deg2rad, rad2deg, threshold, hardshrink non-decreasing; erfc
# non-increasing; logaddexp(2) monotone; fmax/fmin extremum-preserving).
# name -> (input kinds, extra arguments, differentiable); an input kind is
# "x" (values in [-0.5, 0.5)), "gt1" ((1.1, 2.1)), "unit" ((0.05, 0.95)),
# "pos" ((0.5, 1.5)) or "int" (int64 in [0, 8)).

MORE_POINTWISE = {
    "asinh": (["x"], [], True), "deg2rad": (["x"], [], True), "rad2deg": (["x"], [], True),
    "threshold": (["x"], [0.1, -1.0], True), "hardshrink": (["x"], [0.2], True),
    "erfc": (["x"], [], True), "logaddexp": (["x", "x"], [], True), "logaddexp2": (["x", "x"], [], True),
    "fmax": (["x", "x"], [], True), "fmin": (["x", "x"], [], True),
    "acosh": (["gt1"], [], True), "atanh": (["x"], [], True), "celu": (["x"], [], True),
    "copysign.Tensor": (["x", "x"], [], True), "digamma": (["pos"], [], True), "erfinv": (["x"], [], True),
    "hardsigmoid": (["x"], [], True), "i0": (["x"], [], True), "lgamma": (["pos"], [], True),
    "log10": (["pos"], [], True), "logit": (["unit"], [], True), "mish": (["x"], [], True),
    "mvlgamma": (["gt1"], [1], True), "sinc": (["x"], [], True), "softshrink": (["x"], [0.2], True),
    "special_entr": (["pos"], [], True), "special_i0e": (["x"], [], True), "special_i1": (["x"], [], True),
    "special_ndtri": (["unit"], [], True), "special_log_ndtr": (["x"], [], True),
    "heaviside": (["x", "x"], [], False), "signbit": (["x"], [], False), "isposinf": (["x"], [], False),
    "nextafter": (["x", "x"], [], False), "gcd": (["int", "int"], [], False),
    "bitwise_left_shift.Tensor": (["int", "int"], [], False),
}


def single_op_program(g, pid, mesh, inputs, steps, last, differentiable, p_full, p_grad, grads=None):
    """The program of one op's `steps` on `inputs`: then, sometimes, a
    full_tensor of tensor `last` (probability p_full) and, for a
    differentiable op, a backward of it (p_grad) into `grads` (every input)."""
    mesh_shape, names, world = mesh
    if g.rng.random() < p_full:
        steps.append({"kind": "full_tensor", "t": last})
    if differentiable and g.rng.random() < p_grad:
        grads = list(range(len(inputs))) if grads is None else grads
        for i in grads:
            inputs[i]["requires_grad"] = True
        steps.append({"kind": "backward", "t": last, "grads": grads})
    return {"id": pid, "world_size": world, "mesh": {"shape": list(mesh_shape), "names": names},
            "inputs": inputs, "steps": steps}


def more_pointwise_program(g, pid):
    mesh_shape, names, world = g.rng.choice(MESHES)
    name = g.rng.choice(sorted(MORE_POINTWISE))
    kinds, extra, differentiable = MORE_POINTWISE[name]
    a, b = g.broadcast_pair()
    shapes = [a] if len(kinds) == 1 else [a, b]
    inputs = []
    for kind, shape in zip(kinds, shapes):
        if kind == "int":
            inputs.append(g.idx(shape, 8))
        else:
            scale, offset = {"x": (1.0, 0.0), "gt1": (1.0, 1.6), "unit": (0.9, 0.5), "pos": (1.0, 1.0)}[kind]
            inputs.append(g.t(shape, scale=scale, offset=offset) if kind != "x" else g.t(shape))
    for spec in inputs:
        spec["placements"] = placement(g, len(spec["shape"]), len(mesh_shape), "dtype" not in spec)
    steps = [op(f"aten::{name}", *[T(i) for i in range(len(inputs))], *extra)]
    return single_op_program(g, pid, (mesh_shape, names, world), inputs, steps, len(inputs), differentiable,
                             0.35, 0.45)


# ---------------------------------------------------------------- convolution, pooling, norms
# PyTorch 2.15's single-dim strategies for [N, C, *spatial] ops
# (core/ops/spatial_rules.cc, core/ops/norm_rules.cc): inputs [N, C, H, W]
# with N, C in 1..5 (uneven shards on 4 ranks), random placements; the
# backward reaches the backward ops (convolution_backward,
# max_pool2d_with_indices_backward, upsample_*_backward, ...).


def spatial(g):
    """Returns (inputs, steps, differentiable)."""
    n, c = g.rng.randint(1, 5), g.rng.randint(1, 5)
    h, w = g.rng.randint(3, 6), g.rng.randint(3, 6)
    x = g.t([n, c, h, w])
    kind = g.rng.choice(["conv", "conv", "conv_patches", "max_pool", "max_pool", "avg_pool", "adaptive_avg",
                         "adaptive_max", "bilinear", "nearest", "linear1d", "grid_sample", "batch_norm",
                         "batch_norm", "batch_norm_eval", "group_norm", "group_norm", "max_unpool"])
    if kind == "conv":
        o, k = g.rng.randint(1, 4), g.rng.choice([1, 2, 3])
        pad, stride = g.rng.randint(0, k // 2), g.rng.choice([1, 2])
        bias = g.t([o]) if g.rng.random() < 0.6 else None
        ins = [x, g.t([o, c, k, k])] + ([bias] if bias else [])
        return ins, [op("aten::convolution", T(0), T(1), T(2) if bias else None, [stride, stride], [pad, pad],
                        [1, 1], False, [0, 0], 1)], True
    if kind == "conv_patches":  # stride == kernel width: the last dim may shard
        o, k = g.rng.randint(1, 4), g.rng.choice([1, 2])
        length = k * g.rng.choice([2, 4, 8])
        return ([g.t([n, c, length]), g.t([o, c, k])],
                [op("aten::convolution", T(0), T(1), None, [k], [0], [1], False, [0], 1)], True)
    if kind in ("max_pool", "avg_pool"):
        k = g.rng.choice([2, 3])
        stride, pad = g.rng.choice([1, 2]), g.rng.randint(0, k // 2)
        if kind == "max_pool":
            return [x], [op("aten::max_pool2d_with_indices", T(0), [k, k], [stride, stride], [pad, pad])], True
        return [x], [op("aten::avg_pool2d", T(0), [k, k], [stride, stride], [pad, pad])], True
    if kind in ("adaptive_avg", "adaptive_max"):
        size = [g.rng.randint(1, h), g.rng.randint(1, w)]
        name = "aten::_adaptive_avg_pool2d" if kind == "adaptive_avg" else "aten::adaptive_max_pool2d"
        return [x], [op(name, T(0), size)], True
    if kind == "bilinear":
        return [x], [op("aten::upsample_bilinear2d", T(0), [h + g.rng.randint(-1, 3), w + 2],
                        g.rng.random() < 0.5)], True
    if kind == "nearest":
        return [x], [op("aten::upsample_nearest2d", T(0), [2 * h, w + 1])], True
    if kind == "linear1d":
        return [g.t([n, c, w])], [op("aten::upsample_linear1d", T(0), [2 * w - 1], False)], True
    if kind == "grid_sample":
        grid = g.t([n, g.rng.randint(1, 4), g.rng.randint(1, 4), 2], scale=1.8)
        return [x, grid], [op("aten::grid_sampler_2d", T(0), T(1), 0, 0, False)], True
    if kind == "batch_norm":  # training, no running statistics
        return ([x, g.t([c], offset=1.0), g.t([c])],
                [op("aten::native_batch_norm", T(0), T(1), T(2), None, None, True, 0.1, 1e-5)], True)
    if kind == "batch_norm_eval":
        return ([x, g.t([c], offset=1.0), g.t([c]), g.t([c]), g.t([c], scale=0.5, offset=1.0)],
                [op("aten::native_batch_norm", T(0), T(1), T(2), T(3), T(4), False, 0.1, 1e-5)], False)
    if kind == "group_norm":
        groups = g.rng.choice([d for d in range(1, c + 1) if c % d == 0])
        return ([x, g.t([c], offset=1.0), g.t([c])],
                [op("aten::native_group_norm", T(0), T(1), T(2), n, c, h * w, groups, 1e-5)], True)
    # max_unpool2d of a max pooling's output and indices (tensors 1 and 2)
    return ([x], [op("aten::max_pool2d_with_indices", T(0), [2, 2], [2, 2]),
                  op("aten::max_unpool2d", T(1), T(2), [h, w])], True)


def spatial_program(g, pid):
    mesh_shape, names, world = g.rng.choice(MESHES)
    inputs, steps, differentiable = spatial(g)
    for spec in inputs:
        spec["placements"] = placement(g, len(spec["shape"]), len(mesh_shape), True)
    last = len(inputs) + (2 if len(steps) == 2 else 0)  # the result (max_unpool: after pooling's two)
    return single_op_program(g, pid, (mesh_shape, names, world), inputs, steps, last, differentiable, 0.3, 0.6)


# ---------------------------------------------------------------- indexing, scatters, linalg, more reductions
# PyTorch 2.15's strategies for advanced indexing, index_put / index_fill /
# index_reduce, the scatters, constant_pad_nd, batched linear algebra and
# all / any / nansum / median (core/ops/index_rules.cc, scatter_rules.cc,
# linalg_rules.cc, reduction_rules.cc).


def more_ops(g):
    """Returns (inputs, steps, differentiable)."""
    kind = g.rng.choice(["index", "index", "index_put", "index_fill", "index_reduce", "slice_scatter",
                         "select_scatter", "diagonal_scatter", "pad", "pad", "any", "nansum", "median",
                         "det", "slogdet", "lu_factor", "solve_triangular", "cross", "qr"])
    a, b = g.rng.randint(1, 6), g.rng.randint(2, 6)
    if kind == "index":
        if g.rng.random() < 0.5:
            which = g.rng.choice([0, 1])
            idx = g.idx(g.dims(g.rng.randint(1, 2), 1, 4), [a, b][which])
            return [g.t([a, b]), idx], [op("aten::index.Tensor", T(0), [T(1)] if which == 0 else [None, T(1)])], True
        c = g.rng.randint(1, 5)
        n = g.rng.randint(1, 4)
        return ([g.t([a, b, c]), g.idx([n], a), g.idx([n], c)],
                [op("aten::index.Tensor", T(0), [T(1), None, T(2)])], True)
    if kind == "index_put":
        n = g.rng.randint(1, 4)
        return ([g.t([a, b]), g.idx([n], a), g.t([n, b])],
                [op("aten::index_put", T(0), [T(1)], T(2), True)], True)
    if kind == "index_fill":
        d = g.rng.choice([0, 1])
        return [g.t([a, b]), g.idx([g.rng.randint(1, 3)], [a, b][d])], [op("aten::index_fill.int_Scalar", T(0), d, T(1), 0.5)], True
    if kind == "index_reduce":
        n = g.rng.randint(1, 4)
        return ([g.t([a, b]), g.idx([n], b), g.t([a, n])],
                [op("aten::index_reduce", T(0), 1, T(1), T(2), "amax")], False)
    if kind == "slice_scatter":
        end = g.rng.randint(1, b)
        return [g.t([a, b]), g.t([a, end])], [op("aten::slice_scatter", T(0), T(1), 1, 0, end, 1)], False
    if kind == "select_scatter":
        return [g.t([a, b]), g.t([b])], [op("aten::select_scatter", T(0), T(1), 0, g.rng.randrange(a))], False
    if kind == "diagonal_scatter":
        c = g.rng.randint(1, 4)
        return [g.t([a, b, c]), g.t([c, min(a, b)])], [op("aten::diagonal_scatter", T(0), T(1), 0, 0, 1)], False
    if kind == "pad":
        value = g.rng.choice([0.0, 0.5])
        pad = g.rng.choice([[1, 0], [0, 0, 1, 2], [0, 0, 0, 0]])
        return [g.t([a, b])], [op("aten::constant_pad_nd", T(0), pad, value)], True
    if kind == "any":
        return [g.idx([a, b], 2)], [op("aten::any.dim", T(0), g.rng.choice([0, 1]))], False
    if kind == "nansum":
        return [g.t([a, b])], [op("aten::nansum", T(0), [g.rng.choice([0, 1])])], True
    if kind == "median":
        return [g.t([a, b])], [op("aten::median", T(0))], False
    n = g.rng.randint(1, 4)
    matrix = g.t([a, n, n], offset=2.0) if kind != "qr" else g.t([a, n + 1, n])
    if kind == "det":
        return [matrix], [op("aten::_linalg_det", T(0))], False
    if kind == "slogdet":
        return [matrix], [op("aten::_linalg_slogdet", T(0))], False
    if kind == "lu_factor":
        return [matrix], [op("aten::linalg_lu_factor_ex", T(0))], False
    if kind == "solve_triangular":
        return ([matrix, g.t([a, n, g.rng.randint(1, 3)])],
                [op("aten::linalg_solve_triangular", T(0), T(1), upper=True)], True)
    if kind == "cross":
        return [g.t([a, 3]), g.t([a, 3])], [op("aten::linalg_cross", T(0), T(1))], True
    return [matrix], [op("aten::linalg_qr", T(0))], False


def more_ops_program(g, pid):
    mesh_shape, names, world = g.rng.choice(MESHES)
    inputs, steps, differentiable = more_ops(g)
    for spec in inputs:
        spec["placements"] = placement(g, len(spec["shape"]), len(mesh_shape), "dtype" not in spec)
    grads = [i for i, spec in enumerate(inputs) if "dtype" not in spec]
    return single_op_program(g, pid, (mesh_shape, names, world), inputs, steps, len(inputs), differentiable,
                             0.3, 0.5, grads)


# ---------------------------------------------------------------- uneven shards through views
# Where PyTorch's recent bug reports are: uneven shards on 2-D and 3-D meshes
# (including 3 x 2 and 2 x 3, where nothing divides evenly), nested shards of
# one dim, `_StridedShard` inputs (FSDP + TP's layout), meshes made by
# `_flatten()` of some dims, and chains of views / reshapes of sharded dims.

UNEVEN_MESHES = [((2, 2), ["dp", "tp"], None), ((2, 2, 2), ["a", "b", "c"], None), ((3, 2), ["dp", "tp"], None),
                 ((2, 3), ["dp", "tp"], None), ((2, 2), ["dp", "tp"], ["dp", "tp"]),
                 ((2, 2, 2), ["a", "b", "c"], ["a", "b"]), ((2, 2, 2), ["a", "b", "c"], ["b", "c"]),
                 ((2, 2, 2), ["a", "b", "c"], ["a", "c"]), ((2, 3), ["dp", "tp"], ["dp", "tp"])]
UNEVEN_EXTENTS = [1, 2, 3, 5, 6, 7, 9, 10]


def uneven_placements(g, shape, mesh_sizes, allow_partial):
    """Random placements that often shard one dim on two mesh dims, or as
    `_S(d, sf)` followed by `S(d)` (FSDP + TP: sf is the later mesh dim's size)."""
    out = placement(g, len(shape), len(mesh_sizes), allow_partial)
    r = g.rng.random()
    if len(mesh_sizes) >= 2 and r < 0.45:
        d = g.rng.randrange(len(shape))
        i, j = sorted(g.rng.sample(range(len(mesh_sizes)), 2))
        out[i] = f"_S({d}, {mesh_sizes[j]})" if r < 0.2 and j == i + 1 else f"S({d})"
        out[j] = f"S({d})"
    elif len(mesh_sizes) == 1 and r < 0.15:
        out[0] = f"_S({g.rng.randrange(len(shape))}, 2)"
    return out


def factor_pair(n):
    """A split of n into two factors > 1, or None."""
    for a in range(2, n):
        if n % a == 0:
            return [a, n // a]
    return None


def view_chain(g, shape, first):
    """1-3 view-like ops applied in turn to tensor `first` of `shape`; returns
    (steps, final shape). Views of non-contiguous results use reshape. The
    steps get copies of the shape lists: `cur` is changed in place later."""
    steps, cur, contiguous = [], list(shape), True
    for _ in range(g.rng.randint(1, 3)):
        t = T(first + len(steps))
        kinds = ["reshape_all", "unsqueeze", "transpose"] if len(cur) >= 2 else ["reshape_all", "unsqueeze"]
        if len(cur) >= 2:
            kinds += ["merge", "merge", "permute", "movedim"]
        if any(factor_pair(x) for x in cur):
            kinds += ["split", "split"]
        if 1 in cur:
            kinds.append("squeeze")
        kind = g.rng.choice(kinds)
        view = "aten::view" if contiguous else "aten::reshape"
        if kind == "merge":
            i = g.rng.randrange(len(cur) - 1)
            new = cur[:i] + [cur[i] * cur[i + 1]] + cur[i + 2:]
            flat = g.rng.random() < 0.4
            steps.append(op("aten::flatten.using_ints", t, i, i + 1) if flat else op(view, t, list(new)))
            cur = new
        elif kind == "split":
            i = g.rng.choice([k for k, x in enumerate(cur) if factor_pair(x)])
            parts = factor_pair(cur[i])
            if g.rng.random() < 0.5:
                parts = parts[::-1]
            new = cur[:i] + parts + cur[i + 1:]
            unflat = g.rng.random() < 0.4
            steps.append(op("aten::unflatten.int", t, i, list(parts)) if unflat else op(view, t, list(new)))
            cur = new
        elif kind == "reshape_all":
            steps.append(op(view, t, [-1]))
            cur = [eval_prod(cur)]
        elif kind == "unsqueeze":
            i = g.rng.randint(0, len(cur))
            steps.append(op("aten::unsqueeze", t, i))
            cur = cur[:i] + [1] + cur[i:]
        elif kind == "squeeze":
            i = g.rng.choice([k for k, x in enumerate(cur) if x == 1])
            steps.append(op("aten::squeeze.dim", t, i))
            cur = cur[:i] + cur[i + 1:]
        elif kind == "transpose":
            i, j = g.rng.sample(range(len(cur)), 2)
            steps.append(op("aten::transpose.int", t, i, j))
            cur[i], cur[j] = cur[j], cur[i]
            contiguous = False
        elif kind == "permute":
            perm = list(range(len(cur)))
            g.rng.shuffle(perm)
            steps.append(op("aten::permute", t, perm))
            cur = [cur[k] for k in perm]
            contiguous = contiguous and perm == sorted(perm)
        else:
            i, j = g.rng.sample(range(len(cur)), 2)
            steps.append(op("aten::movedim.int", t, i, j))
            moved = cur.pop(i)
            cur.insert(j, moved)
            contiguous = False
    return steps, cur


def eval_prod(xs):
    n = 1
    for x in xs:
        n *= x
    return n


def full_tensor_and_backward(g, inputs, steps, p_full, p_backward):
    """Ends a program on its last tensor: a full_tensor with probability
    p_full, then a backward into every input with probability p_backward."""
    last = len(inputs) + len(steps) - 1
    if g.rng.random() < p_full:
        steps.append({"kind": "full_tensor", "t": last})
    if g.rng.random() < p_backward:
        for spec in inputs:
            spec["requires_grad"] = True
        steps.append({"kind": "backward", "t": last, "grads": list(range(len(inputs)))})


def uneven_view_program(g, pid):
    mesh_shape, names, flatten = g.rng.choice(UNEVEN_MESHES)
    world = eval_prod(mesh_shape)
    mesh_sizes = [eval_prod([mesh_shape[names.index(n)] for n in flatten])] if flatten else list(mesh_shape)
    shape = [g.rng.choice(UNEVEN_EXTENTS) for _ in range(g.rng.randint(1, 3))]
    x = g.t(shape)
    x["placements"] = uneven_placements(g, shape, mesh_sizes, True)
    inputs = [x]
    steps, cur = view_chain(g, shape, 0)
    last = len(steps)
    r = g.rng.random()
    if r < 0.3:  # a pointwise op with a second input laid out on its own
        y = g.t(cur)
        y["placements"] = uneven_placements(g, cur, mesh_sizes, True)
        inputs.append(y)
        steps = renumber(steps, 1, 1)
        steps.append(op(g.rng.choice(["aten::add.Tensor", "aten::mul.Tensor", "aten::sub.Tensor"]),
                        T(len(inputs) + len(steps) - 1), T(1)))
    elif r < 0.5:
        steps.append(op("aten::sum.dim_IntList", T(last), [g.rng.randrange(len(cur))]))
    elif r < 0.65:
        back, _ = view_chain(g, cur, last)  # and another chain on the result
        steps += back
    last = len(inputs) + len(steps) - 1
    if g.rng.random() < 0.3:
        target = redistribute_target(g, len(cur), len(mesh_sizes), ["R"] * len(mesh_sizes))
        steps.append({"kind": "redistribute", "t": last, "placements": target})
    full_tensor_and_backward(g, inputs, steps, 0.4, 0.5)
    mesh = {"shape": list(mesh_shape), "names": names}
    if flatten:
        mesh["flatten"] = flatten
    return {"id": pid, "world_size": world, "mesh": mesh, "inputs": inputs, "steps": steps}


# ---------------------------------------------------------------- collectives over a flattened mesh
# PyTorch 2.15 runs consecutive same-kind redistribute steps over mesh dims
# the user flattened (mesh["dp", "tp"]._flatten()) as one collective over the
# flattened mesh (_optimize_transform_infos); the tensors stay on the root
# mesh (mesh.flattened). Placements are often the same on every mesh dim, so
# that runs of one change occur, on even and uneven extents.

FLATTENED_ROOTS = [((2, 2), ["dp", "tp"], [[["dp", "tp"]]]),
                   ((2, 3), ["dp", "tp"], [[["dp", "tp"]]]),
                   ((3, 2), ["dp", "tp"], [[["dp", "tp"]]]),
                   ((2, 2, 2), ["a", "b", "c"], [[["a", "b"]], [["b", "c"]], [["a", "c"]], [["a", "b", "c"]],
                                                 [["a", "b"], ["b", "c"]], [["b", "c"], ["a", "b", "c"]]])]
FLATTENED_EXTENTS = [2, 4, 8, 12, 3, 5, 6, 9]


def same_change_placements(g, ndim, mesh_ndim):
    r = g.rng.random()
    if r < 0.35:
        return [f"S({g.rng.randrange(ndim)})"] * mesh_ndim
    if r < 0.6:
        return [g.rng.choice(["P(sum)", "P(sum)", "P(avg)"]) for _ in range(mesh_ndim)]
    if r < 0.68:
        return ["P(max)"] * mesh_ndim
    return placement(g, ndim, mesh_ndim, True)


def flattened_root_program(g, pid):
    mesh_shape, names, choices = g.rng.choice(FLATTENED_ROOTS)
    flattened = g.rng.choice(choices)
    world, k = eval_prod(mesh_shape), len(mesh_shape)
    shape = [g.rng.choice(FLATTENED_EXTENTS) for _ in range(g.rng.randint(1, 3))]
    x = g.t(shape)
    x["placements"] = same_change_placements(g, len(shape), k)
    inputs, steps = [x], []
    r = g.rng.random()
    if r < 0.25:  # a pointwise op with a second input: sharding propagation redistributes
        y = g.t(shape)
        y["placements"] = same_change_placements(g, len(shape), k)
        inputs.append(y)
        steps.append(op(g.rng.choice(["aten::add.Tensor", "aten::mul.Tensor"]), T(0), T(1)))
    elif r < 0.45:  # a matmul contracting a dim sharded on every mesh dim: Partial on every mesh dim
        m, kk, n = g.rng.choice(FLATTENED_EXTENTS), g.rng.choice([4, 8, 12, 6]), g.rng.choice([2, 4, 3])
        x.update(shape=[m, kk], placements=["S(1)"] * k)
        w = g.t([kk, n])
        w["placements"] = ["S(0)"] * k
        inputs.append(w)
        steps.append(op("aten::mm", T(0), T(1)))
        shape = [m, n]
    elif r < 0.6:
        steps.append(op("aten::sum.dim_IntList", T(0), [g.rng.randrange(len(shape))]))
        shape = [e for i, e in enumerate(shape) if i != steps[-1]["args"][1][0]]
    last = len(inputs) + len(steps) - 1
    if g.rng.random() < 0.6 and shape:
        d = g.rng.randrange(len(shape))
        target = g.rng.choice([["R"] * k, [f"S({d})"] * k, redistribute_target(g, len(shape), k, ["R"] * k)])
        steps.append({"kind": "redistribute", "t": last, "placements": target})
    full_tensor_and_backward(g, inputs, steps, 0.7, 0.4)
    mesh = {"shape": list(mesh_shape), "names": names, "flattened": flattened}
    return {"id": pid, "world_size": world, "mesh": mesh, "inputs": inputs, "steps": steps}


# ---------------------------------------------------------------- validation of every overload
# Issue #33: every overload PyTorch 2.15 shards that the shards above never
# call, from the samples sample_overloads.py builds from its schema (checked
# in: testdata/validation_samples.json, made with torch). Each sample runs on
# a 1-D mesh of 4 and on a 2 x 2 mesh, its inputs placed at random (a tensor
# the op writes, and an int64 or bool one, never Partial), in VALIDATION_SHARDS files;
# the samples of sample_recipes.py likewise, in a shard after the flattened-mesh one.


VALIDATION_SHARDS = 4  # files, so that golden_test's shards stay alike in size


def validation_programs(seed, samples_path, key="samples", prefix="x"):
    """Programs of the samples under `key` ("samples": schema-built;
    "recipes": sample_recipes.py's; "random": random-valued overloads'),
    ids `prefix`<seed>_NNNN."""
    if not os.path.exists(samples_path):
        return []
    samples = json.load(open(samples_path)).get(key, [])
    progs, seen = [], {}
    for sample in samples:
        # Placements drawn from a stream of the sample's own (its op and its
        # rank among that op's samples): adding samples moves no other's.
        k = seen[sample["op"]] = seen.get(sample["op"], -1) + 1
        g = Gen(random.Random(f"{seed}:{sample['op']}:{k}"))
        for mesh_shape, names, world in MESHES[:2]:
            inputs = []
            for i, spec in enumerate(sample["inputs"]):
                spec = dict(spec, seed=g.rng.randint(0, 10000))
                # Partial only for real floating values that can be summed
                # (an int32 pivot's average, a complex maximum are undefined;
                # LibTorch adds no float8).
                partial_ok = i not in sample["written"] and spec.get("dtype", "float64") in ("float64", "float32",
                                                                                         "bfloat16")
                spec["placements"] = placement(g, len(spec["shape"]), len(mesh_shape), partial_ok)
                inputs.append(spec)
            steps = [op(sample["op"], *sample["args"], **sample["kwargs"])]
            if prefix in ("y", "r", "z"):  # what the op wrote in place, gathered (row pytorch-writes-a-copy)
                steps += [{"kind": "full_tensor", "t": i} for i in sample["written"]]
            if sample.get("random"):  # values random or uninitialized: not compared (compare.cc)
                steps = [dict(step, random=True) for step in steps]
            progs.append({"id": f"{prefix}{seed}_{len(progs):04d}", "world_size": world,
                          "mesh": {"shape": list(mesh_shape), "names": names}, "inputs": inputs, "steps": steps})
    return progs


def renumber(steps, start, by):
    """Shifts the tensor references of `steps` from `start` on by `by`
    (inputs were added before tensor `start`)."""
    def shift(a):
        if isinstance(a, dict) and "t" in a and a["t"] >= start:
            return T(a["t"] + by)
        return a
    return [dict(s, args=[shift(a) for a in s["args"]]) for s in steps]


def write_shard(path, seed, progs):
    with open(path, "w") as f:
        json.dump({"format": FORMAT, "generator": f"generate_programs.py --seed {seed}",
                   "programs": progs}, f, separators=(",", ":"))
        f.write("\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seed", type=int, default=18)
    ap.add_argument("--count", type=int, default=2400)
    ap.add_argument("--shards", type=int, default=8)
    ap.add_argument("--structured", type=int, default=240, help="structured programs, in one more shard")
    ap.add_argument("--derived", type=int, default=300, help="out= and in-place programs, in one more shard")
    ap.add_argument("--more-pointwise", type=int, default=300, help="PyTorch 2.15's other pointwise ops, one more shard")
    ap.add_argument("--spatial", type=int, default=300, help="convolution, pooling, norm programs, one more shard")
    ap.add_argument("--more-ops", type=int, default=300, help="indexing, scatter, linalg programs, one more shard")
    ap.add_argument("--uneven-views", type=int, default=300,
                    help="uneven, nested, strided and flattened-mesh shards through views, one more shard")
    ap.add_argument("--flattened-roots", type=int, default=300,
                    help="redistributions on meshes with flattened dims, one more shard after the validation shards")
    ap.add_argument("--samples", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "testdata",
                                                      "validation_samples.json"),
                    help="sample_overloads.py's samples: the validation shard, after the others")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    g = Gen(random.Random(a.seed))
    progs = issue_programs() + [program(g, f"g{a.seed}_{i:05d}") for i in range(a.count)]
    os.makedirs(a.out, exist_ok=True)
    per = (len(progs) + a.shards - 1) // a.shards
    for s in range(a.shards):
        write_shard(os.path.join(a.out, f"programs_{s:02d}.json"), a.seed, progs[s * per:(s + 1) * per])
    # The shards after the op programs, each from its own random stream (so
    # adding one moves no other): (program maker, id prefix, count, what).
    extra = [(structured_program, "s", a.structured, "structured programs"),
             (derived_program, "d", a.derived, "out=/in-place programs"),
             (more_pointwise_program, "p", a.more_pointwise, "of 2.15's other pointwise ops"),
             (spatial_program, "c", a.spatial, "convolution/pooling/norm programs"),
             (more_ops_program, "m", a.more_ops, "indexing/scatter/linalg programs"),
             (uneven_view_program, "v", a.uneven_views, "uneven/strided/flattened-mesh view programs")]
    summary = [f"{len(progs)} op programs in {a.shards} shards"]
    for k, (make, prefix, count, what) in enumerate(extra):
        gk = Gen(random.Random(a.seed * 1000 + k + 1))
        shard = [make(gk, f"{prefix}{a.seed}_{i:04d}") for i in range(count)]
        write_shard(os.path.join(a.out, f"programs_{a.shards + k:02d}.json"), a.seed, shard)
        summary.append(f"{len(shard)} {what} in shard {a.shards + k}")
    validation = validation_programs(a.seed, a.samples)
    if validation:
        first = a.shards + len(extra)
        per = (len(validation) + VALIDATION_SHARDS - 1) // VALIDATION_SHARDS
        for k in range(VALIDATION_SHARDS):
            write_shard(os.path.join(a.out, f"programs_{first + k:02d}.json"), a.seed,
                        validation[k * per:(k + 1) * per])
        summary.append(f"{len(validation)} validation programs in shards {first}..{first + VALIDATION_SHARDS - 1}")
    # Shards added after the validation shards (so their numbers stay).
    late = [(flattened_root_program, "f", a.flattened_roots, "flattened-mesh redistribution programs")]
    first = a.shards + len(extra) + VALIDATION_SHARDS
    for k, (make, prefix, count, what) in enumerate(late):
        gk = Gen(random.Random(a.seed * 1000 + len(extra) + k + 1))
        shard = [make(gk, f"{prefix}{a.seed}_{i:04d}") for i in range(count)]
        write_shard(os.path.join(a.out, f"programs_{first + k:02d}.json"), a.seed, shard)
        summary.append(f"{len(shard)} {what} in shard {first + k}")
    # The recipes' validation shard (sample_recipes.py), after those.
    first += len(late)
    recipes = validation_programs(a.seed, a.samples, key="recipes", prefix="y")
    if recipes:
        write_shard(os.path.join(a.out, f"programs_{first:02d}.json"), a.seed, recipes)
        summary.append(f"{len(recipes)} validation programs from recipes in shard {first}")
    # The random-valued overloads' validation shard, after that.
    randoms = validation_programs(a.seed, a.samples, key="random", prefix="r")
    if randoms:
        write_shard(os.path.join(a.out, f"programs_{first + 1:02d}.json"), a.seed, randoms)
        summary.append(f"{len(randoms)} validation programs of random-valued overloads in shard {first + 1}")
    # Recipes with float8 or uint8 tensors, after that.
    late = validation_programs(a.seed, a.samples, key="late", prefix="z")
    if late:
        write_shard(os.path.join(a.out, f"programs_{first + 2:02d}.json"), a.seed, late)
        summary.append(f"{len(late)} validation programs with float8 or uint8 tensors in shard {first + 2}")
    print(", ".join(summary) + f" under {a.out}")


if __name__ == "__main__":
    main()
