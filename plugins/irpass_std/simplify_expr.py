"""SimplifyExpr: algebraic and shape simplifications, to a fixed point in one walk.

The rules (each fires only when the result has exactly the type of the call it
replaces, so a rewrite never changes a shape or a dtype):

* identities of arithmetic: ``x + 0``, ``0 + x``, ``x - 0``, ``x * 1``,
  ``1 * x``, ``x / 1`` become ``x``, and ``0 - x`` becomes ``negative(x)``. The
  "0" and "1" are constants whose elements all hold that value, of any shape
  that broadcasts into ``x``'s, or the creation ops ``zeros``/``ones`` (also
  ``full`` of a constant and ``zeros_like``/``ones_like``). A constant that
  would broadcast ``x`` to a bigger shape keeps its call;
* ``x * 0`` and ``0 * x`` become zeros of the result type, only under the
  config option ``std.SimplifyExpr.finite_math`` (it is wrong when ``x`` holds
  an inf or a nan) and only when ``x`` has no side effects;
* ``negative(negative(x))`` becomes ``x``;
* the reshape-like ops (``reshape``, ``reverse_reshape``, ``squeeze``,
  ``expand_dims``) only regroup the row-major element sequence, so a
  reshape-like op whose result has the input's shape is the identity (this
  removes ``reshape`` to the same shape and ``squeeze`` of the axes an
  ``expand_dims`` added), and two consecutive ones become one ``reshape`` to
  the final (static) shape;
* ``transpose(transpose(x, p), q)`` becomes one transpose by the composed
  permutation, or ``x`` when that is the identity (``axes=None`` reverses
  the axes); a transpose by the identity permutation is removed. Likewise a
  ``layout_transform`` from a layout to itself, and two back-to-back layout
  transforms ``A -> B -> C`` become ``A -> C`` (removed when ``C`` is ``A``);
* a reshape-like op of a constant becomes the constant with the new shape (a
  view of the same data: ``expand_dims`` of a weight vector, as ONNX importers
  emit for ``Unsqueeze``, is a constant the rules below and FoldScaleAxis see);
* ``cast`` to the dtype ``x`` already has becomes ``x``, and ``broadcast_to`` the
  shape ``x`` already has becomes ``x``;
* ``concatenate`` of a one-tensor tuple becomes that tensor;
* two consecutive affine ops with constants (``add``, ``subtract`` of a
  constant, ``multiply``, ``nn.bias_add``; TVM's ``SimplifyConsecutiveAdd``
  and friends) merge when the inner one has no other user:
  ``(x + c1) + c2 -> x + (c1 + c2)``, ``(x * c1) * c2 -> x * (c1 * c2)`` and
  ``(x + c1) * c2 -> x * c2 + c1 * c2``; ``x * c + d`` is the normal form. A
  batch norm lowered by SimplifyInference followed by a per-channel ``Mul``
  and ``Add`` (caffe2-exported ONNX models) thus becomes one multiply and one
  add, and a scale after a conv2d moves next to it, where FoldScaleAxis folds
  it into the weights. The merged constant is computed here (float64 for
  floats, rounded once; integers wrap as the ops do); the rule does not fire
  when it would hold more elements than the bigger operand, or any inf or nan
  (which is the case whenever an operand holds one). Merged adds stay a ``nn.bias_add``
  when one of them was and the sum runs along its axis. ``bias_add`` of zeros
  becomes ``x``.

Each rule is a pattern and a callback (TVM's ``SimplifyExpr`` is written the same
way), and the rules form the rule set ``simplify`` (:mod:`.simplify_rules`):
``add_zero``, ``subtract_zero``, ``zero_minus``, ``multiply_one``, ``multiply_zero``,
``divide_one``, ``bias_add_zero``, ``merge_adds``, ``merge_multiplies``,
``distribute_multiply``, ``double_negative``, ``reshape_noop``, ``reshape_constant``,
``reshape_reshape``, ``transpose_noop``, ``transpose_transpose``,
``layout_transform_noop``, ``layout_transform_pair``, ``cast_noop``,
``broadcast_to_noop``, ``concatenate_single``. ``[rewrites] disable =
["simplify.<rule>"]`` in a config file (the option ``rewrites.disable``) turns one off,
``["simplify"]`` all of them; Canonicalize never applies them (the rule set names
SimplifyExpr as the pass that does).

"Single use" is the count of the rewrite driver's context
(``rewrite_context().single_use``): the users of a node in the program as it is
at that point of the walk, where a node a rule replaced hands its users to its
replacement (``x + 0 -> x`` gives ``x`` the users of the add) and a node nobody
uses any more drops its own references, so a rewrite earlier in the same walk
does not block one later; a chain of such merges runs in one walk, and the
result is a fixed point.

Like TVM's ``SimplifyExpr`` (``relay.transform.SimplifyExpr``) the pass works
on the dataflow graph and never looks through ``let``-bound variables.

Algorithm: the greedy rewrite driver
(:func:`irpass.ir.dataflow_pattern.rewrite_greedy`). A quick read-only scan
first runs each rule's quick test, derived from its pattern (an ``add`` needs a
constant or creation-op operand, a ``negative`` a negative operand, ...), on the
calls of the ops the rules are rooted at; if no call passes one, no rule fires
anywhere and the function is returned as it is. Otherwise one walk rebuilds the
function bottom-up (iteratively, memoized by node identity, so a shared node is
simplified once and stays shared). When a call is rebuilt its arguments are
already in normal form; the rules of its op are tried at that node, and whatever
a rule builds is simplified again at the same spot (the new nodes below first)
before the parent sees it. Every rule removes at least one op call, turns ``0 - x``
into a ``negative`` or moves a constant multiply below a constant add (which a
multiply never moves back over), so this local loop runs a bounded number of
times per node: the result is a fixed point
(``reshape(reshape(reshape(x)))`` back to ``x``'s shape
becomes ``x``, ``x * 1 + 0`` becomes ``x``) in time linear in the size of the
function, without re-running whole-function passes. The bound on rewrites at
one node is the option ``rewrites.max_rounds`` (default 100).

Types: the pass requires ``InferType``, so every input node carries its
``checked_type``. A rewrite keeps the type of the node it replaces (the driver
checks it), a node rebuilt over rewritten inputs keeps its type, and the rules
give each node they build its type, so the output is typed without a new run
of inference. The hits per rule are reported as a note on ``ctx.diag`` and to
instruments (``--instrument timing`` lists them under the pass).
"""

from __future__ import annotations

from irpass.ir import Function, IRModule
from irpass.ir.dataflow_pattern import DEFAULT_MAX_ROUNDS
from irpass.transform import ConfigOption, PassContext, function_pass
from irpass.transform.rewrites import run_rule_set

from .options import options_of
from .simplify_rules import FINITE_MATH, SIMPLIFY, may_have_effects

__all__ = ["CONFIG_OPTIONS", "FINITE_MATH", "SIMPLIFY", "SimplifyExpr", "may_have_effects"]

# declared in options.py (registered with the plugin, before any pass is imported)
CONFIG_OPTIONS: list[ConfigOption] = options_of("SimplifyExpr")


@function_pass(opt_level=0, name="SimplifyExpr", required=["InferType"])
def SimplifyExpr(func: Function, mod: IRModule, ctx: PassContext) -> Function:
    """Simplify the algebraic and shape identities of ``func`` (see the module docstring).

    Returns ``func`` itself when no rule fired.
    """
    options = {FINITE_MATH: bool(ctx.config.get(FINITE_MATH, False))}
    return run_rule_set(SIMPLIFY, func, mod, ctx, max_rounds=DEFAULT_MAX_ROUNDS,
                        greedy=True, options=options, owner="std")
