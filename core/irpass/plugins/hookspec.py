"""The hook specifications of irpass: what a plugin may implement.

A plugin is a module (or any object) with functions named after these hooks
and marked with :data:`irpass.plugins.hookimpl`. Each hook below says when
irpass calls it, what it receives and what it must return. A plugin
implements any subset; argument names must match the specification, and a
hook may take fewer arguments than specified (pluggy passes only those it
names).

Two kinds of hooks:

- **Registration hooks** (``irpass_register_*``, ``irpass_pipeline_passes``)
  are called once per plugin, right after the plugin is loaded, and return
  what the plugin contributes. irpass records every contribution under the
  plugin's name (``irpass plugins`` lists them) and commits them all or none:
  a hook that raises (``SystemExit`` included), returns something of the wrong
  kind, or registers a name another plugin owns makes the whole plugin
  *failed* -- reported once as a :class:`irpass.plugins.PluginWarning` naming
  the plugin, its distribution and the cause, and skipped (an error with
  ``strict``). Names go to the plugin loaded first: irpass's own plugins load
  before any other, so a pack can never take a name from ``std``.
- **Instrument hooks** (``irpass_enter_pass_ctx`` ... ``irpass_run_after_pass``)
  are TVM's five instrument points written as functions. A plugin that
  implements any of them gets an instrument named after the plugin; when that
  instrument is switched on (``--instrument NAME``, ``[instruments.NAME]`` in
  the config file, or ``irpass.instrument.get_instrument(NAME)`` in code) it
  joins the :class:`~irpass.transform.PassContext` like a
  :class:`~irpass.instrument.PassInstrument`, with the same call order and
  exception rules. When it is not switched on, irpass never calls them.

Example -- a plugin module shipping a pass, an instrument and a pipeline slot::

    from irpass.plugins import hookimpl
    from irpass.transform import PipelineInsertion, function_pass

    @function_pass(opt_level=1)
    def FoldAddZero(func, mod, ctx): ...

    @hookimpl
    def irpass_register_passes():
        return [FoldAddZero]

    @hookimpl
    def irpass_pipeline_passes():
        return [PipelineInsertion("FoldAddZero", after="SimplifyExpr")]

    @hookimpl
    def irpass_run_after_pass(mod, info):
        print("ran", info.name)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from ..formats import FileFormat
    from ..ir.module import IRModule
    from ..transform.config import ConfigOption
    from ..transform.info import PassInfo
    from ..transform.pipeline import PipelineInsertion
    from ..transform.rewrites import RuleSet
    from .specs import OpSpec

PROJECT = "irpass"

#: Marks a function of this module as a hook specification.
hookspec = pluggy.HookspecMarker(PROJECT)


# -- registration hooks --------------------------------------------------------------------


@hookspec
def irpass_register_config_options() -> Sequence[ConfigOption]:
    """Declare the :class:`~irpass.transform.PassContext` config options of this plugin.

    Called once when the plugin is loaded, before its other registration
    hooks. Return a sequence of :class:`irpass.transform.ConfigOption`
    (``owner`` is filled in with the plugin's name; leave it ``""``). Keys
    should start with the plugin's name (``"example.max_depth"``): the config
    file's ``[config.example]`` section is checked against exactly these::

        @hookimpl
        def irpass_register_config_options():
            return [ConfigOption("example.max_depth", int, 8, "deepest chain rewritten")]
    """


@hookspec
def irpass_register_ops() -> Sequence[OpSpec]:
    """Add operators to the op registry.

    Called once when the plugin is loaded, before its passes are registered.
    Return a sequence of :class:`irpass.plugins.OpSpec`, whose fields are the
    arguments of :func:`irpass.ir.register_op`. An op name another plugin (or
    the core) already registered fails the plugin::

        @hookimpl
        def irpass_register_ops():
            return [OpSpec("example.clamp01", num_inputs=1, type_rel=same_type,
                           kernel=lambda args, attrs: np.clip(args[0], 0, 1),
                           pattern=OpPattern.ELEMWISE)]
    """


@hookspec
def irpass_register_formats() -> Sequence[FileFormat]:
    """Add model file formats: loaders and exporters keyed by file suffix.

    Called once when the plugin is loaded. Return a sequence of
    :class:`irpass.formats.FileFormat`; ``irpass.load(path)``,
    ``irpass.save(mod, path)`` and ``irpass optimize MODEL -o OUT`` pick the
    format by the file's suffix. A suffix another plugin already claims fails
    the plugin::

        @hookimpl
        def irpass_register_formats():
            return [FileFormat("onnx", (".onnx",), load=load_onnx, save=save_onnx)]
    """


@hookspec
def irpass_register_passes() -> Sequence[Any]:
    """Add passes to the pass registry.

    Called once when the plugin is loaded. Return a sequence of pass
    factories (a class decorated with ``module_pass``/``function_pass``, or a
    function returning a :class:`~irpass.transform.Pass`) or pass instances
    (a decorated function); each is registered under its name, as
    :func:`irpass.transform.register_pass` would. A name another plugin (or
    the core) owns fails the plugin, naming both owners::

        @hookimpl
        def irpass_register_passes():
            return [FoldAddZero, OpStatistics]

    What is not a pass factory fails the plugin too, naming it: a built-in
    function (``len``), a class that is not a Pass, a function annotated to
    return something else. A function with no ``-> Pass`` annotation that
    takes no arguments is called once, right here, and must return a Pass
    (``lambda: 42`` fails; if the call raises, the factory is kept: it may need
    a context). Annotate factories ``-> Pass`` to have them checked without
    being called. See :func:`irpass.transform.registry.check_pass_factory`.

    A pack whose passes import heavy modules (numpy, its own kernels) returns
    :class:`~irpass.transform.LazyPass` declarations instead: the name, opt level,
    requirements and a one-line description, and where the pass lives. Loading the
    plugin and ``irpass passes`` then import nothing of the pass; it is imported when
    first made (``get_pass``, a pipeline that runs it, ``irpass passes NAME``), which
    checks the declaration against the pass::

        @hookimpl
        def irpass_register_passes():
            return [LazyPass("my_pack.fold:FoldMore", opt_level=2, required=["InferType"],
                             description="Fold what FoldConstant leaves.")]
    """


@hookspec
def irpass_register_instruments() -> Mapping[str, Any]:
    """Add instruments that the config file and the CLI can switch on by name.

    Called once when the plugin is loaded. Return a mapping from instrument
    name (lowercase words joined by ``-``, e.g. ``"op-stats"``) to a factory:
    a :class:`~irpass.instrument.PassInstrument` subclass or any callable
    returning one. Its arguments come from the config file
    (``[instruments.op-stats]`` keys are keyword arguments) or the CLI
    (``--instrument op-stats:VALUE`` passes ``VALUE`` as the first argument)::

        @hookimpl
        def irpass_register_instruments():
            return {"op-stats": OpStatsInstrument}

    A factory may also be a :class:`~irpass.instrument.LazyInstrument`
    (``LazyInstrument("my_pack.stats:OpStatsInstrument", "count ops per pass")``):
    its module is imported when the instrument is first switched on, not when the
    plugin loads.
    """


@hookspec
def irpass_register_rewrites() -> Sequence[RuleSet]:
    """Add rewrite rule sets, which std's ``Canonicalize`` pass applies.

    Called once when the plugin is loaded, after its passes are registered.
    Return a sequence of :class:`irpass.transform.RuleSet`, each a named list
    of :class:`irpass.transform.Rule` (a name and a
    :class:`~irpass.ir.dataflow_pattern.DFPatternCallback`). A rule set's
    name is global, like a pass's: a name another plugin registered fails the
    plugin, naming the rule set and its rules. Rules are named
    ``<ruleset>.<rule>``; either name can be disabled in the config file
    (``[rewrites] disable = ["example.fold_add_zero"]``). ``irpass rewrites``
    lists them::

        @hookimpl
        def irpass_register_rewrites():
            return [RuleSet("example", [Rule("fold_add_zero", FoldAddZeroRule())])]

    :meth:`RuleSet.as_pass` makes a rule set a pass of its own, to return from
    ``irpass_register_passes`` as well. To keep loading the plugin cheap, return
    :class:`~irpass.transform.lazy_rules.LazyRuleSet` declarations instead (the
    rule set's ``"package.module:attr"``, name and ``pass_name``): the rules are
    imported when a pass first applies them or ``irpass rewrites`` lists them.
    """


@hookspec
def irpass_pipeline_passes() -> Sequence[PipelineInsertion]:
    """Contribute passes to the default pipeline at named extension points.

    Called once when the plugin is loaded. Return a sequence of
    :class:`irpass.transform.PipelineInsertion`, each naming a registered
    pass and where it goes: a phase of
    :data:`irpass.transform.PIPELINE_PHASES`, or before/after another pass of
    the pipeline, with a priority to order insertions at the same place.
    :func:`irpass.transform.default_pipeline` puts them together; the order
    never depends on the order plugins were loaded in::

        @hookimpl
        def irpass_pipeline_passes():
            return [PipelineInsertion("FoldAddZero", after="SimplifyExpr")]

    Once all plugins are loaded, each insertion's pass is made with its
    ``options``: an insertion whose pass nobody registered, or whose options
    the pass's factory refuses (a ``TypeError``, a ``ValueError``...), is left
    out with a :class:`~irpass.plugins.PluginWarning` naming the plugin, the
    pass, the options and the reason (an error with ``strict``); the plugin
    keeps its other contributions.
    """


# -- instrument hooks ----------------------------------------------------------------------
# Called only through the plugin's own instrument, and only while it is switched on.


@hookspec
def irpass_enter_pass_ctx() -> None:
    """The plugin's instrument: the :class:`~irpass.transform.PassContext` it is in was entered.

    Called like :meth:`PassInstrument.enter_pass_ctx`: when a context
    holding the plugin's instrument is entered, or the instrument is installed
    by ``override_instruments``. Return nothing. Raising cancels entering the
    context (instruments entered before it are exited)::

        @hookimpl
        def irpass_enter_pass_ctx():
            STATS.clear()
    """


@hookspec
def irpass_exit_pass_ctx() -> None:
    """The plugin's instrument: its context was left (or it was overridden away).

    Return nothing. Called even when a pass raised inside the context::

        @hookimpl
        def irpass_exit_pass_ctx():
            print(render(STATS))
    """


@hookspec
def irpass_should_run(mod: IRModule, info: PassInfo) -> bool:
    """The plugin's instrument: may the pass described by ``info`` run on ``mod``?

    Called before every pass that is enabled and not named in the context's
    ``required_pass``. Return ``False`` to skip the pass, ``True`` (or
    ``None``) to let it run::

        @hookimpl
        def irpass_should_run(mod, info):
            return info.name != "AlterOpLayout"
    """


@hookspec
def irpass_run_before_pass(mod: IRModule, info: PassInfo) -> None:
    """The plugin's instrument: the pass ``info`` is about to run on ``mod``.

    Return nothing; ``mod`` must not be modified::

        @hookimpl
        def irpass_run_before_pass(mod, info):
            START[info.name] = time.perf_counter()
    """


@hookspec
def irpass_run_after_pass(mod: IRModule, info: PassInfo) -> None:
    """The plugin's instrument: the pass ``info`` ran and returned ``mod``.

    Return nothing; not called when the pass raised::

        @hookimpl
        def irpass_run_after_pass(mod, info):
            print(info.name, time.perf_counter() - START[info.name])
    """
