#!/usr/bin/env python3
"""Writes origins_3d_trace.json: a merged schema-2 trace of a 2x2x2 mesh
(pp, dp, tp) whose six calls carry origins, three implicit and three explicit,
on the tp and dp dims, for the viewer's origin, implicit-filter and 3-D mesh
screenshot tests. The file is checked in; rerun this after a schema change:
  python3 tests/gui/testdata/make_origins_3d_trace.py > tests/gui/testdata/origins_3d_trace.json
debug's validate_comm_trace_json checks it (tests/gui/model/call_exchange_test.cc)."""
import json

SHAPE = [2, 2, 2]
NAMES = ["pp", "dp", "tp"]
WORLD = 8
SIZE = {"Float": 4}


def coord(rank):
    return [rank // 4, (rank // 2) % 2, rank % 2]


def group(rank, dim):
    c = coord(rank)
    out = []
    for i in range(SHAPE[dim]):
        c2 = list(c)
        c2[dim] = i
        out.append(c2[0] * 4 + c2[1] * 2 + c2[2])
    return out


def origin(explicit, cause, op, index, frm, to, dim, step, strategy="", cost=0, rejected="", rcost=0):
    return {"explicit": explicit, "cause": cause, "op": op, "input_index": index, "from": frm,
            "to": to, "mesh_dim": dim, "step": step, "strategy": strategy, "strategy_cost": cost,
            "rejected_strategy": rejected, "rejected_cost": rcost}


# (kind, mesh dim, module, phase, input shape, output shape, reduce op, origin)
CALLS = [
    ("all_gather_into_tensor", 2, "Block.attn", "forward", [4, 8], [8, 8], "",
     origin(True, "redistribute", "DTensor::redistribute", -1, "[R, S(0), S(0)]", "[R, S(0), R]", 2,
            "S(0) -> R")),
    ("all_gather_into_tensor", 2, "Block.attn", "forward", [8, 16], [16, 16], "",
     origin(False, "implicit", "aten::mm", 1, "[R, R, S(0)]", "[R, R, R]", 2, "S(0) -> R",
            "[S(0)], [R] -> [S(0)]", 250384, "[S(1)], [S(0)] -> [P(sum)]", 500512)),
    ("all_to_all_single", 2, "Block.attn", "forward", [8, 8], [8, 8], "",
     origin(False, "implicit", "aten::bmm", 0, "[R, R, S(1)]", "[R, R, S(0)]", 2, "S(1) -> S(0)",
            "[S(0)], [S(0)] -> [S(0)]", 250128, "[S(1)], [R] -> [S(1)]", 250256)),
    ("all_reduce", 1, "Block.mlp", "forward", [16], [16], "sum",
     origin(False, "implicit", "aten::sum", 0, "[R, P(sum), R]", "[R, R, R]", 1, "P(sum) -> R",
            "[P(sum)] -> [R]", 250064, "", 0)),
    ("all_gather_into_tensor", 1, "Block.mlp", "forward", [4, 16], [8, 16], "",
     origin(True, "full_tensor", "DTensor::full_tensor", -1, "[R, S(0), R]", "[R, R, R]", 1,
            "S(0) -> R")),
    ("reduce_scatter_tensor", 1, "Block.mlp", "backward", [16, 16], [8, 16], "sum",
     origin(True, "data_parallel", "gradient sync", -1, "[R, P(sum), R]", "[R, S(0), R]", 1,
            "P(sum) -> S(0)")),
]


def nbytes(shape):
    n = 4
    for s in shape:
        n *= s
    return n


def counts(calls, phase, key):
    out = {}
    for c in calls:
        if c[3] == phase:
            out[c[0]] = out.get(c[0], 0) + (1 if key == "count" else nbytes(c[4]))
    return sorted([k, v] for k, v in out.items())


def node(fqn, mtype, calls, children):
    return {"fqn": fqn, "module_type": mtype, "parameters": [], "children": children,
            "collectives_forward": counts(calls, "forward", "count"),
            "collectives_backward": counts(calls, "backward", "count"),
            "bytes_forward": counts(calls, "forward", "bytes"),
            "bytes_backward": counts(calls, "backward", "bytes"),
            "operations_forward": [], "operations_backward": []}


def main():
    attn = [c for c in CALLS if c[2] == "Block.attn"]
    mlp = [c for c in CALLS if c[2] == "Block.mlp"]
    root = node("Global", "", CALLS, [node("Block", "Block", CALLS, [
        node("Block.attn", "Attention", attn, []), node("Block.mlp", "MLP", mlp, [])])])
    events = []
    for rank in range(WORLD):
        for seq, (kind, dim, module, phase, shape, out, op, orig) in enumerate(CALLS):
            events.append({"rank": rank, "seq": seq, "kind": kind, "bytes": nbytes(shape),
                           "output_bytes": nbytes(out), "group": group(rank, dim), "mesh_dim": dim,
                           "mesh_dim_name": NAMES[dim], "module": module, "phase": phase,
                           "shape": shape, "input_shapes": [shape], "output_shapes": [out],
                           "dtype": "Float", "reduce_op": op, "ts_us": 10.0 * seq, "origin": orig})
    per_rank = {}
    for c in CALLS:
        per_rank[c[0]] = per_rank.get(c[0], 0) + 1
    doc = dict(root)
    doc.update({"dtensor_schema_version": 2, "noise_level": 1, "world_size": WORLD, "rank": -1,
                "mesh": {"shape": SHAPE, "dim_names": NAMES, "device": "cpu"}, "events": events,
                "reference_rank": 0,
                "per_rank_counts": {str(r): per_rank for r in range(WORLD)},
                "differing_ranks": [], "rank_differences": []})
    print(json.dumps(doc, indent=1))


main()
