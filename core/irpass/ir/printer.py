"""The text format of the IR, and its printer.

``str(mod)``, ``mod.astext()`` and ``str(expr)`` write this text;
:func:`irpass.parse` reads it back, and ``parse(str(mod))`` is structurally
equal to ``mod``. It follows TVM Relay's text format::

    #[version = "irpass 0.1"]
    def @main(%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 3, 3, 3), float32]) {
      %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1]);
      %1 = nn.relu(%0);
      let %d: Tensor[(1, 4, 8, 8), float32] = tanh(%1);
      %2 = add(%d, meta[Constant][0]);
      (%2, %1)
    }

    #[metadata]
    meta[Constant][0] = float32 (1, 4, 8, 8) AACAPwAAgD8AAIA/AACAPw...

**Blocks and names.** A function body, each branch of an ``if`` and a ``let``
used as a value is a *block* ``{ statement; ...; result }``. There are two
kinds of statements: ``%2 = expr;`` only names a node (graph form: it adds
nothing to the IR), while ``let %v = expr;`` is a real :class:`Let` whose
body is the rest of the block. Every call, tuple, tuple projection, ``if``,
``fn`` and ``let`` is printed once, on a ``%n = ...;`` line of its own, and is
``%n`` after that -- except the result of a block and the value of a ``let``,
which are printed in place when that is their only use. So a DAG prints in
size linear in its nodes, and the text stays flat: a million-node chain is a
million short lines, never a million nested parentheses.

A ``%n`` line goes in the innermost block that holds all the uses of its node
(their lowest common ancestor in the tree of blocks), after everything the
node depends on: a node used in both branches of an ``if`` is printed before
the ``if``, a node that uses a ``let`` variable comes after that ``let``. The
numbers count up in reading order within each global function.

**Variables** print as ``%name_hint``. Two different variables with the same
name in one module become ``%x``, ``%x_1``, ... A name that is not an
identifier is quoted (``%"my var"``, ``%""``), so it never clashes with a graph
name like ``%0``. Global functions print as ``@name``, ops by their name
(``nn.conv2d``).

**Types**: ``Tensor[(1, 3), float32]``, ``Tensor[(3,), int64]``,
``Tensor[(), bool]``, tuple types ``(T1, T2)`` / ``(T,)``, function types
``fn (T1, T2) -> T``. Params and ``let`` variables show their annotation, a
function its ``-> ret_type``. After type inference, each printed node carries
a ``/* ty=... */`` comment (comments, ``/* */`` and ``//``, are ignored by the
parser).

**Attributes** are ``key=value`` after the positional arguments, only those
that differ from the op's defaults: ints ``3``, floats ``0.5``, ``1e-05``,
``inf``, ``-inf``, ``nan`` (a float always has a ``.``, an ``e`` or is spelled
out), ``True``/``False``, strings ``"NCHW"`` (JSON escapes), ``None`` and
tuples ``[1, 1]`` (nested as needed). A function's attributes follow its
params: ``fn (%x: T, Primitive=1) -> T { ... }``. A key that is not an
identifier is quoted (``"my-key"=1``).

**Constants.** Scalars print inline with a dtype suffix: ``1.5f32``,
``-3i64``, ``2u8``, ``True``, ``-0.0f64``, ``inff32``, ``nanf16`` (suffixes
``f16 f32 f64 i8 i16 i32 i64 u8 u16 u32 u64``). Tensors of at most
:data:`INLINE_CONST_MAX` elements print inline as
``const(float32, (2, 2), [1.0, 2.0, 3.0, 4.0])`` (values flat, in C order).
Bigger ones print as ``meta[Constant][k]``; with ``show_meta_data=True`` (the
default, what ``str(mod)`` does) a ``#[metadata]`` section at the end of the
text holds one line per constant, ``meta[Constant][k] = <dtype> (<shape>)
<base64 of the raw little-endian C-order bytes>``, so the text is complete on
its own. Every value reads back bit for bit; a value whose text would not
(a NaN with a payload, say) is put in the metadata section too.
:func:`irpass.save` keeps big constants in a ``.npz`` file next to the text
instead (see :mod:`irpass.ir.serialize`).

**Elided constants.** For reading rather than parsing (the printing instruments,
``DumpIR``), ``elide_constants=N`` prints a constant of more than ``N`` elements as
``const(float32, (64, 3, 7, 7), ...)``, its type without its data, and smaller ones
inline in full (MLIR's ``-mlir-elide-elementsattrs-if-larger``): a ResNet-50 then
prints in a few hundred lines instead of a hundred megabytes of base64. Such a text
does not parse back (the parser says the data was elided).
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator
from typing import Any

import numpy as np

from .attrs import EMPTY_ATTRS, Attrs
from .expr import Expr
from .gcpause import gc_paused
from .literals import format_attr_value, format_elements, format_scalar, quote, same_attr_value
from .module import IRModule
from .nodes import Call, Constant, Function, GlobalVar, If, Let, Tuple, TupleGetItem, Var
from .op import REQUIRED, Op
from .types import Type, shape_text, type_text

__all__ = ["print_expr", "print_module", "type_text", "VERSION", "INLINE_CONST_MAX"]

#: The version written in the header of every printed module.
VERSION = "irpass 0.1"
#: Tensors with at most this many elements print inline; bigger ones go to the metadata.
INLINE_CONST_MAX = 4

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_COMPOUND = frozenset({Call, Tuple, TupleGetItem, If, Function, Let})


def print_module(
    mod: IRModule, show_meta_data: bool = True, elide_constants: int | None = None
) -> str:
    """The text of ``mod``: a version header, one ``def`` per function, then the metadata.

    With ``show_meta_data=False`` the ``#[metadata]`` section is left out (the
    text is shorter to read, but parsing it needs the constants passed back in).
    With ``elide_constants=N`` constants of more than ``N`` elements print without
    their data (see the module docstring); ``None`` prints every value.
    """
    text, _ = _print_module(mod, show_meta_data, elide_constants=elide_constants)
    return text


def print_expr(expr: Expr, show_meta_data: bool = True, elide_constants: int | None = None) -> str:
    """The text of one expression: a block without braces (a ``fn`` prints whole)."""
    if not isinstance(expr, Expr):
        raise TypeError(f"print_expr needs an Expr, got {type(expr).__name__}")
    if isinstance(expr, Op):
        return expr.name
    printer = _Printer(_elide_limit(elide_constants))
    lines: list[str] = []
    with gc_paused():
        printer.emit_block_of(expr, 0, lines)
    if show_meta_data:
        printer.append_metadata(lines)
    return "\n".join(lines)


def _elide_limit(elide_constants: int | None) -> int | None:
    if elide_constants is None:
        return None
    if (
        isinstance(elide_constants, bool)
        or not isinstance(elide_constants, int)
        or elide_constants < 0
    ):
        raise ValueError(f"elide_constants must be None or an int >= 0, got {elide_constants!r}")
    return elide_constants


def _print_module(
    mod: IRModule,
    show_meta_data: bool,
    metadata_file: str | None = None,
    elide_constants: int | None = None,
) -> tuple[str, list[np.ndarray]]:
    """The text and the meta constants; ``metadata_file`` names them in a header instead."""
    if not isinstance(mod, IRModule):
        raise TypeError(f"print_module needs an IRModule, got {type(mod).__name__}")
    printer = _Printer(_elide_limit(elide_constants))
    lines: list[str] = []
    with gc_paused():
        for gv, func in mod.items():
            if lines:
                lines.append("")
            printer.emit_function(gv, func, lines)
    header = [f"#[version = {quote(VERSION)}]"]
    if metadata_file is not None and printer.meta:
        header.append(f"#[metadata_file = {quote(metadata_file)}]")
    lines[:0] = header
    if show_meta_data:
        printer.append_metadata(lines)
    return "\n".join(lines) + "\n", printer.meta


class _Layout:
    """Where each node of one function (or expression) is printed.

    Built in three linear passes over the nodes (see :func:`_layout`):
    ``where`` tells for each compound node its block and whether it is
    printed in place (a block's result, a let's value: ``where[node] & 3``
    is not 0) or on a ``%n`` line of its own. ``stmts[b]`` lists the lines
    of block ``b`` in order: a node (a ``%n`` line) or a 1-tuple ``(let,)``
    (a ``let`` line); ``tail[b]`` is the block's result expression;
    ``sub[node]`` are the blocks nested in an ``if``, ``fn`` or ``let`` node.
    """

    __slots__ = ("where", "stmts", "tail", "sub", "counter")

    def __init__(self) -> None:
        self.where: dict[Expr, int] = {}
        self.stmts: list[list[Any]] = []
        self.tail: list[Expr] = []
        self.sub: dict[Expr, tuple[int, ...]] = {}
        self.counter = 0


# Stack markers of pass 1: the node under the marker is finished / has its
# let line due (its value is printed, its body not yet).
_FIN = object()
_LINE = object()


def _layout(root: Expr) -> _Layout:
    """Assign every compound node under ``root`` to a block (block 0 holds ``root``)."""
    # Pass 1: depth-first, children before parents (post-order). A let's line
    # is recorded between its value and its body, which is where it goes in
    # the text. `events` holds finished nodes and (let,) markers.
    events: list[Any] = []
    record = events.append
    expanded: set[Expr] = set()
    seen = expanded.add
    compound = _COMPOUND
    stack: list[Any] = [root] if type(root) in compound else []
    push = stack.append
    pop = stack.pop
    fin, line = _FIN, _LINE
    while stack:
        item = pop()
        if item is fin:
            record(pop())
            continue
        if item is line:
            record((pop(),))
            continue
        if item in expanded:
            continue
        seen(item)
        push(item)
        push(fin)
        t = type(item)
        if t is Call:
            # Pushed in reverse so the op and then the first argument come out first.
            for k in reversed(item.args):
                if type(k) in compound and k not in expanded:
                    push(k)
            k = item.op
            if type(k) in compound and k not in expanded:
                push(k)
            continue
        if t is Let:
            k = item.body
            if type(k) in compound:
                push(k)
            push(item)
            push(line)
            k = item.value
            if type(k) in compound:
                push(k)
            continue
        if t is Tuple:
            kids: tuple[Expr, ...] = item.fields[::-1]
        elif t is TupleGetItem:
            kids = (item.tuple_value,)
        elif t is If:
            kids = (item.false_branch, item.true_branch, item.cond)
        else:
            kids = (item.body,)
        for k in kids:
            if type(k) in compound and k not in expanded:
                push(k)

    # Pass 2: parents before children, so all uses of a node are known when
    # the node is placed. A node whose only use is a block's result or a
    # let's value is printed there, in place; any other lives in the lowest
    # common ancestor of the blocks that use it. `where[node]` packs the block
    # and how the node is used: block << 2 | state, state 0 for a named node,
    # 1 for one in place, 2 for one in place that continues a chain of lets
    # (a block's first expression, a let's body).
    lay = _Layout()
    parent: list[int] = []
    depth: list[int] = []
    where = lay.where
    where_get = where.get
    tail = lay.tail
    sub = lay.sub

    def new_block(p: int, first: Expr) -> int:
        parent.append(p)
        depth.append(depth[p] + 1 if p >= 0 else 0)
        lay.stmts.append([])
        tail.append(first)
        return len(parent) - 1

    def use_again(code: int, b: int) -> int:
        # A further use: the node gets a name, in the blocks' common ancestor.
        a = code >> 2
        if a != b:
            while depth[a] > depth[b]:
                a = parent[a]
            while depth[b] > depth[a]:
                b = parent[b]
            while a != b:
                a = parent[a]
                b = parent[b]
        return a << 2

    new_block(-1, root)
    if type(root) in compound:
        where[root] = 2
    for node in reversed(events):
        t = type(node)
        if t is tuple:
            continue
        code = where[node]
        b = code >> 2
        if t is Call or t is Tuple or t is TupleGetItem:
            if t is Call:
                kids = (node.op, *node.args)
            elif t is Tuple:
                kids = node.fields
            else:
                kids = (node.tuple_value,)
            for k in kids:
                if type(k) in compound:
                    c = where_get(k)
                    where[k] = b << 2 if c is None else use_again(c, b)
        elif t is Let:
            if code & 3 == 2:
                s = b
            else:
                s = new_block(b, node)
                sub[node] = (s,)
            value, body = node.value, node.body
            tail[s] = body
            if type(value) in compound:
                c = where_get(value)
                where[value] = s << 2 | 1 if c is None else use_again(c, s)
            if type(body) in compound:
                c = where_get(body)
                where[body] = s << 2 | 2 if c is None else use_again(c, s)
        elif t is If:
            cond = node.cond
            if type(cond) in compound:
                c = where_get(cond)
                where[cond] = b << 2 if c is None else use_again(c, b)
            sub[node] = branches = (new_block(b, node.true_branch), new_block(b, node.false_branch))
            for k, bb in zip((node.true_branch, node.false_branch), branches, strict=True):
                if type(k) in compound:
                    c = where_get(k)
                    where[k] = bb << 2 | 2 if c is None else use_again(c, bb)
        else:  # Function
            bb = new_block(b, node.body)
            sub[node] = (bb,)
            k = node.body
            if type(k) in compound:
                c = where_get(k)
                where[k] = bb << 2 | 2 if c is None else use_again(c, bb)

    # Pass 3: the lines of each block, in the order of pass 1.
    stmts = lay.stmts
    for e in events:
        if type(e) is tuple:
            let = e[0]
            code = where[let]
            # A let continuing a chain has its line in its own block, any
            # other let opens a block of its own.
            stmts[code >> 2 if code & 3 == 2 else sub[let][0]].append(e)
        else:
            code = where[e]
            if not code & 3:
                stmts[code >> 2].append(e)
    return lay


class _Printer:
    """Prints the functions of one module (names and meta constants are per module)."""

    def __init__(self, elide: int | None = None) -> None:
        #: constants of more elements print without data (None: all print whole)
        self.elide = elide
        # How each node is referred to: %x for vars, %3 for named nodes (per
        # function; a node's entry is rewritten before its uses in each
        # function that prints it), 1.5f32 / meta[Constant][0] for constants.
        self.names: dict[Expr, str] = {}
        self.taken: set[str] = set()
        self.next_suffix: dict[str, int] = {}
        self.plain: dict[str, bool] = {}
        self.defaults: dict[Op, dict[str, Any]] = {}
        self.meta: list[np.ndarray] = []
        # A module repeats a few types and attribute lists many times (every
        # param of every fused function has a type): each is formatted once.
        # Types are keyed by value (immutable, compared exactly); attrs by
        # identity, the entry holding them so the id stays theirs.
        self.type_texts: dict[Type, str] = {}
        self.attr_texts: dict[int, tuple[Attrs, Op, str]] = {}

    # -- top level --------------------------------------------------------------------
    def emit_function(self, gv: GlobalVar, func: Function, out: list[str]) -> None:
        lay = _layout(func.body)
        out.append(f"def {_global_text(gv)}{self._signature(func)} {{")
        self._drive(lay, self._block(lay, 0, 1, out), out)
        out.append("}")

    def emit_block_of(self, expr: Expr, depth: int, out: list[str]) -> None:
        lay = _layout(expr)
        self._drive(lay, self._block(lay, 0, depth, out), out)

    def append_metadata(self, out: list[str]) -> None:
        if not self.meta:
            return
        out.append("")
        out.append("#[metadata]")
        # (dtype, shape) -> the stored dtype and "<dtype> (<shape>)": numpy 2
        # computes dtype.name in Python, the larger part of a small entry's cost.
        layouts: dict[tuple[np.dtype, tuple[int, ...]], tuple[np.dtype, str]] = {}
        for k, data in enumerate(self.meta):
            layout = layouts.get((data.dtype, data.shape))
            if layout is None:
                layout = layouts[data.dtype, data.shape] = (
                    data.dtype.newbyteorder("<"),
                    f"{data.dtype.name} {shape_text(data.shape)}",
                )
            little, head = layout
            payload = base64.b64encode(np.ascontiguousarray(data, dtype=little).tobytes())
            out.append(f"meta[Constant][{k}] = {head} {payload.decode('ascii')}")

    # -- blocks -----------------------------------------------------------------------
    def _drive(self, lay: _Layout, gen: Iterator[Any], out: list[str]) -> None:
        # Block generators append their lines to `out` and yield (block, depth)
        # for each nested block, which runs from this explicit stack: any depth.
        stack = [gen]
        while stack:
            item = next(stack[-1], None)
            if item is None:
                stack.pop()
            else:
                stack.append(self._block(lay, item[0], item[1], out))

    def _block(self, lay: _Layout, b: int, depth: int, out: list[str]) -> Iterator[Any]:
        ind = "  " * depth
        names = self.names
        get = names.get
        where = lay.where.get
        append = out.append
        call = self._call
        for s in lay.stmts[b]:
            t = type(s)
            if t is Call:
                # The common case, kept free of generator overhead.
                name = names[s] = f"%{lay.counter}"
                lay.counter += 1
                ty = s._checked_type
                if ty is None:
                    append(f"{ind}{name} = {call(s)};")
                else:
                    append(f"{ind}{name} = {call(s)} /* ty={self._type_text(ty)} */;")
            elif t is tuple:
                let = s[0]
                v = let.var
                ann = v.type_annotation
                head = f"{ind}let {get(v) or self._ref(v)}"
                if ann is not None:
                    head += f": {self._type_text(ann)}"
                value = let.value
                if where(value, 0) & 3:
                    if type(value) is Call and value._checked_type is None:
                        append(f"{head} = {call(value)};")
                    else:
                        yield from self._inline(lay, value, head + " = ", ";", depth, out)
                else:
                    append(f"{head} = {get(value) or self._ref(value)};")
            else:
                name = names[s] = f"%{lay.counter}"
                lay.counter += 1
                yield from self._inline(lay, s, f"{ind}{name} = ", ";", depth, out)
        result = lay.tail[b]
        if where(result, 0) & 3:
            yield from self._inline(lay, result, ind, "", depth, out)
        else:
            append(ind + (get(result) or self._ref(result)))

    def _inline(
        self, lay: _Layout, node: Expr, prefix: str, suffix: str, depth: int, out: list[str]
    ) -> Iterator[Any]:
        """Append the lines of ``node`` written out in full after ``prefix``."""
        t = type(node)
        get = self.names.get
        ref = self._ref
        ty = node._checked_type
        note = f" /* ty={self._type_text(ty)} */" if ty is not None else ""
        if t is Call:
            out.append(f"{prefix}{self._call(node)}{note}{suffix}")
        elif t is TupleGetItem:
            tup = node.tuple_value
            out.append(f"{prefix}{get(tup) or ref(tup)}.{node.index}{note}{suffix}")
        elif t is Tuple:
            fields = ", ".join([get(f) or ref(f) for f in node.fields])
            if len(node.fields) == 1:
                fields += ","
            out.append(f"{prefix}({fields}){note}{suffix}")
        elif t is If:
            ind = "  " * depth
            bt, bf = lay.sub[node]
            cond = node.cond
            out.append(f"{prefix}if ({get(cond) or ref(cond)}) {{")
            yield (bt, depth + 1)
            out.append(f"{ind}}} else {{")
            yield (bf, depth + 1)
            out.append(f"{ind}}}{note}{suffix}")
        elif t is Function:
            out.append(f"{prefix}fn {self._signature(node)} {{")
            yield (lay.sub[node][0], depth + 1)
            out.append(f"{'  ' * depth}}}{suffix}")
        elif t is Let:
            out.append(f"{prefix}{{")
            yield (lay.sub[node][0], depth + 1)
            out.append(f"{'  ' * depth}}}{note}{suffix}")
        else:
            out.append(f"{prefix}{get(node) or ref(node)}{suffix}")

    # -- pieces ---------------------------------------------------------------------------
    def _type_text(self, ty: Type) -> str:
        text = self.type_texts.get(ty)
        if text is None:
            text = self.type_texts[ty] = type_text(ty)
        return text

    def _signature(self, func: Function) -> str:
        parts = []
        get = self.names.get
        type_texts = self.type_texts
        for p in func.params:
            text = get(p) or self._ref(p)
            ty = p.type_annotation
            if ty is not None:
                text += f": {type_texts.get(ty) or self._type_text(ty)}"
            parts.append(text)
        for key, value in func.attrs.items():
            parts.append(f"{_key_text(key)}={format_attr_value(value)}")
        text = f"({', '.join(parts)})"
        if func.ret_type is not None:
            text += f" -> {self._type_text(func.ret_type)}"
        return text

    def _call(self, call: Call) -> str:
        get = self.names.get
        ref = self._ref
        op = call.op
        args = ", ".join([get(a) or ref(a) for a in call.args])
        if type(op) is not Op:
            return f"{get(op) or ref(op)}({args})"
        attrs = call.attrs
        if attrs is EMPTY_ATTRS or not attrs:
            return f"{op.name}({args})"
        hit = self.attr_texts.get(id(attrs))
        if hit is not None and hit[1] is op:
            text = hit[2]
        else:
            text = self._attrs_text(op, attrs)
            self.attr_texts[id(attrs)] = (attrs, op, text)
        if not text:
            return f"{op.name}({args})"
        return f"{op.name}({args}, {text})" if args else f"{op.name}({text})"

    def _attrs_text(self, op: Op, attrs: Attrs) -> str:
        """``key=value, ...`` for the attributes that differ from ``op``'s defaults."""
        defaults = self.defaults.get(op)
        if defaults is None:
            defaults = self.defaults[op] = {f.name: f.default for f in op.attr_fields}
        parts = []
        for key, value in attrs.items():
            default = defaults.get(key, REQUIRED)
            if default is REQUIRED or not same_attr_value(value, default):
                parts.append(f"{_key_text(key)}={format_attr_value(value)}")
        return ", ".join(parts)

    def _ref(self, node: Expr) -> str:
        """How a var, constant, global or op is written where it is used (and remember it)."""
        t = type(node)
        if t is Var:
            text = self._new_var_name(node)
        elif t is Constant:
            if self.elide is None:
                text = _inline_const_text(node.data)
            else:
                text = _elided_const_text(node.data, self.elide)
            if text is None:
                text = f"meta[Constant][{len(self.meta)}]"
                self.meta.append(node.data)
        elif t is GlobalVar:
            text = _global_text(node)
        elif t is Op:
            text = node.name
        else:
            raise AssertionError(f"internal error: {node!r} is used before it is printed")
        self.names[node] = text
        return text

    def _new_var_name(self, v: Var) -> str:
        base = v.name_hint
        taken = self.taken
        cand = base
        if cand in taken:
            k = self.next_suffix.get(base, 1)
            cand = f"{base}_{k}"
            while cand in taken:
                k += 1
                cand = f"{base}_{k}"
            self.next_suffix[base] = k + 1
        taken.add(cand)
        # `base_k` is an identifier exactly when a non-empty `base` is one.
        plain = self.plain.get(base)
        if plain is None:
            plain = _IDENT.match(cand) is not None
            if base:
                self.plain[base] = plain
        return "%" + cand if plain else "%" + quote(cand)


def _key_text(key: str) -> str:
    return key if _IDENT.match(key) else quote(key)


def _global_text(gv: GlobalVar) -> str:
    name = gv.name_hint
    return "@" + (name if _IDENT.match(name) else quote(name))


def _elided_const_text(data: np.ndarray, limit: int) -> str | None:
    """The inline text of a constant of at most ``limit`` elements, else its dtype and shape
    with ``...`` for the values; ``None`` for a small one whose values need the metadata."""
    if data.ndim == 0:
        return format_scalar(data)
    if data.size <= limit:
        texts = format_elements(data)
        if texts is None:
            return None
        return f"const({data.dtype.name}, {shape_text(data.shape)}, [{', '.join(texts)}])"
    return f"const({data.dtype.name}, {shape_text(data.shape)}, ...)"


def _inline_const_text(data: np.ndarray) -> str | None:
    """``1.5f32`` or ``const(float32, (2,), [1.0, 2.0])``; ``None`` if it goes to the metadata."""
    if data.ndim == 0:
        return format_scalar(data)
    if data.size > INLINE_CONST_MAX:
        return None
    texts = format_elements(data)
    if texts is None:
        return None
    return f"const({data.dtype.name}, {shape_text(data.shape)}, [{', '.join(texts)}])"
