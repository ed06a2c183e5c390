"""NodeContext: what a converter sees of the node it converts and of the graph around it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NoReturn

import numpy as np
from irpass.ir import Call, Constant, Expr, TensorType, Type
from irpass.op.shape_values import as_dims
from onnx import AttributeProto, NodeProto, TensorProto, numpy_helper

from ..dtypes import dtype_of
from ..errors import OnnxImportError
from ..options import ImportOptions
from .dynamic import RuntimeOperand, is_region_value

if TYPE_CHECKING:
    from .graph import GraphImporter

__all__ = ["NodeContext", "decode_attribute", "read_tensor"]

_MISSING: Any = object()


def decode_attribute(attr: AttributeProto) -> Any:
    """The Python value of an ONNX attribute: int, float, str, list[int], list[float],
    list[str], np.ndarray (TENSOR) or list[np.ndarray]; graphs are returned as protos."""
    t = attr.type
    if t == AttributeProto.INT:
        return int(attr.i)
    if t == AttributeProto.FLOAT:
        return float(attr.f)
    if t == AttributeProto.STRING:
        return attr.s.decode("utf-8")
    if t == AttributeProto.INTS:
        return [int(v) for v in attr.ints]
    if t == AttributeProto.FLOATS:
        return [float(v) for v in attr.floats]
    if t == AttributeProto.STRINGS:
        return [s.decode("utf-8") for s in attr.strings]
    if t == AttributeProto.TENSOR:
        return _tensor_value(attr.name, attr.t)
    if t == AttributeProto.TENSORS:
        return [_tensor_value(attr.name, v) for v in attr.tensors]
    if t == AttributeProto.GRAPH:
        return attr.g
    if t == AttributeProto.GRAPHS:
        return list(attr.graphs)
    raise ValueError(f"attribute {attr.name!r} has an unsupported type "
                     f"{AttributeProto.AttributeType.Name(t)}")


#: The element types whose ``raw_data`` is the array in little-endian order, as numpy reads it.
_RAW_DTYPES: dict[int, np.dtype] = {
    TensorProto.FLOAT: np.dtype("<f4"), TensorProto.DOUBLE: np.dtype("<f8"),
    TensorProto.FLOAT16: np.dtype("<f2"), TensorProto.BOOL: np.dtype(np.bool_),
    TensorProto.INT8: np.dtype("i1"), TensorProto.INT16: np.dtype("<i2"),
    TensorProto.INT32: np.dtype("<i4"), TensorProto.INT64: np.dtype("<i8"),
    TensorProto.UINT8: np.dtype("u1"), TensorProto.UINT16: np.dtype("<u2"),
    TensorProto.UINT32: np.dtype("<u4"), TensorProto.UINT64: np.dtype("<u8"),
}


def read_tensor(tensor: TensorProto) -> np.ndarray:
    """``onnx.numpy_helper.to_array(tensor)`` (read-only); the common case, a numpy type in
    ``raw_data``, read directly (~3 us less a tensor, and a model has one per weight and
    Constant node). Raises what ``to_array`` raises, or ``ValueError`` for data that does not
    fit the dims."""
    dtype = _RAW_DTYPES.get(tensor.data_type)
    if (dtype is not None and tensor.HasField("raw_data")
            and tensor.data_location != TensorProto.EXTERNAL and not tensor.HasField("segment")):
        return np.frombuffer(tensor.raw_data, dtype=dtype).reshape(tuple(tensor.dims))
    return numpy_helper.to_array(tensor)


def _tensor_value(name: str, tensor: TensorProto) -> np.ndarray:
    """The array of a tensor attribute; ``ValueError`` for an element type irpass lacks or
    data that does not fit the dims."""
    if tensor.data_type not in _RAW_DTYPES:
        dtype_of(tensor.data_type, f"attribute {name!r}")  # a ValueError naming it
    try:
        return read_tensor(tensor)
    except Exception as err:  # noqa: BLE001 - onnx raises many kinds for malformed data
        raise ValueError(f"attribute {name!r}: cannot read its tensor: {err}") from err


class NodeContext:
    """One ONNX node being converted: its inputs as irpass expressions (with types and
    import-time values), its attributes, the opset and the import options."""

    # The node's input and output names are read once into tuples and its attributes into a
    # dict on first use: protobuf field access costs ~0.1 us a time, and converters ask for
    # inputs several times each.
    __slots__ = ("_importer", "node", "index", "opset", "options", "_attrs", "_inputs",
                 "_outputs")

    def __init__(self, importer: GraphImporter, index: int, node: NodeProto,
                 inputs: tuple[str, ...] | None = None,
                 outputs: tuple[str, ...] | None = None) -> None:
        self._importer = importer
        #: The ONNX node (never modified).
        self.node: NodeProto = node
        #: Its position in the graph's node list.
        self.index: int = index
        #: The model's opset of the default domain.
        self.opset: int = importer.opset
        #: The resolved import options.
        self.options: ImportOptions = importer.options
        self._attrs: dict[str, AttributeProto] | None = None
        #: ``inputs``/``outputs``: the node's input and output names when read already.
        self._inputs: tuple[str, ...] = tuple(node.input) if inputs is None else inputs
        self._outputs: tuple[str, ...] = tuple(node.output) if outputs is None else outputs

    @property
    def importer(self) -> GraphImporter:
        """The importer converting this node: control-flow converters import the node's
        subgraphs through it (:meth:`GraphImporter.import_subgraph`)."""
        return self._importer

    # -- naming and errors --------------------------------------------------------------
    @property
    def where(self) -> str:
        """The node as messages name it: ``node 12 'conv1' (Conv)``."""
        return f"node {self.index} {self.node.name!r} ({self.node.op_type})"

    def fail(self, msg: str) -> NoReturn:
        """Raise :class:`OnnxImportError` naming the model and this node."""
        raise OnnxImportError(f"{self._importer.source}: {self.where}: {msg}")

    # -- inputs -------------------------------------------------------------------------
    @property
    def num_inputs(self) -> int:
        """The number of input slots of the node (absent optional inputs included)."""
        return len(self._inputs)

    @property
    def num_outputs(self) -> int:
        """The number of output slots of the node."""
        return len(self._outputs)

    def has_input(self, i: int) -> bool:
        """Whether input ``i`` is given (not past the end, not the empty name)."""
        return i < len(self._inputs) and self._inputs[i] != ""

    def input(self, i: int, optional: bool = False) -> Expr | None:
        """Input ``i`` as an expression; ``None`` if it is absent and ``optional``, else an
        error naming the node."""
        if not self.has_input(i):
            if optional:
                return None
            self.fail(f"input {i} is required but missing")
        value = self._importer.value(self._inputs[i])
        if type(value) is Call and is_region_value(value):
            # computed without a static type by a region of nodes (frontend/dynamic.py): the
            # importer makes this node part of the region
            raise RuntimeOperand(i, "a value without a static shape")
        return value

    def inputs(self) -> list[Expr | None]:
        """Every input slot as an expression (``None`` for an absent optional input)."""
        return [self.input(i, optional=True) for i in range(len(self._inputs))]

    def type_of(self, i: int) -> TensorType:
        """The tensor type of input ``i`` (static shape, irpass dtype)."""
        ty = self.type_of_expr(self.input(i))
        if not isinstance(ty, TensorType):
            self.fail(f"input {i} is not a tensor (type {ty})")
        return ty

    def type_of_expr(self, expr: Expr) -> Type:
        """The type of ``expr``, an input or an expression built from inputs by the converter
        (inferred with the ops' type relations; a type error names this node)."""
        return self._importer.type_of_expr(expr, self)

    def known(self, i: int) -> np.ndarray | None:
        """The import-time value of input ``i`` if it is known (a constant, or folded from
        constants at import), else ``None`` (also for an absent input). Read-only."""
        if not self.has_input(i):
            return None
        e = self._importer.value(self._inputs[i])
        return e.data if type(e) is Constant else None

    def const_input(self, i: int, name: str, optional: bool = False) -> np.ndarray | None:
        """The import-time value of input ``i`` (called ``name`` in messages); ``None`` if
        absent and ``optional``. When it is a run-time value, the node is imported as a call
        that converts it again at run time, with the value then known (see
        :mod:`.dynamic`): converters read every shape-determining operand through this."""
        if not self.has_input(i):
            if optional:
                return None
            self.fail(f"input {i} ({name}) is required but missing")
        value = self.known(i)
        if value is None:
            # a run-time value: the importer imports the whole node as an `onnx.node` call,
            # converted again when its inputs' values are known (frontend/dynamic.py)
            raise RuntimeOperand(i, name)
        return value

    def dims_input(self, i: int, name: str, optional: bool = False) -> list[Any] | None:
        """Like :meth:`const_input`, as a flat list of dims (ints, and the symbolic dims of a
        shape value: ``Shape`` of a tensor with symbolic dims, or what is computed from it,
        see :attr:`GraphImporter.shape_values`), for the operands that are shapes or sizes
        (Reshape's shape, Expand's, Range's limit, Slice's bounds, ...)."""
        if not self.has_input(i):
            if optional:
                return None
            self.fail(f"input {i} ({name}) is required but missing")
        e = self._importer.value(self._inputs[i])
        value = self._importer.shape_values.get(e)
        if value is not None:
            return as_dims(value)
        arr = self.const_input(i, name)
        if np.asarray(arr).dtype.kind not in "iu":
            self.fail(f"{name} must be integers, got dtype {np.asarray(arr).dtype.name}")
        return [int(v) for v in np.asarray(arr).reshape(-1)]

    # -- outputs ------------------------------------------------------------------------
    def output_used(self, j: int) -> bool:
        """Whether output ``j`` is named and read by a later node or is a graph output."""
        if j >= len(self._outputs) or self._outputs[j] == "":
            return False
        return self._outputs[j] in self._importer.used_names

    # -- attributes ---------------------------------------------------------------------
    def _attr_protos(self) -> dict[str, AttributeProto]:
        if self._attrs is None:
            self._attrs = {a.name: a for a in self.node.attribute}
        return self._attrs

    def has_attr(self, name: str) -> bool:
        """Whether the node sets attribute ``name``."""
        return name in self._attr_protos()

    def attr(self, name: str, default: Any = _MISSING) -> Any:
        """Attribute ``name`` as a Python value (see :func:`decode_attribute`); ``default`` if
        the node does not set it; an error naming the node and attribute if there is no
        default."""
        a = self._attr_protos().get(name)
        if a is None:
            if default is _MISSING:
                self.fail(f"attribute {name!r} is required but missing")
            return default
        try:
            return decode_attribute(a)
        except ValueError as err:
            self.fail(str(err))
