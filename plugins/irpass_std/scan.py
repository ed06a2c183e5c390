"""A quick read-only scan the std passes make before they rewrite anything."""

from __future__ import annotations

from collections.abc import Callable, Container

from irpass.ir import Call, Expr, Function, If, Let, Op, Tuple, TupleGetItem

__all__ = ["reaches_kind", "reaches_op_call"]


def reaches_op_call(
    root: Expr, names: Container[str], test: Callable[[Call], bool] | None = None
) -> bool:
    """Whether a call of an :class:`Op` named in ``names`` (and, if given, with ``test(call)``
    true) is reachable from ``root``, through every node kind (``let``, ``if``, tuples and
    nested functions included; other global functions are not followed).

    A quick read-only scan: a pass whose ops do not occur in a function can return the
    function at once instead of rebuilding it node by node. Iterative, linear; stops at
    the first match.
    """
    return _scan(root, (), names, test)


def reaches_kind(root: Expr, kinds: tuple[type[Expr], ...]) -> bool:
    """Whether a node of one of the classes ``kinds`` is reachable from ``root``.

    The scan of :func:`reaches_op_call`, looking for node kinds instead of op calls.
    """
    return _scan(root, kinds, (), None)


def _scan(
    root: Expr,
    kinds: tuple[type[Expr], ...],
    names: Container[str],
    test: Callable[[Call], bool] | None,
) -> bool:
    seen: set[Expr] = set()
    mark = seen.add
    stack = [root]
    push = stack.append
    pop = stack.pop
    while stack:
        node = pop()
        t = type(node)
        if t in kinds:
            return True
        if t is Call:
            callee = node.op
            if type(callee) is Op:
                if callee.name in names and (test is None or test(node)):
                    return True
                children: tuple[Expr, ...] = node.args
            else:
                children = (callee, *node.args)
        elif t is Let:
            children = (node.value, node.body)
        elif t is Tuple:
            children = node.fields
        elif t is TupleGetItem:
            children = (node.tuple_value,)
        elif t is If:
            children = (node.cond, node.true_branch, node.false_branch)
        elif t is Function:
            children = (node.body,)
        else:  # a leaf: var, global var, constant, op
            continue
        for child in children:
            if child not in seen:
                mark(child)
                push(child)
    return False
