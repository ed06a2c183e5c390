"""PassInfo: the metadata every pass carries."""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["PassInfo", "pass_names"]


class PassInfo:
    """A pass's name, optimization level and the passes it requires.

    ``opt_level`` is the lowest :attr:`PassContext.opt_level` at which a
    :class:`Sequential` runs the pass; ``required`` names registered passes
    that are run before it (see :func:`irpass.transform.get_pass`).
    PassInfo is immutable and compares by value.
    """

    __slots__ = ("opt_level", "name", "required")

    opt_level: int
    name: str
    required: tuple[str, ...]

    def __init__(self, opt_level: int, name: str, required: Iterable[str] | str = ()) -> None:
        if isinstance(opt_level, bool) or not isinstance(opt_level, int):
            raise TypeError(f"PassInfo: opt_level must be an int, got {opt_level!r}")
        if not isinstance(name, str) or not name:
            raise TypeError(f"PassInfo: name must be a non-empty str, got {name!r}")
        if required is None:
            required = ()
        elif isinstance(required, str):
            required = (required,)
        required = tuple(required)
        for r in required:
            if not isinstance(r, str) or not r:
                raise TypeError(
                    f"PassInfo {name!r}: required must hold pass names (str), got {r!r}"
                )
        object.__setattr__(self, "opt_level", opt_level)
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "required", required)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("PassInfo is immutable")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PassInfo):
            return NotImplemented
        return (self.opt_level, self.name, self.required) == (
            other.opt_level,
            other.name,
            other.required,
        )

    def __hash__(self) -> int:
        return hash((self.opt_level, self.name, self.required))

    def __repr__(self) -> str:
        req = f", required={list(self.required)!r}" if self.required else ""
        return f"PassInfo(opt_level={self.opt_level}, name={self.name!r}{req})"

    __str__ = __repr__


def pass_names(owner: str, field: str, names: Iterable[str] | None) -> tuple[str, ...]:
    """``names`` as a tuple of pass names, or a ``TypeError`` naming ``owner`` and ``field``.

    A bare ``str`` is refused: it is iterable, and would silently mean its letters.
    """
    if names is None:
        return ()
    if isinstance(names, str):
        raise TypeError(
            f"{owner}: {field} must be a list of pass names, got the str {names!r} "
            f"(write [{names!r}])"
        )
    out = tuple(names)
    for n in out:
        if not isinstance(n, str):
            raise TypeError(f"{owner}: {field} must hold pass names (str), got {n!r}")
    return out
