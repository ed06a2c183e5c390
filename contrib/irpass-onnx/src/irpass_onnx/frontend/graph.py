"""GraphImporter: one walk over an ONNX graph that builds the body of ``@main``.

The walk keeps, for every ONNX value name, its irpass expression (``env``) and the type of
every expression built (``types``, computed with the ops' type relations as converters return
new expressions, so converters can ask for the types of their inputs). Values computed only
from constants with integer or bool results (shape arithmetic) are evaluated at import and
become constants, up to :data:`MAX_FOLD_ELEMENTS` elements; float computations, and bigger
results, stay in the IR for FoldConstant.

Subgraphs (the branches of ``If``, the bodies of ``Loop``, ``Scan`` and ``SequenceMap``) are
walked the same way by a child importer whose ``env`` sees the enclosing graphs' values
(:meth:`GraphImporter.import_subgraph`). A model's local functions are inlined before the walk
(:func:`inline_functions`). Besides tensors, a value can be a sequence -- an IR tuple, its
length known at import -- or an optional, present (the value itself) or absent (a marker in
``absent``): see :mod:`.control`.
"""

from __future__ import annotations

import re
from collections import ChainMap, Counter
from collections.abc import Iterator, Mapping, MutableMapping, Sequence
from typing import Any

import numpy as np
import onnx
from irpass.errors import IRPassError
from irpass.evaluator import evaluate
from irpass.ir import (
    Call,
    Constant,
    Expr,
    Function,
    FuncType,
    If,
    IRModule,
    Let,
    Op,
    TensorType,
    Tuple,
    TupleGetItem,
    TupleType,
    Type,
    Var,
)
from irpass.ir.dims import RESERVED_NAMES as _RESERVED_NAMES
from irpass.ir.dims import SizeVar
from irpass.ir.type_infer import mark_typed
from irpass.ir.types import NUMPY_DTYPES, numpy_dtype
from irpass.op.shape_values import as_call, eval_shape_call
from onnx import AttributeProto, GraphProto, ModelProto, NodeProto, TypeProto

from ..dtypes import (
    DTYPE_MIN_OPSET,
    DTYPE_TO_ONNX,
    FLOAT_DTYPES,
    ONNX_TO_DTYPE,
    dtype_name,
    dtype_of,
    onnx_type_name,
)
from ..errors import OnnxImportError
from ..options import DIM_VALUES, ImportOptions
from . import registry
from .context import NodeContext, read_tensor
from .dynamic import RuntimeOperand, dynamic_call
from .tied import transposed_copies

__all__ = ["GraphImporter", "DEFAULT_DOMAINS", "model_opset", "inline_functions",
           "implicit_inputs", "subgraphs"]

#: The domains of the standard ONNX operators.
DEFAULT_DOMAINS = ("", "ai.onnx")

#: The most elements an integer or bool result computed from constants has for the import to
#: compute it (512 MiB of int64). Shape arithmetic stays far below; a bigger result (a mask
#: over a long sequence, or a dim a corrupted constant made 2**31) stays a computation, so
#: that the import neither writes it into memory nor fails for want of it.
MAX_FOLD_ELEMENTS = 1 << 26


def model_opset(model: ModelProto, source: str) -> int:
    """The model's opset of the default domain; :class:`OnnxImportError` if it has none."""
    versions = [o.version for o in model.opset_import if o.domain in DEFAULT_DOMAINS]
    if not versions:
        raise OnnxImportError(f"{source}: the model imports no opset of the default ONNX domain")
    return int(max(versions))


def subgraphs(node: NodeProto) -> Iterator[tuple[str, GraphProto]]:
    """The graph attributes of ``node``: ``(attribute name, graph)``."""
    for a in node.attribute:
        if a.type == AttributeProto.GRAPH:
            yield a.name, a.g
        elif a.type == AttributeProto.GRAPHS:
            for g in a.graphs:
                yield a.name, g


def _all_nodes(graph: GraphProto) -> Iterator[NodeProto]:
    """Every node of ``graph`` and of the subgraphs nested in it (iteratively)."""
    stack = [graph]
    while stack:
        g = stack.pop()
        for node in g.node:
            yield node
            stack.extend(sub for _name, sub in subgraphs(node))


def _names_read(graph: GraphProto) -> set[str]:
    """The value names read in ``graph`` and its nested subgraphs: node inputs and outputs of
    the graphs."""
    names = {o.name for o in graph.output}
    stack = [graph]
    while stack:
        g = stack.pop()
        for node in g.node:
            names.update(node.input)
            for _name, sub in subgraphs(node):
                names.update(o.name for o in sub.output)
                stack.append(sub)
    names.discard("")  # an absent optional input
    return names


def implicit_inputs(graph: GraphProto) -> list[str]:
    """The names ``graph`` (or a subgraph nested in it) reads from the enclosing graphs:
    read there but neither an input, an initializer nor a node output inside, in the order
    of first use."""
    defined: set[str] = set()
    read: dict[str, None] = {}
    stack = [graph]
    while stack:
        g = stack.pop()
        defined.update(i.name for i in g.input)
        defined.update(t.name for t in g.initializer)
        for node in g.node:
            read.update(dict.fromkeys(n for n in node.input if n))
            defined.update(n for n in node.output if n)
            stack.extend(sub for _name, sub in subgraphs(node))
        read.update(dict.fromkeys(o.name for o in g.output))
    return [n for n in read if n not in defined]


def inline_functions(model: ModelProto, source: str) -> ModelProto:
    """``model`` with every call of its local functions (``model.functions``) replaced by the
    function's body, recursively (calls inside functions and subgraphs too; attribute
    references resolved), by ONNX's own inliner. The model is not changed: a copy is."""
    import onnx.inliner

    try:
        return onnx.inliner.inline_local_functions(_with_default_attributes(model),
                                                   convert_version=False)
    except Exception as err:  # noqa: BLE001 - the inliner raises many kinds for bad models
        names = ", ".join(f"{f.domain}.{f.name}" if f.domain else f.name
                          for f in model.functions)
        raise OnnxImportError(f"{source}: cannot inline the model's local functions "
                              f"({names}): {err}") from err


def _with_default_attributes(model: ModelProto) -> ModelProto:
    """A copy of ``model`` in which every call of a local function sets the attributes it
    leaves to the function's defaults (``attribute_proto``): onnx's inliner drops an
    attribute reference to a default it is not given."""
    defaults = {(f.domain, f.name): list(f.attribute_proto) for f in model.functions}
    if not any(defaults.values()):
        return model
    copy = ModelProto()
    copy.CopyFrom(model)
    graphs = [copy.graph]
    node_lists = [f.node for f in copy.functions]
    while graphs or node_lists:
        nodes = graphs.pop().node if graphs else node_lists.pop()
        for node in nodes:
            given = {a.name for a in node.attribute}
            for default in defaults.get((node.domain, node.op_type), ()):
                if default.name not in given:
                    node.attribute.append(default)
            graphs.extend(sub for _name, sub in subgraphs(node))
    return copy


class GraphImporter:
    """Converts the main graph of one ModelProto into an :class:`IRModule`.

    Use once: ``GraphImporter(model, options, source).run()``.
    """

    def __init__(self, model: ModelProto, options: ImportOptions, source: str | None) -> None:
        self.model = model
        self.graph: GraphProto = model.graph
        #: How the model is named in messages: the file, else the graph name.
        name = self.graph.name if isinstance(self.graph.name, str) else None
        self.source: str = source or f"ONNX model {name or '<unnamed>'!r}"
        self.options = options
        #: The main graph's node fields, read once.
        self.fields = _NodeFields(self.graph)
        _check_text(model, self.source, self.fields.texts)
        self.opset = model_opset(model, self.source)
        if len(model.functions):
            model = inline_functions(model, self.source)
            self.model = model
            self.graph = model.graph
            self.fields = _NodeFields(self.graph)
        #: ONNX value name -> its expression (a subgraph's importer sees its parents' too).
        self.env: MutableMapping[str, Expr] = {}
        #: expression -> its type (by node identity).
        self.types: dict[Expr, Type] = {}
        #: op type -> its converter at the model's opset.
        self._converters: dict[str, registry.Converter] = {}
        #: (shape, numpy dtype) -> the TensorType of constants of that kind.
        self._const_types: dict[tuple[tuple[int, ...], np.dtype], TensorType] = {}
        #: Value names read by some node or listed as a graph output.
        self.used_names: set[str] = set()
        #: Types from ONNX's shape inference (see inferred_type), computed on first need.
        self._inferred: dict[str, TensorType] | None = None
        #: The static types this graph's ``value_info`` declares (set when the walk starts).
        self.declared: dict[str, TensorType] = {}
        #: The importer of the main graph (a subgraph's importer shares its caches).
        self._root: GraphImporter = self
        #: Optional values that are absent (markers; see :mod:`.control`), by identity.
        self.absent: set[Expr] = set()
        #: Graph inputs of an optional type: imported as present, though whether they are is
        #: known only at run time (OptionalHasElement refuses them).
        self.optional_inputs: set[Expr] = set()
        #: Integer values whose elements are known dims, some symbolic (``Shape`` of a tensor
        #: with symbolic dims and what is computed from it): expression -> object array (see
        #: irpass.op.shape_values). Shared with subgraphs.
        self.shape_values: dict[Expr, np.ndarray] = {}
        #: The size variables of the graph inputs' symbolic dims: ONNX dim name -> variable.
        self.size_vars: dict[str, SizeVar] = {}

    # -- errors ---------------------------------------------------------------------------
    def fail(self, msg: str) -> OnnxImportError:
        """An :class:`OnnxImportError` naming the model (the caller raises it)."""
        return OnnxImportError(f"{self.source}: {msg}")

    # -- the walk -------------------------------------------------------------------------
    def run(self) -> IRModule:
        """Import the graph; :class:`OnnxImportError` on anything irpass cannot represent."""
        graph = self.graph
        self._check_supported()
        self.used_names.update(self._names_read())
        weight_params = self._initializers()
        input_params = self._inputs()
        self._check_dim_values()
        declared = self.declared = self._value_info()
        for index, node in enumerate(graph.node):
            self._convert(index, node, declared)
        body = self._outputs(declared)
        attrs = {
            "onnx.opset": self.opset,
            "onnx.output_names": [o.name for o in graph.output],
            "onnx.graph_name": graph.name,
        }
        # Every node is typed by now, with the ops' relations as InferType types them:
        # the module is marked typed, and the InferType every pipeline starts with returns
        # it at once (it would spend ~10 us a node redoing the relations). Control flow
        # (If, Loop/Scan's recursive functions) is left to InferType.
        ret = self.type_of_expr(body, None)
        main = Function(input_params + weight_params, body, ret, attrs=attrs)
        mod = IRModule({"main": main})
        types = self.types
        if not any(type(n) in _CONTROL for n in types):
            types[main] = FuncType(tuple(p.type_annotation for p in main.params), ret)
            mark_typed(mod, types)
        return mod

    def _check_supported(self) -> None:
        supported = registry.supported_op_types(self.opset)
        bad: Counter[str] = Counter()
        op_types = list(self.fields.op_types)
        op_types.extend((n.domain, n.op_type) for node in self.fields.nested
                        for _name, sub in subgraphs(node) for n in _all_nodes(sub))
        for domain, op_type in op_types:
            if domain not in DEFAULT_DOMAINS:
                bad[f"{domain}.{op_type}"] += 1
            elif op_type not in supported:
                bad[op_type] += 1
        if bad:
            # str keys: an op type inside a subgraph may still be bytes (not valid UTF-8)
            listed = ", ".join(f"{name} ({n})"
                               for name, n in sorted(bad.items(), key=lambda kv: str(kv[0])))
            raise self.fail(
                f"{len(bad)} unsupported ONNX op type(s) at opset {self.opset} "
                f"({sum(bad.values())} node(s)): {listed}"
            )

    def _names_read(self) -> set[str]:
        """:func:`_names_read` of this importer's graph, from the fields read already."""
        names = {o.name for o in self.graph.output}
        for inputs in self.fields.inputs:
            names.update(inputs)
        for node in self.fields.nested:
            for _name, sub in subgraphs(node):
                names.update(_names_read(sub))
        names.discard("")  # an absent optional input
        return names

    def _initializers(self) -> list[Var]:
        """Bind every initializer; return the params made of them (weights="params")."""
        params: list[Var] = []
        consts: list[tuple[str, Constant]] = []
        # a subgraph's initializers are constants: only @main has params
        as_params = self.options.weights == "params" and self._root is self
        if len(self.graph.sparse_initializer):
            raise self.fail("sparse initializers are not supported: "
                            + ", ".join(repr(t.values.name)
                                        for t in self.graph.sparse_initializer))
        for t in self.graph.initializer:
            dtype = ONNX_TO_DTYPE.get(t.data_type)  # the message is formatted only when needed
            if dtype is None or dtype in DTYPE_MIN_OPSET:
                dtype = self._dtype(t.data_type, f"initializer {t.name!r}")
                self._check_in_opset(dtype, f"initializer {t.name!r}")
            if as_params and dtype in FLOAT_DTYPES:
                v = Var(t.name, TensorType(tuple(t.dims), dtype))
                params.append(v)
                self._bind(t.name, v, v.type_annotation)
                continue
            try:
                data = read_tensor(t)
            except Exception as err:  # noqa: BLE001 - onnx raises many kinds here
                raise self.fail(f"initializer {t.name!r}: cannot read its data: {err}") from err
            c = Constant(np.asarray(data, dtype=numpy_dtype(dtype)))
            self._bind(t.name, c, self.const_type(c))
            consts.append((t.name, c))
        for name, of in transposed_copies(consts).items():  # a tied weight stored twice
            self._bind(name, Call(Op.get("transpose"), [self.env[of]], {"axes": [1, 0]}))
        return params

    def _dtype(self, elem_type: int, where: str) -> str:
        try:
            return dtype_of(elem_type, where)
        except ValueError as err:
            raise self.fail(str(err)) from None

    def _check_in_opset(self, dtype: str, where: str) -> None:
        """An error naming ``where``, a value the graph gets (an initializer or an input), for a
        dtype the model's opset does not have: no op of that opset takes it, and the exporter
        could not write it back at that opset."""
        need = DTYPE_MIN_OPSET.get(dtype, 0)
        if need > self.opset:
            since = f"from opset {need}" if need < 10**9 else "in no opset's operators yet"
            raise self.fail(f"{where}: ONNX element type {onnx_type_name(DTYPE_TO_ONNX[dtype])} "
                            f"is not in the model's opset {self.opset} (ONNX has it {since})")

    def _inputs(self) -> list[Var]:
        params: list[Var] = []
        for i, inp in enumerate(self.graph.input):
            if inp.name in self.env:
                continue  # an initializer listed as an input (ONNX IR < 4): a constant
            where = f"graph input {i} {inp.name!r}"
            tp = inp.type
            if tp.HasField("optional_type") and tp.optional_type.elem_type.HasField(
                    "tensor_type"):
                # irpass has no run-time optionals: the input is imported as present
                tp = tp.optional_type.elem_type
            elif _is_sequence(tp):
                raise self.fail(f"{where} is a sequence ({_type_text(tp)}); irpass imports "
                                "sequences built in the graph, whose length is known at "
                                "import, not sequences passed in")
            ty = self._input_type(tp, where)
            v = Var(inp.name, ty)
            if inp.type.HasField("optional_type"):
                self.optional_inputs.add(v)
            params.append(v)
            self._bind(inp.name, v)
        return params

    def _input_type(self, tp: TypeProto, where: str) -> TensorType:
        """The type of a graph input: a symbolic dim (``dim_param``) becomes a size variable
        of that name (made an identifier: ``batch size`` -> ``batch_size``), an unknown dim
        a fresh one (``unk0``, ...), unless the dim_values option fixes it."""
        if not tp.HasField("tensor_type"):
            raise self.fail(f"{where} is not a tensor (type {tp.WhichOneof('value')}); "
                            "irpass imports tensor inputs only")
        if not tp.tensor_type.HasField("shape"):
            self._dtype(tp.tensor_type.elem_type, where)  # a bad dtype is named first
            raise self.fail(f"{where} has no shape (unknown rank); irpass needs the rank of "
                            "every input")

        def symbolic(d: Any) -> Any:
            value = self.options.dim_value(d.dim_param)
            if value is not None:
                return value
            if d.dim_param:
                return self._size_var(d.dim_param)
            return self._size_var(f"unk{len(self.size_vars)}", unknown=True)

        ty = self._tensor_type(tp, where, symbolic)
        assert ty is not None  # a tensor with a shape, every dim resolved
        self._check_in_opset(ty.dtype, where)
        return ty

    def _size_var(self, name: str, unknown: bool = False) -> SizeVar:
        """The size variable of ONNX dim name ``name`` (one per name in the model)."""
        var = self.size_vars.get(name)
        if var is None:
            text = re.sub(r"\W", "_", name, flags=re.ASCII)
            if not text or text[0].isdigit() or text in _RESERVED_NAMES:
                text = f"d_{text}"
            taken = {v.name for v in self.size_vars.values()}
            if unknown:  # a fresh name must not be one a later input's dim_param takes
                taken |= self._dim_params()
            base, k = text, 1
            while text in taken:
                text, k = f"{base}_{k}", k + 1
            var = self.size_vars[name] = SizeVar(text)
        return var

    def _dim_params(self) -> set[str]:
        return {d.dim_param for i in self.graph.input if i.type.HasField("tensor_type")
                for d in i.type.tensor_type.shape.dim if d.dim_param}

    def _check_dim_values(self) -> None:
        """A dim_values entry must name a symbolic dim of a graph input (or be ``*``)."""
        if self._root is not self:
            return
        names = self._dim_params()
        missing = sorted(k for k in self.options.dim_values if k != "*" and k not in names)
        if missing:
            have = ", ".join(sorted(names)) or "none"
            raise self.fail(f"option {DIM_VALUES} names dim(s) {', '.join(missing)} that no "
                            f"graph input has (its symbolic dims: {have})")

    def _static_type(self, tp: TypeProto, where: str) -> TensorType | None:
        """The type ``tp`` declares if it is a tensor with a static shape, else ``None``."""
        return self._tensor_type(tp, where, lambda d: None)

    def _tensor_type(self, tp: TypeProto, where: str, symbolic: Any) -> TensorType | None:
        """The tensor type of ``tp`` with each dim that has no value given by
        ``symbolic(dim)`` (``None``: the type is ``None``); ``None`` for a type that is not a
        tensor or has no shape. A bad dtype or a negative dim is an error naming ``where``."""
        if not tp.HasField("tensor_type"):
            return None
        tt = tp.tensor_type
        dtype = self._dtype(tt.elem_type, where)
        if not tt.HasField("shape"):
            return None
        dims: list[Any] = []
        for k, d in enumerate(tt.shape.dim):
            if d.HasField("dim_value"):
                if d.dim_value < 0:
                    raise self.fail(f"{where} has dim {d.dim_value} at index {k}; "
                                    "a dim is at least 0")
                dims.append(int(d.dim_value))
                continue
            dim = symbolic(d)
            if dim is None:
                return None
            dims.append(dim)
        return TensorType(tuple(dims), dtype)

    def _value_info(self) -> dict[str, TensorType]:
        """The static tensor types the graph's ``value_info`` declares, by name."""
        declared: dict[str, TensorType] = {}
        env = self.env
        for vi in self.graph.value_info:
            if vi.name in env:
                continue  # an input or initializer (dynamo lists their types too)
            ty = _plain_type(vi.type)
            if ty is None:
                try:
                    ty = self._static_type(vi.type, f"value_info {vi.name!r}")
                except OnnxImportError:
                    continue  # a type irpass lacks: the node producing it will say so
            if ty is not None:
                declared[vi.name] = ty
        return declared

    def _convert(self, index: int, node: NodeProto, declared: dict[str, TensorType]) -> None:
        fields = self.fields
        ctx = NodeContext(self, index, node, fields.inputs[index], fields.outputs[index])
        env = self.env
        for i, name in enumerate(ctx._inputs):
            if name and name not in env:
                ctx.fail(f"input {i} {name!r} is not defined before the node (no graph input, "
                         "initializer or earlier node output has that name; ONNX graphs must "
                         "be topologically sorted)")
        fn = self._converter(node.op_type)
        try:
            result = fn(ctx)
        except RuntimeOperand as cause:  # see frontend/dynamic.py
            result = dynamic_call(self, ctx, cause, declared)
        except OnnxImportError:
            raise
        except (IRPassError, ValueError, TypeError, ArithmeticError) as err:
            raise OnnxImportError(f"{self.source}: {ctx.where}: {err}") from err
        outputs = [result] if isinstance(result, Expr) else list(result)
        names = ctx._outputs
        if len(outputs) > len(names):
            ctx.fail(f"the converter returned {len(outputs)} outputs for {len(names)} "
                     "output names")
        for j in range(len(outputs), len(names)):
            if ctx.output_used(j):
                ctx.fail(f"output {j} {names[j]!r} is not supported by irpass "
                         f"(only the first {len(outputs)} output(s) can be used)")
        foldable: bool | None = None  # found out when an output could be folded
        for j, expr in enumerate(outputs):
            name = names[j]
            if not name:
                continue
            if name in env:
                ctx.fail(f"output {j} {name!r} is already defined (ONNX values are assigned "
                         "once)")
            ty = self.type_of_expr(expr, ctx)
            tt = type(ty)
            if tt is TensorType:
                if ty.dtype not in FLOAT_DTYPES and type(expr) is not Constant:
                    if foldable is None:
                        foldable = self._reads_constants_only(node)
                    if foldable and _small(ty):
                        expr = self._fold(expr, ty, ctx)
                    elif self.size_vars:  # shapes may be symbolic: maybe a shape value
                        expr = self._shape_value(expr, ty)
            elif tt is not TupleType:  # a tuple is a sequence
                ctx.fail(f"output {j} {name!r} has type {ty}, not a tensor type")
            want = declared.get(name)
            if want is not None and not _agrees(want, ty):
                ctx.fail(f"output {j} {name!r} is {ty} but the model's value_info "
                         f"declares {want}")
            env[name] = expr
            self.types.setdefault(expr, ty)

    def _converter(self, op_type: str) -> registry.Converter:
        """The converter of ``op_type`` at the model's opset (looked up once per op type)."""
        converters = self._root._converters
        fn = converters.get(op_type)
        if fn is None:
            fn = converters[op_type] = registry.lookup(op_type, self.opset)
            assert fn is not None  # _check_supported ran
        return fn

    def _reads_constants_only(self, node: NodeProto) -> bool:
        """Whether ``node`` reads something and only constants: its inputs, and the values
        of the enclosing graphs its subgraphs read."""
        env = self.env
        reads = [n for n in node.input if n]
        for _name, sub in subgraphs(node):
            reads.extend(implicit_inputs(sub))
        return bool(reads) and all(type(env.get(n)) is Constant for n in reads)

    def _fold(self, expr: Expr, ty: TensorType, ctx: NodeContext) -> Constant:
        """The import-time value of an integer/bool expression over constants."""
        value = self._run_kernels(expr)
        if value is None:  # not op calls alone, or a kernel failed: the evaluator says why
            try:
                value = evaluate(expr)
            except IRPassError as err:
                ctx.fail(f"evaluating it at import failed: {err}")
        const = Constant(np.asarray(value, dtype=numpy_dtype(ty.dtype)).reshape(ty.shape))
        self.types[const] = ty
        return const

    def _shape_value(self, expr: Expr, ty: TensorType) -> Expr:
        """``expr`` (an integer result) computed on known dims when it is made of ``shape_of``
        calls, constants, shape values and the ops of ``irpass.op.shape_values``: a Constant
        if every element came out static, else one ``dims_tensor`` with its value recorded in
        :attr:`shape_values`; ``expr`` as it is when its value is not known."""
        known, types = self.shape_values, self.types

        def leaf(e: Expr) -> Any:
            if type(e) is Constant:
                return e.data
            value = known.get(e)
            if value is not None:
                return value
            if type(e) is Call and type(e.op) is Op and e.op.name == "shape_of":
                arg_ty = types.get(e.args[0])
                if type(arg_ty) is not TensorType:
                    return _UNKNOWN
                return np.array(arg_ty.shape + (0,), dtype=object)[:-1]  # 1-D, objects
            return None

        def apply(call: Call, args: list[Any]) -> np.ndarray | None:
            call_ty = ty if call is expr else types.get(call)
            if type(call_ty) is not TensorType:
                return None
            value = eval_shape_call(call.op, args, call.attrs, call_ty.dtype)
            return value if value is not None and value.shape == call_ty.shape else None

        value = _compute(expr, leaf, apply)
        if value is None:
            return expr
        if value.dtype != object:
            const = Constant(value.astype(numpy_dtype(ty.dtype), copy=False))
            types[const] = ty
            return const
        # the scaffolding that computed it is dropped: one dims_tensor holds the value
        made = as_call(value, ty.dtype)
        types[made] = ty
        known[made] = value
        return made

    def _run_kernels(self, expr: Expr) -> np.ndarray | None:
        """The value of ``expr``, op calls (and tuples) over constants, computed with the ops'
        kernels directly; ``None`` when it holds anything else, or when a kernel fails or
        returns what its type relation does not say (the evaluator then reports it).

        The evaluator would type the expression again and check it as a whole program
        (about 250 us a fold on the zoo, where a shape computation is one or two calls);
        every node here is typed already (``types``)."""
        types = self.types

        def leaf(e: Expr) -> Any:
            if type(e) is Constant:
                return e.data
            if type(e) is Call and (type(e.op) is not Op or e.op.kernel is None):
                return _UNKNOWN
            return None

        def apply(call: Call, args: list[Any]) -> Any:
            try:
                out = call.op.kernel(tuple(args), call.attrs)
            except Exception:  # noqa: BLE001 - the evaluator reports it, naming the op
                return None
            if isinstance(out, np.generic):
                out = np.asarray(out)
            return out if _matches(out, types.get(call)) else None

        return _compute(expr, leaf, apply)

    def _outputs(self, declared: dict[str, TensorType]) -> Expr:
        """The body of ``@main``: the graph outputs, each checked against its declared type."""
        fields: list[Expr] = []
        for i, out in enumerate(self.graph.output):
            where = f"graph output {i} {out.name!r}"
            expr = self.env.get(out.name)
            if expr is None:
                raise self.fail(f"{where} is not produced by any node, input or initializer")
            self._check_output(expr, out.type, where)
            fields.append(expr)
        if not fields:
            raise self.fail("the graph has no outputs")
        return fields[0] if len(fields) == 1 else Tuple(fields)

    def _check_output(self, expr: Expr, tp: TypeProto, where: str) -> None:
        if expr in self.absent:
            raise self.fail(f"{where} is an optional without a value; irpass's results are "
                            "tensors")
        ty = self.types[expr]
        if tp.HasField("optional_type"):
            tp = tp.optional_type.elem_type
        if isinstance(ty, TupleType) or _is_sequence(tp):
            # a result tuple would read as several outputs (evaluate, the exporter)
            raise self.fail(f"{where} is a sequence ({_type_text(tp)}); irpass's results are "
                            "tensors (sequences can be used inside the graph: SequenceAt, "
                            "ConcatFromSequence, ...)")
        try:
            want = self._static_type(tp, where)
        except OnnxImportError:
            want = None  # an undefined or foreign element type declares nothing
        if want is not None and not _agrees(want, ty):
            raise self.fail(f"{where} is {ty} but the model declares {want}")

    # -- nodes with run-time shape operands (frontend/dynamic.py) ------------------------------
    def inferred_type(self, name: str) -> TensorType | None:
        """The static type ONNX's shape inference gives value ``name``, or None. Inference runs
        once, on the first call: only models with run-time shape operands pay for it."""
        root = self._root
        if root._inferred is None:
            root._inferred = {}
            try:
                inferred = onnx.shape_inference.infer_shapes(root.model, strict_mode=False,
                                                             data_prop=True)
            except Exception:  # noqa: BLE001 - no inference: the caller reports the node
                return None
            # value names are unique in the whole model, subgraphs included (SSA)
            graphs = [inferred.graph]
            graphs.extend(sub for node in _all_nodes(inferred.graph)
                          for _name, sub in subgraphs(node))
            for g in graphs:
                for vi in list(g.value_info) + list(g.output):
                    try:
                        ty = self._static_type(vi.type, f"value {vi.name!r}")
                    except OnnxImportError:
                        continue
                    if ty is not None:
                        root._inferred[vi.name] = ty
        return root._inferred.get(name)

    # -- subgraphs ------------------------------------------------------------------------
    def import_subgraph(self, ctx: NodeContext, attr: str, inputs: Sequence[Expr],
                        bindings: Mapping[str, Expr] | None = None) -> list[Expr]:
        """Convert the graph attribute ``attr`` of ``ctx``'s node: its inputs bound to
        ``inputs`` (by position), the names in ``bindings`` to those expressions, every other
        value of the enclosing graphs visible; returns the expressions of its outputs.

        Errors name the model, the node, the attribute and the node inside."""
        graph = ctx.attr(attr)
        if not isinstance(graph, GraphProto):
            ctx.fail(f"attribute {attr!r} must be a graph")
        if len(graph.input) != len(inputs):
            ctx.fail(f"its {attr} graph has {len(graph.input)} input(s), expected "
                     f"{len(inputs)}")
        child = self._child(graph, f"{self.source}: {ctx.where}: {attr}")
        child.used_names.update(child._names_read())
        if bindings:
            child.env.update(bindings)
        for k, (inp, expr) in enumerate(zip(graph.input, inputs, strict=True)):
            if not inp.name:
                ctx.fail(f"input {k} of its {attr} graph has no name")
            ty = child.type_of_expr(expr, ctx)
            want = None
            if isinstance(ty, TensorType):
                try:
                    want = child._static_type(inp.type, f"input {k} {inp.name!r} of its {attr} "
                                              "graph")
                except OnnxImportError:
                    want = None
            if want is not None and want.dtype != ty.dtype:
                ctx.fail(f"input {k} {inp.name!r} of its {attr} graph is declared {want} but "
                         f"gets {ty}")
            child.env[inp.name] = expr
        child._initializers()
        declared = child.declared = child._value_info()
        for index, node in enumerate(graph.node):
            child._convert(index, node, declared)
        outs = []
        for k, out in enumerate(graph.output):
            expr = child.env.get(out.name)
            if expr is None:
                raise child.fail(f"output {k} {out.name!r} is not produced by any node or "
                                 "input")
            outs.append(expr)
        return outs

    def _child(self, graph: GraphProto, source: str) -> GraphImporter:
        """An importer for ``graph``, a subgraph of this one's (shares every cache)."""
        child = object.__new__(GraphImporter)
        child.model = self.model
        child.graph = graph
        child.fields = _NodeFields(graph)
        child.source = source
        child.options = self.options
        child.opset = self.opset
        child.env = ChainMap({}, self.env)
        child.types = self.types
        child._const_types = self._const_types
        child.used_names = self.used_names
        child._inferred = None
        child._root = self._root
        child.absent = self.absent
        child.optional_inputs = self.optional_inputs
        child.shape_values = self.shape_values
        child.size_vars = self.size_vars
        return child

    @classmethod
    def convert_node_with_values(cls, node: NodeProto, opset: int, options: ImportOptions,
                                 values: Sequence[np.ndarray | None]) -> list[Expr]:
        """Convert ``node`` with its inputs bound to constants (``values[i]`` for input ``i``;
        None where the input is absent): the outputs' expressions, over constants only."""
        graph = onnx.helper.make_graph([node], "node", [], [])
        model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", opset)])
        importer = cls(model, options, f"ONNX node {node.name!r} ({node.op_type})")
        for name, value in zip(node.input, values, strict=True):
            if name and value is not None:
                importer._bind(name, Constant(value))
        importer.used_names.update(o for o in node.output if o)
        importer._convert(0, node, {})
        return [importer.env[o] for o in node.output if o]

    # -- values and types -----------------------------------------------------------------
    def _bind(self, name: str, expr: Expr, ty: Type | None = None) -> None:
        self.env[name] = expr
        if ty is not None:
            self.types.setdefault(expr, ty)
        else:
            self.type_of_expr(expr, None)

    def value(self, name: str) -> Expr:
        """The expression bound to ONNX value ``name``."""
        try:
            return self.env[name]
        except KeyError:
            raise self.fail(f"value {name!r} is not defined") from None

    def type_of_expr(self, expr: Expr, ctx: NodeContext | None) -> Type:
        """The type of ``expr``, inferring the nodes not typed yet (iteratively)."""
        types = self.types
        ty = types.get(expr)
        if ty is not None:
            return ty
        # The common case, a converter's op call over typed values, is typed at once: the
        # walk below costs ~3 us more per node on the zoo
        if type(expr) is Call and type(expr.op) is Op and all(a in types for a in expr.args):
            ty = types[expr] = self._node_type(expr, ctx)
            return ty
        stack: list[tuple[Expr, bool]] = [(expr, False)]
        while stack:
            e, ready = stack.pop()
            if e in types:
                continue
            if not ready:
                stack.append((e, True))
                stack.extend((c, False) for c in _children(e) if c not in types)
                continue
            types[e] = self._node_type(e, ctx)
        return types[expr]

    def const_type(self, c: Constant) -> TensorType:
        """The type of constant ``c`` (``c.type`` computes ``dtype.name``, ~3 us, and a new
        TensorType every time; most constants share a few types)."""
        data = c.data
        key = (data.shape, data.dtype)
        ty = self._const_types.get(key)
        if ty is None:
            ty = self._const_types[key] = TensorType(data.shape, dtype_name(data.dtype))
        return ty

    def _type_error(self, ctx: NodeContext | None, msg: str) -> OnnxImportError:
        """The error naming ``ctx``'s node when there is one (raised), else the model."""
        if ctx is not None:
            ctx.fail(msg)
        return self.fail(msg)

    def _node_type(self, e: Expr, ctx: NodeContext | None) -> Type:
        types = self.types

        def bad(msg: str) -> OnnxImportError:
            return self._type_error(ctx, msg)

        if type(e) is Call and type(e.op) is Op:  # first: most nodes are op calls
            arg_types = tuple([types[a] for a in e.args])
            try:
                out = e.op.type_rel(arg_types, e.attrs)
            except (TypeError, ValueError) as err:
                shown = ", ".join(str(t) for t in arg_types)
                raise bad(f"type error in {e.op.name}({shown}): {err}") from err
            if not isinstance(out, Type):
                raise bad(f"internal: the type relation of {e.op.name} returned {out!r}")
            return out
        if isinstance(e, Constant):
            return self.const_type(e)
        if isinstance(e, Var):
            if e.type_annotation is None:
                raise bad(f"internal: var %{e.name_hint} has no type")
            return e.type_annotation
        if isinstance(e, Tuple):
            return TupleType(tuple(types[f] for f in e.fields))
        if isinstance(e, TupleGetItem):
            tt = types[e.tuple_value]
            if not isinstance(tt, TupleType) or e.index >= len(tt.fields):
                raise bad(f"type error: field {e.index} of a value of type {tt}")
            return tt.fields[e.index]
        # control flow (frontend/control.py): typed as irpass.ir.infer_type types it
        if isinstance(e, Call):
            fty = types[e.op]
            arg_types = [types[a] for a in e.args]
            if not isinstance(fty, FuncType) or list(fty.arg_types) != arg_types:
                raise bad(f"type error: a call of a {fty} with arguments of types "
                          f"({', '.join(map(str, arg_types))})")
            return fty.ret_type
        if isinstance(e, If):
            cond, then, other = types[e.cond], types[e.true_branch], types[e.false_branch]
            if cond != TensorType((), "bool"):
                raise bad(f"type error: the condition of an if is {cond}, not a bool scalar")
            if then != other:
                raise bad(f"type error: the branches of an if have types {then} and {other}")
            return then
        if isinstance(e, Let):
            return types[e.body]
        if isinstance(e, Function):
            body = types[e.body]
            if e.ret_type is not None and e.ret_type != body:
                raise bad(f"type error: a function returning {e.ret_type} has a body of type "
                          f"{body}")
            return FuncType([p.type_annotation for p in e.params], body)
        raise bad(f"internal: a converter built a {type(e).__name__}, which the importer does "
                  "not type")


def _check_text(model: ModelProto, source: str,
                node_texts: Sequence[str | bytes] | None = None) -> None:
    """:class:`OnnxImportError` naming the first string of the model that is not valid UTF-8
    (protobuf hands such a string over as ``bytes``), and where it is. ``node_texts``: the
    strings of the graph's nodes (:class:`_NodeFields`), if read already."""
    if node_texts is None:
        node_texts = _NodeFields(model.graph).texts
    if bytes not in set(map(type, _texts(model))) and bytes not in set(map(type, node_texts)):
        return  # the common case, found without formatting where each string is (~3 us a node)

    def check(value: object, where: str, what: str) -> None:
        if isinstance(value, bytes):
            raise OnnxImportError(f"{source}: {where}: its {what} is not valid UTF-8: {value!r}")

    for i, o in enumerate(model.opset_import):
        check(o.domain, f"opset import {i}", "domain")
    graph = model.graph
    check(graph.name, "the graph", "name")
    groups = (("graph input", graph.input), ("graph output", graph.output),
              ("value_info", graph.value_info))
    for label, infos in groups:
        for i, vi in enumerate(infos):
            where = f"{label} {i}"
            check(vi.name, where, "name")
            if vi.type.HasField("tensor_type"):
                for k, d in enumerate(vi.type.tensor_type.shape.dim):
                    check(d.dim_param, f"{where} {vi.name!r}", f"dim {k}'s name")
    for i, t in enumerate(graph.initializer):
        check(t.name, f"initializer {i}", "name")
    for i, node in enumerate(graph.node):
        where = f"node {i}"
        for field in ("name", "op_type", "domain"):
            check(getattr(node, field), where, field)
        where = f"node {i} {node.name!r} ({node.op_type})"
        for j, name in enumerate(node.input):
            check(name, where, f"input {j}")
        for j, name in enumerate(node.output):
            check(name, where, f"output {j}")
        for a in node.attribute:
            check(a.name, where, "attribute name")


def _texts(model: ModelProto) -> list[str | bytes]:
    """The strings :func:`_check_text` checks, without saying where each is."""
    graph = model.graph
    texts: list[str | bytes] = [o.domain for o in model.opset_import]
    texts.append(graph.name)
    for infos in (graph.input, graph.output, graph.value_info):
        for vi in infos:
            texts.append(vi.name)
            if vi.type.HasField("tensor_type"):
                texts.extend([d.dim_param for d in vi.type.tensor_type.shape.dim])
    texts.extend([t.name for t in graph.initializer])
    return texts


class _NodeFields:
    """The fields of a graph's nodes that the import reads more than once, read in one walk
    (a protobuf field read costs ~0.1 us, and the text check, the op type check, the names
    read and the conversion each read them): each node's input and output names, its
    ``(domain, op_type)``, the nodes with subgraphs, and every string of the nodes (for
    :func:`_check_text`)."""

    __slots__ = ("inputs", "outputs", "op_types", "nested", "texts")

    def __init__(self, graph: GraphProto) -> None:
        self.inputs: list[tuple[str, ...]] = []
        self.outputs: list[tuple[str, ...]] = []
        self.op_types: list[tuple[str, str]] = []
        self.nested: list[NodeProto] = []
        self.texts: list[str | bytes] = []
        texts = self.texts
        for node in graph.node:
            inputs, outputs = tuple(node.input), tuple(node.output)
            op_type, domain = node.op_type, node.domain
            self.inputs.append(inputs)
            self.outputs.append(outputs)
            self.op_types.append((domain, op_type))
            texts += inputs
            texts += outputs
            texts += (node.name, op_type, domain)
            nested = False
            for a in node.attribute:
                texts.append(a.name)
                nested = nested or a.type in _GRAPH_ATTRIBUTES
            if nested:
                self.nested.append(node)


_GRAPH_ATTRIBUTES = (AttributeProto.GRAPH, AttributeProto.GRAPHS)

#: Nodes of control flow, whose modules the importer leaves InferType to type.
_CONTROL = frozenset({Function, Let, If})


def _children(e: Expr) -> Sequence[Expr]:
    if isinstance(e, Call):
        return e.args if isinstance(e.op, Op) else (e.op, *e.args)
    if isinstance(e, Tuple):
        return e.fields
    if isinstance(e, TupleGetItem):
        return (e.tuple_value,)
    if isinstance(e, If):
        return (e.cond, e.true_branch, e.false_branch)
    if isinstance(e, Let):
        return (e.value, e.body)
    if isinstance(e, Function):
        return (e.body,)
    return ()


def _small(ty: TensorType) -> bool:
    """Whether the import computes a value of type ``ty`` (see :data:`MAX_FOLD_ELEMENTS`)."""
    size = ty.size
    return type(size) is int and size <= MAX_FOLD_ELEMENTS


def _plain_type(tp: TypeProto) -> TensorType | None:
    """The type of ``tp`` if it is a tensor of an irpass dtype with a static shape, else None
    (:meth:`GraphImporter._static_type` then says what is wrong, formatting where it is:
    this is the common case, without it, in half the time: ~1.4 us a 4-D type)."""
    tt = tp.tensor_type  # unset, it reads as elem_type 0: no dtype
    dtype = ONNX_TO_DTYPE.get(tt.elem_type)
    if dtype is None or not tt.HasField("shape"):
        return None
    # an unset or symbolic dim reads as 0: a real 0 takes the long way too
    dims = tuple([d.dim_value for d in tt.shape.dim])
    if dims and min(dims) <= 0:
        return None
    return TensorType(dims, dtype)


#: What a ``leaf`` of :func:`_compute` returns for a node whose value cannot be known.
_UNKNOWN = object()


def _compute(expr: Expr, leaf: Any, apply: Any) -> Any:
    """The value of ``expr`` computed bottom-up over its op calls, tuples and projections,
    with an explicit stack: ``leaf(e)`` is the value of a node known as it is (``None`` to
    compute it from its children, :data:`_UNKNOWN` to give up), ``apply(call, args)`` a call's
    value from its arguments' (``None``: unknown). ``None`` when any part is unknown."""
    values: dict[Expr, Any] = {}
    stack: list[tuple[Expr, bool]] = [(expr, False)]
    while stack:
        e, ready = stack.pop()
        if e in values:
            continue
        if not ready:
            known = leaf(e)
            if known is _UNKNOWN:
                return None
            if known is not None:
                values[e] = known
                continue
        t = type(e)
        if t is Call and type(e.op) is Op:
            children: Sequence[Expr] = e.args
        elif t is Tuple:
            children = e.fields
        elif t is TupleGetItem:
            children = (e.tuple_value,)
        else:
            return None
        if not ready:
            stack.append((e, True))
            stack.extend((c, False) for c in children if c not in values)
            continue
        if t is Call:
            out = apply(e, [values[a] for a in e.args])
            if out is None:
                return None
        elif t is Tuple:
            out = tuple([values[f] for f in e.fields])
        else:
            out = values[e.tuple_value][e.index]
        values[e] = out
    return values[expr]


def _agrees(declared: TensorType, ty: Type) -> bool:
    """Whether a type the model declares (static) fits the type irpass inferred: the same
    dtype and rank, and the same size wherever irpass's dim is static (a symbolic dim of
    irpass's stands for any size, the one the export was traced at included)."""
    if type(ty) is not TensorType:
        return False
    if declared == ty:
        return True
    return (declared.dtype == ty.dtype and len(declared.shape) == len(ty.shape)
            and all(type(b) is not int or a == b
                    for a, b in zip(declared.shape, ty.shape, strict=True)))


def _matches(value: Any, ty: Type | None) -> bool:
    """Whether a kernel's result ``value`` has type ``ty`` exactly (arrays, tuples of them)."""
    if type(ty) is TensorType:
        return (type(value) is np.ndarray and value.shape == ty.shape
                and value.dtype == NUMPY_DTYPES[ty.dtype])
    if type(ty) is TupleType:
        return (isinstance(value, tuple) and len(value) == len(ty.fields)
                and all(_matches(v, t) for v, t in zip(value, ty.fields, strict=True)))
    return False


def _is_sequence(tp: TypeProto) -> bool:
    """Whether ``tp`` is a sequence type (or an optional one)."""
    if tp.HasField("optional_type"):
        tp = tp.optional_type.elem_type
    return tp.HasField("sequence_type")


def _type_text(tp: TypeProto) -> str:
    """``tp`` as ONNX's printer writes it (``seq(float[N])``)."""
    import onnx.printer

    try:
        return onnx.printer.to_text(tp)
    except Exception:  # noqa: BLE001 - a malformed type prints as its kind
        return str(tp.WhichOneof("value"))

