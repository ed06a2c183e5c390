"""Pass configuration options: the keys a :class:`PassContext` ``config`` may hold.

Every key must be registered, with its type and default, before a context
can use it, so a misspelt option is an error when the context is created
rather than a setting silently ignored by the pass that should read it::

    register_config_option("fold.max_elements", int, None, "largest constant FoldConstant makes")
    with PassContext(config={"fold.max_elements": 1024}) as ctx:
        ...  # a pass reads ctx.config.get("fold.max_elements")
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from .._lazy_plugins import ensure_plugins

__all__ = ["ConfigOption", "PassConfig", "register_config_option", "list_config_options"]


@dataclass(frozen=True)
class ConfigOption:
    """A registered configuration key: its value type, default and documentation.

    ``value_type`` is a type or a tuple of types; ``default`` may be ``None``
    (meaning "not set") even when ``None`` is not an accepted value. ``owner``
    names who registered it (the core or a plugin); a plugin returning options
    from ``irpass_register_config_options`` leaves it empty and the plugin
    manager fills in the plugin's name.
    """

    key: str
    value_type: type | tuple[type, ...]
    default: Any = None
    description: str = ""
    owner: str = ""

    def check(self, value: Any) -> Any:
        """``value`` converted to this option's type, or a ``TypeError`` naming the key."""
        types = self.value_type if isinstance(self.value_type, tuple) else (self.value_type,)
        # bool is an int subclass, but True is not a sensible "max_elements"
        if isinstance(value, bool) and bool not in types:
            raise TypeError(self._type_message(value))
        if isinstance(value, types):
            return value
        if float in types and isinstance(value, int):
            return float(value)
        raise TypeError(self._type_message(value))

    def _type_message(self, value: Any) -> str:
        return (
            f"PassContext config {self.key!r} expects {_type_text(self.value_type)}, "
            f"got {type(value).__name__} {value!r}"
        )


_OPTIONS: dict[str, ConfigOption] = {}


def unregister_config_option(key: str) -> None:
    """Forget option ``key`` (the plugin manager's undo when a plugin fails half-way)."""
    _OPTIONS.pop(key, None)


def register_config_option(
    key: str,
    value_type: type | tuple[type, ...],
    default: Any = None,
    description: str = "",
    *,
    owner: str = "irpass",
) -> ConfigOption:
    """Declare the configuration key ``key`` (e.g. ``"relay.FoldConstant.max_elements"``).

    Registering the same key again with the same type and default is a no-op;
    a different declaration is a ``ValueError`` naming both owners.
    """
    if not isinstance(key, str) or not key:
        raise TypeError(f"register_config_option: key must be a non-empty str, got {key!r}")
    types = value_type if isinstance(value_type, tuple) else (value_type,)
    if not types or not all(isinstance(t, type) for t in types):
        raise TypeError(
            f"register_config_option({key!r}): value_type must be a type or a tuple of types, "
            f"got {value_type!r}"
        )
    option = ConfigOption(key, value_type, default, description, owner)
    if default is not None:
        option.check(default)
    old = _OPTIONS.get(key)
    if old is not None:
        if (old.value_type, old.default) == (value_type, default):
            return old
        raise ValueError(
            f"config option {key!r} is already registered by {old.owner!r} "
            f"({_type_text(old.value_type)}, default {old.default!r}); {owner!r} cannot "
            f"register it again as {_type_text(value_type)}, default {default!r}"
        )
    _OPTIONS[key] = option
    return option


def list_config_options() -> dict[str, ConfigOption]:
    """Every registered option by key, sorted by key."""
    return {k: _OPTIONS[k] for k in sorted(_OPTIONS)}


class PassConfig(Mapping):
    """The read-only ``config`` of a :class:`PassContext`.

    Holds the values given to the context, validated against the registered
    options. A registered key that was not given reads as its registered
    default, so ``ctx.config.get(key, fallback)`` returns the value given, else
    the registered default, else (no default, or an unregistered key) ``fallback``.
    """

    __slots__ = ("_values",)

    def __init__(self, values: Mapping[str, Any] | None = None) -> None:
        checked: dict[str, Any] = {}
        if values is not None:
            if not isinstance(values, Mapping):
                raise TypeError(
                    f"PassContext(config=...) must be a mapping of option keys to values, "
                    f"got {type(values).__name__}"
                )
            for key, value in values.items():
                option = _OPTIONS.get(key)
                if option is None:
                    option = _plugin_option(key)
                if option is None:
                    raise ValueError(_unknown_key_message(key))
                checked[key] = option.check(value)
        self._values = checked

    def __getitem__(self, key: str) -> Any:
        try:
            return self._values[key]
        except KeyError:
            option = _OPTIONS.get(key)
            if option is None or option.default is None:  # a None default means "not set"
                raise KeyError(key) from None
            return option.default

    def _keys(self) -> set[str]:
        return set(self._values) | {k for k, o in _OPTIONS.items() if o.default is not None}

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._keys()))

    def __len__(self) -> int:
        return len(self._keys())

    def __contains__(self, key: object) -> bool:
        if key in self._values:
            return True
        option = _OPTIONS.get(key)  # type: ignore[arg-type]
        return option is not None and option.default is not None

    @property
    def explicit(self) -> Mapping[str, Any]:
        """Only the values given to the context (not the registered defaults)."""
        return dict(self._values)

    def __repr__(self) -> str:
        return f"PassConfig({self._values!r})"


def _plugin_option(key: object) -> ConfigOption | None:
    """The option ``key`` after loading the plugins (they declare options when loaded)."""
    ensure_plugins()
    return _OPTIONS.get(key)  # type: ignore[arg-type]


def _unknown_key_message(key: object) -> str:
    text = f"PassContext config: unknown option {key!r}"
    if isinstance(key, str):
        close = difflib.get_close_matches(key, list(_OPTIONS), n=3)
        if close:
            return text + f"; did you mean {', '.join(map(repr, close))}?"
    known = ", ".join(sorted(_OPTIONS)) or "none"
    return text + f" (registered options: {known})"


def _type_text(value_type: type | tuple[type, ...]) -> str:
    types = value_type if isinstance(value_type, tuple) else (value_type,)
    return " or ".join(t.__name__ for t in types)
