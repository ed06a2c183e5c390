"""The well-formedness check: scoping rules and annotation consistency.

A program is well formed when

* every ``Var`` is bound at most once (by one ``let`` or as a parameter of one
  function; binding it in two places confuses every pass that maps vars);
* every use of a var lies inside the scope of its binding (the body of its
  ``let``, the body of its function; a let-bound *function* may also call
  itself, so its var is in scope in the let's value too, as in Relay);
* a module's functions have no free vars, and every ``GlobalVar`` they use
  names a function of the module;
* where type inference has run, annotations agree with the inferred types:
  a let var's annotation with its value's ``checked_type``, a function's
  ``ret_type`` with its body's ``checked_type``.

:func:`well_formed` collects every problem into a :class:`WellFormedReport`
instead of stopping at the first, so ``assert well_formed(mod)`` works as in
TVM and the report shows all that is wrong.

The check walks the program with an explicit stack (no recursion, any depth)
and visits a shared sub-expression once per scope it is reached in: when it is
reached again where the scope it was first checked in is still open, it is
skipped; otherwise only its free vars are checked against the current scope,
looked up in a :class:`~irpass.ir.analysis.FreeVarTable` built once for the
whole program. That keeps the check exact on DAGs and linear in the size of
the program. Functions are named in messages by a chain of (name, enclosing
function) links, turned into text only for the problems reported.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..errors import WellFormedError
from .analysis import FreeVarTable
from .describe import describe
from .expr import Expr
from .module import IRModule
from .nodes import Call, Function, GlobalVar, If, Let, Tuple, TupleGetItem, Var
from .op import Op

__all__ = ["well_formed", "WellFormedReport"]


class WellFormedReport:
    """The result of :func:`well_formed`: truthy iff the program has no problems.

    ``problems`` lists one message per problem (each names the var or node
    and where it is); ``free_vars`` the vars used but bound nowhere, in order
    of first use.
    """

    __slots__ = ("problems", "free_vars")

    def __init__(self, problems: Iterable[str] = (), free_vars: Iterable[Var] = ()) -> None:
        self.problems: list[str] = list(problems)
        self.free_vars: list[Var] = list(free_vars)

    def __bool__(self) -> bool:
        return not self.problems

    def raise_if_ill_formed(self) -> None:
        """Raise :class:`irpass.WellFormedError` listing every problem, if there are any."""
        if self.problems:
            raise WellFormedError(str(self))

    def __str__(self) -> str:
        if not self.problems:
            return "well formed"
        n = len(self.problems)
        lines = [f"ill-formed program ({n} problem{'s' if n != 1 else ''}):"]
        lines.extend(f"  - {p}" for p in self.problems)
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"WellFormedReport(problems={self.problems!r}, free_vars={self.free_vars!r})"


def well_formed(expr_or_module: Expr | IRModule, mod: IRModule | None = None) -> WellFormedReport:
    """Check the scoping rules of a module or an expression; return a report.

    For a module, free vars in its functions are problems. For an
    expression they are only listed in ``report.free_vars`` (an expression
    may well be a fragment with inputs); ``mod``, if given, is the module its
    ``GlobalVar`` references must be defined in.
    """
    if isinstance(expr_or_module, IRModule):
        if mod is not None:
            raise TypeError("well_formed: pass mod= only with an expression, not with a module")
        checker = _Checker(expr_or_module, free_vars_are_problems=True)
        checker.roots = [func for _gv, func in expr_or_module.items()]
        for gv, func in expr_or_module.items():
            checker.labels.setdefault(func, _Label(f"@{gv.name_hint}", None))
        for _gv, func in expr_or_module.items():
            checker.check(func)
    elif isinstance(expr_or_module, Expr):
        if mod is not None and not isinstance(mod, IRModule):
            raise TypeError(f"well_formed: mod must be an IRModule, got {type(mod).__name__}")
        checker = _Checker(mod, free_vars_are_problems=False)
        checker.roots = [expr_or_module]
        checker.check(expr_or_module)
    else:
        raise TypeError(
            f"well_formed needs an Expr or an IRModule, got {type(expr_or_module).__name__}"
        )
    return checker.report()


class _Label:
    """Names a function for messages: ``name`` (``@f``, ``%f`` or ``None`` for an
    anonymous function) and the label of the function it is in (``None`` at top level).

    Links instead of text, so deeply nested functions cost constant memory each.
    """

    __slots__ = ("name", "parent")

    def __init__(self, name: str | None, parent: _Label | None) -> None:
        self.name = name
        self.parent = parent

    def __str__(self) -> str:
        chain: list[_Label] = []
        label: _Label | None = self
        while label is not None:
            chain.append(label)
            label = label.parent
        shown = chain[:_SHOWN_LEVELS]
        parts = [lb.name or "a local function" for lb in shown]
        hidden = len(chain) - len(shown) - 1  # the outermost is always named
        if hidden > 0:
            parts.append(f"{hidden} more enclosing function{'s' if hidden != 1 else ''}")
        if hidden >= 0:
            parts.append(chain[-1].name or "a local function")
        if not parts[-1].startswith("@"):
            parts.append(_TOP)  # the outermost function is not a module function
        return " in ".join(parts)


_SHOWN_LEVELS = 4  # innermost functions named in a message; the outermost always is
_TOP = "the top-level expression"


def _text(label: _Label | None) -> str:
    return _TOP if label is None else str(label)


# Actions on the work stack.
_VISIT = 0
_LET_BODY = 1  # a let's value is done: open the scope of its var, visit the body
_CLOSE = 2  # leave the scope opened by a let or a function


class _Checker:
    """One run of the check over a module or an expression."""

    def __init__(self, mod: IRModule | None, free_vars_are_problems: bool) -> None:
        self.mod = mod
        self.free_vars_are_problems = free_vars_are_problems
        self.problems: list[str] = []
        # Where each var is bound: the binding node and the function it is in.
        self.binder: dict[Var, tuple[Expr, _Label | None]] = {}
        # How many open scopes bind each var (more than 1 only in bad programs).
        self.in_scope: dict[Var, int] = {}
        # Scopes are numbered frames; a node remembers the frame it was checked in.
        self.frame_open: list[bool] = [True]
        self.frames: list[int] = [0]
        self.seen: dict[Expr, int] = {}
        # Every root the check will walk; the free-var table covers them all at once.
        self.roots: list[Expr] = []
        self.fv_table: FreeVarTable | None = None
        # Uses outside any open scope binding the var: (var, using node, function label).
        self.loose_uses: list[tuple[Var, Expr, _Label | None]] = []
        self.missing_globals: dict[str, tuple[Expr, _Label | None]] = {}
        self.labels: dict[Function, _Label] = {}
        self.functions: list[_Label] = []  # labels of the open functions, innermost last

    # -- scopes --------------------------------------------------------------------------
    def where(self) -> _Label | None:
        return self.functions[-1] if self.functions else None

    def open_scope(self, binder: Expr, variables: Iterable[Var]) -> None:
        in_scope = self.in_scope
        where = self.where()
        for v in variables:
            first = self.binder.get(v)
            if first is None:
                self.binder[v] = (binder, where)
            elif first[0] is not binder:
                self.problems.append(
                    f"%{v.name_hint} is bound more than once: by `{describe(first[0])}` in "
                    f"{_text(first[1])} and again by `{describe(binder)}` in {_text(where)}"
                )
            in_scope[v] = in_scope.get(v, 0) + 1
        self.frames.append(len(self.frame_open))
        self.frame_open.append(True)

    def close_scope(self, variables: Iterable[Var]) -> None:
        in_scope = self.in_scope
        for v in variables:
            in_scope[v] -= 1
        self.frame_open[self.frames.pop()] = False

    # -- the walk ------------------------------------------------------------------------
    def check(self, root: Expr) -> None:
        seen = self.seen
        frame_open = self.frame_open
        frames = self.frames
        in_scope = self.in_scope
        # Work items (parent, node, action) flattened into one list: pushing existing
        # objects and small ints allocates nothing for the garbage collector to scan.
        stack: list = [None, root, _VISIT]
        push = stack.append
        pop = stack.pop
        while stack:
            action = pop()
            node = pop()
            parent = pop()
            if action == _LET_BODY:
                push(None)
                push(node)
                push(_CLOSE)
                push(node)
                push(node.body)
                push(_VISIT)
                if type(node.value) is not Function:
                    self.open_scope(node, (node.var,))
                continue
            if action == _CLOSE:
                if type(node) is Let:
                    self.close_scope((node.var,))
                else:
                    self.close_scope(node.params)
                    self.functions.pop()
                continue
            frame = seen.get(node)
            if frame is not None:
                if frame_open[frame]:
                    continue  # checked in a scope that is still open: nothing new
                self.recheck(node, parent)
                seen[node] = frames[-1]
                continue
            seen[node] = frames[-1]
            t = type(node)
            if t is Var:
                if not in_scope.get(node):
                    self.loose_uses.append(
                        (node, parent if parent is not None else node, self.where())
                    )
            elif t is Call:
                for a in reversed(node.args):
                    f = seen.get(a)
                    if f is None or not frame_open[f]:
                        push(node)
                        push(a)
                        push(_VISIT)
                if type(node.op) is not Op:
                    push(node)
                    push(node.op)
                    push(_VISIT)
            elif t is Tuple:
                for f in reversed(node.fields):
                    push(node)
                    push(f)
                    push(_VISIT)
            elif t is TupleGetItem:
                push(node)
                push(node.tuple_value)
                push(_VISIT)
            elif t is Let:
                self.check_let_annotation(node)
                value = node.value
                push(None)
                push(node)
                push(_LET_BODY)
                push(node)
                push(value)
                push(_VISIT)
                if type(value) is Function:
                    # A let-bound function may call itself (letrec, as in Relay):
                    # its var is in scope in the value too.
                    if value not in self.labels:
                        self.labels[value] = _Label(f"%{node.var.name_hint}", self.where())
                    self.open_scope(node, (node.var,))
            elif t is If:
                push(node)
                push(node.false_branch)
                push(_VISIT)
                push(node)
                push(node.true_branch)
                push(_VISIT)
                push(node)
                push(node.cond)
                push(_VISIT)
            elif t is Function:
                label = self.labels.get(node)
                if label is None:
                    label = self.labels[node] = _Label(None, self.where())
                self.functions.append(label)
                self.check_ret_type(node, label)
                self.open_scope(node, node.params)
                push(None)
                push(node)
                push(_CLOSE)
                push(node)
                push(node.body)
                push(_VISIT)
            elif t is GlobalVar:
                mod = self.mod
                if mod is not None and node.name_hint not in mod:
                    self.missing_globals.setdefault(
                        node.name_hint, (parent if parent is not None else node, self.where())
                    )
            # Constants and ops have nothing to check.

    def recheck(self, node: Expr, parent: Expr | None) -> None:
        """``node`` was checked in a scope that is closed now: check its free vars here."""
        in_scope = self.in_scope
        if type(node) is Var:
            if not in_scope.get(node):
                self.loose_uses.append((node, parent if parent is not None else node, self.where()))
            return
        table = self.fv_table
        if table is None:
            # Built on the first need: nodes reached twice are kept in it, so every
            # later recheck is a lookup.
            table = self.fv_table = FreeVarTable(*self.roots)
        loose = [v for v in table[node] if not in_scope.get(v)]
        # Set order varies between runs; sort so the report does not.
        loose.sort(key=lambda v: v.name_hint)
        for v in loose:
            self.loose_uses.append((v, node, self.where()))

    # -- annotations against inferred types -----------------------------------------------
    def check_let_annotation(self, let: Let) -> None:
        ann = let.var.type_annotation
        inferred = let.value._checked_type
        if ann is not None and inferred is not None and ann != inferred:
            self.problems.append(
                f"let var %{let.var.name_hint} in {_text(self.where())} is annotated {ann} but its "
                f"value has checked type {inferred}: `{describe(let)}`"
            )

    def check_ret_type(self, func: Function, label: _Label) -> None:
        inferred = func.body._checked_type
        if func.ret_type is not None and inferred is not None and func.ret_type != inferred:
            self.problems.append(
                f"{label} is annotated to return {func.ret_type} but its body has checked "
                f"type {inferred}: `{describe(func)}`"
            )

    # -- the result ----------------------------------------------------------------------
    def report(self) -> WellFormedReport:
        problems = self.problems
        free: dict[Var, None] = {}
        out_of_scope: dict[Var, list[tuple[Expr, _Label | None]]] = {}
        free_uses: dict[Var, list[tuple[Expr, _Label | None]]] = {}
        for v, user, where in self.loose_uses:
            if v in self.binder:
                out_of_scope.setdefault(v, []).append((user, where))
            else:
                free.setdefault(v, None)
                free_uses.setdefault(v, []).append((user, where))
        for v, uses in out_of_scope.items():
            binder, bound_in = self.binder[v]
            kind = "its let" if type(binder) is Let else "its function"
            problems.append(
                f"%{v.name_hint} is used outside the scope of its binding{_count(uses)}: used at "
                f"`{describe(uses[0][0])}` in {_text(uses[0][1])}, but bound by {kind} "
                f"`{describe(binder)}` in {_text(bound_in)}"
            )
        if self.free_vars_are_problems:
            for v, uses in free_uses.items():
                problems.append(
                    f"free variable %{v.name_hint} in {_text(uses[0][1])}{_count(uses)}: used at "
                    f"`{describe(uses[0][0])}` but bound nowhere"
                )
        for name, (user, where) in self.missing_globals.items():
            problems.append(
                f"@{name} is used in {_text(where)} at `{describe(user)}` but the module "
                f"defines no function @{name}"
            )
        return WellFormedReport(problems, free)


def _count(uses: list) -> str:
    return f" ({len(uses)} places)" if len(uses) > 1 else ""
