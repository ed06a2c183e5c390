"""Import and export options: the ``onnx.*`` config keys and their resolution.

An option comes from, in order: the keyword given to ``load_onnx``/``from_onnx``/``save_onnx``;
the current :class:`~irpass.transform.PassContext`'s config, where the key was set explicitly
(``irpass optimize`` loads and saves inside the configured context, so ``[config.onnx]`` in a
config file works); the default below.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from irpass.transform import ConfigOption, PassContext

__all__ = ["ImportOptions", "CONFIG_OPTIONS", "WEIGHTS", "MATERIALIZE", "DIM_VALUES",
           "EXPORT_OPSET", "EXTERNAL_DATA", "parse_dim_values", "config_value"]

WEIGHTS = "onnx.weights"
MATERIALIZE = "onnx.materialize_constant_of_shape"
DIM_VALUES = "onnx.dim_values"
EXPORT_OPSET = "onnx.export_opset"
EXTERNAL_DATA = "onnx.external_data"

#: The options the plugin registers (``irpass config`` lists them with these descriptions).
CONFIG_OPTIONS: tuple[ConfigOption, ...] = (
    ConfigOption(WEIGHTS, str, "constants",
                 "'constants': initializers become constants (foldable); 'params': float "
                 "initializers become parameters of @main"),
    ConfigOption(MATERIALIZE, bool, True,
                 "ConstantOfShape with a known shape becomes a constant tensor (more folding, "
                 "bigger model) instead of a 'full' call"),
    ConfigOption(DIM_VALUES, str, "",
                 "values for symbolic/unknown input dims: 'N=1,seq=128'; '*=1' fixes all"),
    ConfigOption(EXPORT_OPSET, int, None,
                 "ONNX opset to export (default: the opset the model was imported with, else 17)"),
    ConfigOption(EXTERNAL_DATA, int, None,
                 "saving a model bigger than this many bytes puts its tensors of 1 KiB or more "
                 "in '<file>.data' beside it (default: over protobuf's 2 GiB limit; 0: always)"),
)
_DEFAULTS = {o.key: o.default for o in CONFIG_OPTIONS}
_WEIGHT_CHOICES = ("constants", "params")
_DIM_ITEM = re.compile(r"^\s*([^=,\s]+)\s*=\s*(\d+)\s*$")


def config_value(key: str, given: Any = None) -> Any:
    """``given`` if not ``None``, else the current context's explicit setting, else the default."""
    if given is not None:
        return given
    explicit = PassContext.current().config.explicit
    return explicit[key] if key in explicit else _DEFAULTS[key]


def parse_dim_values(text: str | Mapping[str, int]) -> dict[str, int]:
    """``"N=1,seq=128"`` (or a mapping) as ``{"N": 1, "seq": 128}``; ``ValueError`` naming the
    bad item."""
    if isinstance(text, Mapping):
        items = dict(text)
    else:
        items = {}
        for part in filter(None, (p.strip() for p in text.split(","))):
            m = _DIM_ITEM.match(part)
            if m is None:
                raise ValueError(
                    f"{DIM_VALUES}: {part!r} is not NAME=VALUE (e.g. 'N=1,seq=128', '*=1')"
                )
            items[m.group(1)] = int(m.group(2))
    for name, value in items.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{DIM_VALUES}: {name}={value!r} is not a positive int")
    return items


@dataclass(frozen=True)
class ImportOptions:
    """How :func:`irpass_onnx.from_onnx` turns a graph into a module (see the module doc)."""

    weights: str = "constants"
    materialize_constant_of_shape: bool = True
    dim_values: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.weights not in _WEIGHT_CHOICES:
            raise ValueError(
                f"{WEIGHTS}: expected one of {', '.join(_WEIGHT_CHOICES)}, got {self.weights!r}"
            )
        if not isinstance(self.materialize_constant_of_shape, bool):
            raise TypeError(f"{MATERIALIZE}: expected a bool, "
                            f"got {self.materialize_constant_of_shape!r}")

    @classmethod
    def resolve(
        cls,
        *,
        weights: str | None = None,
        materialize_constant_of_shape: bool | None = None,
        dim_values: str | Mapping[str, int] | None = None,
    ) -> ImportOptions:
        """Options from keywords, then the current PassContext's config, then the defaults."""
        return cls(
            weights=config_value(WEIGHTS, weights),
            materialize_constant_of_shape=config_value(MATERIALIZE,
                                                       materialize_constant_of_shape),
            dim_values=parse_dim_values(config_value(DIM_VALUES, dim_values)),
        )

    def dim_value(self, name: str) -> int | None:
        """The value fixing symbolic dim ``name`` ('' for an unnamed one), if the user gave one."""
        if name and name in self.dim_values:
            return self.dim_values[name]
        return self.dim_values.get("*")
