"""The standard op set and its builders (``irpass.op.add``, ``irpass.op.nn.conv2d``, ...).

Importing this package registers every op with :func:`irpass.ir.register_op`:
elementwise math and comparisons (:mod:`.tensor`), shape changes
(:mod:`.transform`), indexing (:mod:`.indexing`), ``matmul``
(:mod:`.linalg`), reductions (:mod:`.reduce`), tensor creation
(:mod:`.create`) and the ``nn.*`` ops (:mod:`.nn`). Each builder has TVM
Relay's signature and returns a :class:`~irpass.ir.Call`.

As in Relay, ``sum``, ``max``, ``min`` and ``abs`` here shadow the Python
builtins of the same names; use them as ``irpass.op.sum(...)``.
"""

from ..ir.op import Op, OpPattern, list_ops, register_op
from . import nn
from .create import full, ones, ones_like, shape_of, zeros, zeros_like
from .indexing import strided_slice, take
from .linalg import matmul
from .reduce import max, mean, min, prod, sum
from .tensor import (
    abs,
    add,
    cast,
    clip,
    divide,
    equal,
    erf,
    exp,
    greater,
    greater_equal,
    less,
    less_equal,
    log,
    maximum,
    minimum,
    multiply,
    negative,
    not_equal,
    power,
    sigmoid,
    sqrt,
    subtract,
    tanh,
    where,
)
from .transform import (
    broadcast_to,
    concatenate,
    expand_dims,
    layout_transform,
    reshape,
    reverse_reshape,
    split,
    squeeze,
    tile,
    transpose,
)


def get(name: str) -> Op:
    """The registered op called ``name`` (same as ``Op.get``)."""
    return Op.get(name)


__all__ = [
    "Op",
    "OpPattern",
    "abs",
    "add",
    "broadcast_to",
    "cast",
    "clip",
    "concatenate",
    "divide",
    "equal",
    "erf",
    "exp",
    "expand_dims",
    "full",
    "get",
    "greater",
    "greater_equal",
    "layout_transform",
    "less",
    "less_equal",
    "list_ops",
    "log",
    "matmul",
    "max",
    "maximum",
    "mean",
    "min",
    "minimum",
    "multiply",
    "negative",
    "nn",
    "not_equal",
    "ones",
    "ones_like",
    "power",
    "prod",
    "register_op",
    "reshape",
    "reverse_reshape",
    "shape_of",
    "sigmoid",
    "split",
    "sqrt",
    "squeeze",
    "strided_slice",
    "subtract",
    "sum",
    "take",
    "tanh",
    "tile",
    "transpose",
    "where",
    "zeros",
    "zeros_like",
]
