"""Writes the aten overloads that the installed PyTorch's DTensor can shard,
one "aten::name.overload" per line, sorted (`.default` is written without
the overload, as dtensor's registry names it). The list is read from
PyTorch's sharding propagator: ops with a rule, an op strategy or a
single-dim strategy.

    ~/.cache/dtensor/venv-torch-2.15.0/bin/python tools/op_coverage/pytorch_ops.py \
        > tools/op_coverage/pytorch-2.15-ops.txt

`bazel run //tools/op_coverage -- --against $PWD/tools/op_coverage/pytorch-2.15-ops.txt`
then lists what PyTorch shards and dtensor does not.
"""

import sys

import torch
from torch.distributed.tensor import DTensor


def full_name(op):
    name = op.name()  # "aten::add.Tensor" or "aten::t" for the default overload
    return name


def main():
    prop = DTensor._op_dispatcher.sharding_propagator
    tables = [prop.op_to_rules, prop.op_strategy_funcs]
    tables.append(getattr(prop, "op_single_dim_strategy_funcs", {}))
    names = set()
    for table in tables:
        for op in table:
            if isinstance(op, torch._ops.OpOverload) and op.namespace == "aten":
                names.add(full_name(op))
    sys.stdout.write("# aten overloads PyTorch %s's DTensor shards (tools/op_coverage/pytorch_ops.py)\n"
                     % torch.__version__.split("+")[0])
    for n in sorted(names):
        sys.stdout.write(n + "\n")


if __name__ == "__main__":
    main()
