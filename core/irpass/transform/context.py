"""PassContext: the settings and instruments passes run under.

Contexts form a per-thread stack: ``with PassContext(...)`` pushes one,
leaving the block pops it, and :meth:`PassContext.current` is the innermost
(a per-thread default context outside any ``with``). Two threads running
pipelines never see each other's contexts.

Instrument rules (those of TVM's ``PassContext``), for instruments
``[A, B, C]``:

- entering calls ``enter_pass_ctx`` of A, B, C in order. If C raises, the
  instrument list is cleared, the instruments already entered get
  ``exit_pass_ctx`` in reverse order (B, then A: last entered, first
  exited), the context is not pushed and the error propagates; had B raised,
  C would never have been called;
- leaving pops the context, then calls ``exit_pass_ctx`` of A, B, C. If B
  raises, the list is cleared, C is not called and the error propagates
  (the context is popped all the same);
- before a pass: ``should_run`` of every instrument (all are asked, even
  after one said ``False``; skipped for passes named in ``required_pass``),
  then, if none said ``False``, ``run_before_pass`` of each in order;
  after it: ``run_after_pass`` of each. An exception from any of them, or
  from the pass, propagates at once; the ``with`` statement still leaves the
  context (calling every ``exit_pass_ctx``);
- :meth:`override_instruments` exits the old instruments and enters the new
  ones, under the same rules.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ..instrument.base import PassInstrument
from .config import PassConfig, register_config_option
from .diagnostics import DiagnosticContext
from .info import PassInfo, pass_names

__all__ = ["PassContext", "RewriteCounter"]

#: ``counter(site) -> bool``: whether the running pass may make its next rewrite
#: (what :meth:`PassContext.rewrite_counter` returns).
RewriteCounter = Callable[[str], bool]

register_config_option(
    "testing.immutable_module",
    bool,
    False,
    "check after every pass that its input module is unchanged (structural hash and "
    "function identity); a pass that changed it fails with PassError",
)

#: The option that caps the rewrites of passes (:meth:`PassContext.debug_counter`).
DEBUG_COUNTER = "debug_counter"

register_config_option(
    DEBUG_COUNTER,
    dict,
    None,
    "{pass name: N}: the pass makes only its first N rewrites (the ones it asks "
    "ctx.debug_counter about); -1 counts them without a cap (irpass bisect uses both)",
)

#: The option that checks the module after every pass (:class:`irpass.instrument.VerifyEach`).
VERIFY_EACH = "verify_each"

register_config_option(
    VERIFY_EACH,
    bool,
    False,
    "check well-formedness and types after every pass and blame the pass that broke them "
    "(irpass optimize turns it on unless --no-verify-each)",
)

#: Constants of more elements print without their data (the printing instruments, DumpIR,
#: PrintIR). Declared here with the core's other options rather than where it is read:
#: those modules are imported on first use, and a context must know the key before that.
ELIDE_CONSTANTS = "print.elide_constants"

register_config_option(
    ELIDE_CONSTANTS,
    int,
    16,
    "the printing instruments, DumpIR and PrintIR print constants of more elements "
    "without their data; -1 prints every value",
)

#: The rule sets and rules (``<ruleset>.<rule>``) rule-set passes leave out: the config
#: file's ``[rewrites] disable`` (:mod:`irpass.transform.rewrites`).
REWRITES_DISABLE = "rewrites.disable"

register_config_option(
    REWRITES_DISABLE,
    (list, tuple),
    None,
    "rule sets and rules (<ruleset>.<rule>) Canonicalize and rule-set passes leave out",
)

#: The bound on the rewrites of every rule-set pass: rounds of the rounds walk, rewrites
#: at one node of the greedy walk (Canonicalize's own ``std.Canonicalize.max_rounds`` wins
#: for it when set).
REWRITES_MAX_ROUNDS = "rewrites.max_rounds"

register_config_option(
    REWRITES_MAX_ROUNDS,
    int,
    None,
    "rule-set passes (SimplifyExpr, Canonicalize, RuleSet.as_pass): rewrite rounds per "
    "function (greedy walk: rewrites at one node) before the rules still firing are left "
    "out (default 100)",
)


class _ThreadState(threading.local):
    def __init__(self) -> None:
        self.stack: list[PassContext] = []
        self.default: PassContext | None = None


_STATE = _ThreadState()


class PassContext:
    """Settings for running passes: optimization level, passes forced on or
    off, configuration options, instruments and collected diagnostics.

    - ``opt_level``: a :class:`Sequential` runs a pass when
      ``pass.info.opt_level <= opt_level``;
    - ``required_pass``: names run whatever their level;
    - ``disabled_pass``: names never run (this wins over ``required_pass``);
    - ``instruments``: :class:`irpass.instrument.PassInstrument` objects;
    - ``config``: values of registered options (see
      :func:`irpass.transform.register_config_option`), read-only as
      ``ctx.config``; ``verify_each=True`` adds a
      :class:`irpass.instrument.VerifyEach` to the instruments;
    - ``diag``: where passes report warnings and errors
      (:class:`irpass.transform.DiagnosticContext`).
    """

    def __init__(
        self,
        opt_level: int = 2,
        required_pass: Iterable[str] | None = None,
        disabled_pass: Iterable[str] | None = None,
        instruments: Sequence[PassInstrument] | None = None,
        config: Mapping[str, Any] | None = None,
    ) -> None:
        if isinstance(opt_level, bool) or not isinstance(opt_level, int):
            raise TypeError(f"PassContext: opt_level must be an int, got {opt_level!r}")
        self.opt_level = opt_level
        self.required_pass = pass_names("PassContext", "required_pass", required_pass)
        self.disabled_pass = pass_names("PassContext", "disabled_pass", disabled_pass)
        self._required = frozenset(self.required_pass)
        self._disabled = frozenset(self.disabled_pass)
        instruments = _instrument_list(instruments)
        self.config = PassConfig(config)
        if self.config[VERIFY_EACH] and not any(pi.name == "verify-each" for pi in instruments):
            from ..instrument.verify import VerifyEach  # it imports the transform package

            # last: the printing instruments show a broken module before it is blamed
            instruments += (VerifyEach(),)
        self._set_instruments(instruments)
        self._check_immutable = bool(self.config["testing.immutable_module"])
        self.diag = DiagnosticContext()
        # [label, index, last pass run] per Sequential (or requirement list) being run
        self._frames: list[list[Any]] = []
        self._debug_limits: dict[str, int] | None = _debug_limits(self.config.get(DEBUG_COUNTER))
        self._debug_counts: dict[str, int] = {}
        self._debug_sites: dict[str, str] = {}

    # -- scopes -----------------------------------------------------------------
    @staticmethod
    def current() -> PassContext:
        """The innermost active context of this thread (its default one outside any scope)."""
        state = _STATE
        if state.stack:
            return state.stack[-1]
        if state.default is None:
            state.default = PassContext()
        return state.default

    def __enter__(self) -> PassContext:
        self._enter_instruments()
        _STATE.stack.append(self)
        return self

    def __exit__(self, *exc_info: object) -> None:
        stack = _STATE.stack
        if not stack or stack[-1] is not self:
            raise RuntimeError("PassContext scopes must be left in the order they were entered")
        stack.pop()
        self._exit_instruments()

    # -- instruments ------------------------------------------------------------
    @property
    def instruments(self) -> tuple[PassInstrument, ...]:
        """The active instruments, in call order."""
        return self._instruments

    def override_instruments(self, instruments: Sequence[PassInstrument] | None) -> None:
        """Replace the instruments: exit the current ones, then enter ``instruments``."""
        new = _instrument_list(instruments)
        self._exit_instruments()
        self._set_instruments(new)
        self._enter_instruments()

    def _set_instruments(self, instruments: tuple[PassInstrument, ...]) -> None:
        """Install ``instruments`` and, per point, the bound methods of those that
        override it: a point an instrument leaves as PassInstrument's no-op is not
        called (no visible difference: the no-ops return None, should_run True).
        W4 with PassTimingInstrument, which overrides two of the three points run
        around a pass: 1.35 us per pass execution calling all three, below 1 us
        with this and the instrument's records."""
        self._instruments = instruments
        self._should_run = _overriding(instruments, "should_run")
        self._run_before = tuple(m for _, m in _overriding(instruments, "run_before_pass"))
        self._run_after = tuple(m for _, m in _overriding(instruments, "run_after_pass"))

    def _enter_instruments(self) -> None:
        entered: list[PassInstrument] = []
        try:
            for pi in self._instruments:
                pi.enter_pass_ctx()
                entered.append(pi)
        except BaseException:
            self._set_instruments(())
            for pi in reversed(entered):
                pi.exit_pass_ctx()
            raise

    def _exit_instruments(self) -> None:
        try:
            for pi in self._instruments:
                pi.exit_pass_ctx()
        except BaseException:
            self._set_instruments(())
            raise

    def _before_pass(self, mod: Any, info: PassInfo) -> bool:
        try:
            should_run = True
            if self._should_run and info.name not in self._required:
                for pi, ask in self._should_run:
                    answer = ask(mod, info)
                    if answer is not True and answer is not False:
                        raise TypeError(
                            f"instrument {pi.name!r}: should_run must return True or False, "
                            f"got {answer!r} (for pass {info.name!r})"
                        )
                    should_run = should_run and answer
            if should_run:
                for before in self._run_before:
                    before(mod, info)
            return should_run
        except Exception as exc:
            _mark_instrument_error(exc)
            raise

    def _after_pass(self, mod: Any, info: PassInfo) -> None:
        try:
            for after in self._run_after:
                after(mod, info)
        except Exception as exc:
            _mark_instrument_error(exc)
            raise

    # -- debug counters ---------------------------------------------------------
    def debug_counter(self, site: str | None = None) -> bool:
        """Whether the running pass may make its next rewrite (LLVM's
        ``DebugCounter::shouldExecute``, MLIR's ``-mlir-debug-counter``).

        A pass that rewrites asks before each rewrite and skips it on ``False``: with the
        config option ``debug_counter = {"MyPass": N}`` it then makes only its first
        ``N`` rewrites, which is how ``irpass bisect`` finds the one rewrite that breaks
        a model. ``site`` names the rewrite for reports (a rule's name); by default the
        caller's ``file:line``. Free when no counter is set: one attribute test.
        """
        limits = self._debug_limits
        if limits is None:
            return True
        name = self.diag.pass_name
        limit = limits.get(name) if name is not None else None
        if limit is None:
            return True
        n = self._debug_counts[name] = self._debug_counts.get(name, 0) + 1
        if n == limit:  # the last rewrite let through: what bisect reports
            self._debug_sites[name] = site if site is not None else _caller(2)
        return limit < 0 or n <= limit

    def rewrite_counter(self) -> RewriteCounter | None:
        """:meth:`debug_counter` when the ``debug_counter`` option names the running pass,
        else ``None``. A pass takes it once and, before each rewrite, skips the rewrite
        when ``counter is not None and not counter(site)``: without a counter on the pass
        that costs one test of a local, and the site (often a formatted string such as
        ``"fold add"``) is never built."""
        limits = self._debug_limits
        if limits is None or self.diag.pass_name not in limits:
            return None
        return self.debug_counter

    @property
    def debug_counts(self) -> dict[str, int]:
        """Rewrites asked about so far, by pass, for the passes a ``debug_counter``
        option names (with a cap or -1)."""
        return dict(self._debug_counts)

    def debug_site(self, pass_name: str) -> str | None:
        """The ``site`` of the last rewrite ``pass_name``'s counter let through."""
        return self._debug_sites.get(pass_name)

    # -- enabling -----------------------------------------------------------------
    def pass_enabled(self, info: PassInfo) -> bool:
        """Whether a :class:`Sequential` runs a pass described by ``info`` here:
        disabled wins over required, required over ``opt_level``."""
        if info.name in self._disabled:
            return False
        return info.name in self._required or info.opt_level <= self.opt_level

    def pass_position(self) -> str:
        """Where the running pass sits, outermost first: ``"opt[2] > inner[0]"``
        (empty outside any :class:`Sequential`)."""
        return " > ".join(self._position_parts())

    def _position_parts(self) -> list[str]:
        return [f"{label}[{index}]" for label, index, _ in self._frames]

    def __repr__(self) -> str:
        parts = [f"opt_level={self.opt_level}"]
        if self.required_pass:
            parts.append(f"required_pass={list(self.required_pass)}")
        if self.disabled_pass:
            parts.append(f"disabled_pass={list(self.disabled_pass)}")
        if self._instruments:
            parts.append(f"instruments={list(self._instruments)}")
        if self.config.explicit:
            parts.append(f"config={dict(self.config.explicit)}")
        return f"PassContext({', '.join(parts)})"


def _debug_limits(value: Any) -> dict[str, int] | None:
    if not value:
        return None
    for name, limit in value.items():
        if not isinstance(name, str) or isinstance(limit, bool) or not isinstance(limit, int):
            raise TypeError(
                f"config option {DEBUG_COUNTER!r}: expected {{pass name: int}}, "
                f"got {name!r}: {limit!r}"
            )
    return dict(value)


def _caller(depth: int) -> str:
    """``file:line (function)`` of the frame ``depth`` levels up."""
    import sys

    frame = sys._getframe(depth)
    code = frame.f_code
    return f"{code.co_filename}:{frame.f_lineno} ({code.co_name})"


# Set on exceptions raised by instruments around a pass, so that the passes
# running around *that* pass (an enclosing Sequential) let them through unwrapped.
INSTRUMENT_ERROR = "_irpass_instrument_error"


def _mark_instrument_error(exc: Exception) -> None:
    try:
        setattr(exc, INSTRUMENT_ERROR, True)
    except AttributeError:  # exceptions with __slots__; they get wrapped, still named
        pass


def _overriding(
    instruments: tuple[PassInstrument, ...], point: str
) -> tuple[tuple[PassInstrument, Callable], ...]:
    """``(instrument, its bound point method)`` for the ``instruments`` that do not
    inherit PassInstrument's no-op for ``point``, in order."""
    default = getattr(PassInstrument, point)
    pairs = ((pi, getattr(pi, point)) for pi in instruments)
    return tuple((pi, m) for pi, m in pairs if getattr(m, "__func__", None) is not default)


def _instrument_list(instruments: Sequence[PassInstrument] | None) -> tuple[PassInstrument, ...]:
    if instruments is None:
        return ()
    if isinstance(instruments, PassInstrument):
        raise TypeError("PassContext: instruments must be a list, got a single instrument")
    out = tuple(instruments)
    for i, pi in enumerate(out):
        if not isinstance(pi, PassInstrument):
            hint = ""
            if isinstance(pi, type):
                hint = " (a class: pass an instance)"
            raise TypeError(
                f"PassContext: instruments[{i}] is not a PassInstrument: {pi!r}{hint}; "
                "subclass irpass.instrument.PassInstrument or decorate the class with "
                "@irpass.instrument.pass_instrument"
            )
    return out
