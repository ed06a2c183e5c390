"""Textual pipelines: parse_pipeline's grammar, typed options, named pipelines, errors.

The passes named here are fakes registered by the module's fixture (with
override, over the standard pack's); each records the options its factory got.
"""

from typing import Literal

import irpass
import pytest
from irpass import op as O
from irpass.errors import IRPassError
from irpass.transform import (
    PassContext,
    PipelineInsertion,
    PipelineSyntaxError,
    Sequential,
    add_pipeline_insertion,
    function_pass,
    module_pass,
    parse_pipeline,
    register_pass,
)
from irpass.transform import pipeline as pipeline_mod
from irpass.transform.pipeline_text import MAX_DEPTH

CALLS = []
LOG = []


def _make(name, opt_level=0, **options):
    CALLS.append((name, options))

    def body(mod, ctx):
        LOG.append(name)
        return mod

    return module_pass(body, opt_level=opt_level, name=name)


def InferType():
    return _make("InferType")


def FoldConstant():
    return _make("FoldConstant")


def SimplifyExpr():
    return _make("SimplifyExpr")


def EliminateCommonSubexpr():
    return _make("EliminateCommonSubexpr")


def FuseOps(fuse_opt_level: int = -1):
    return _make("FuseOps", fuse_opt_level=fuse_opt_level)


def ConvertLayout(desired_layouts: dict[str, list[str]]):
    return _make("ConvertLayout", desired_layouts=desired_layouts)


def Tune(
    rate: float = 1.0,
    steps: int = 1,
    verbose: bool = False,
    label: str = "",
    mode: Literal["fast", "slow"] = "fast",
    limit: int | None = 0,
    sizes: tuple[int, ...] = (),
    pair: tuple[int, str] = (0, ""),
    names: list[str] | None = None,
    code: "dict[int, str] | str" = "",
    key: str | int = "",
    anything=None,
):
    return _make("Tune", rate=rate, steps=steps, verbose=verbose, label=label, mode=mode,
                 limit=limit, sizes=sizes, pair=pair, names=names, code=code, key=key,
                 anything=anything)


def Loose(x: "NotDefinedAnywhere | int" = 0, **extra):  # noqa: F821 (on purpose)
    return _make("Loose", x=x, **extra)


def Picky(level: int = 0):
    if level > 3:
        raise ValueError(f"level {level} is too high (at most 3)")
    return _make("Picky", level=level)


@pytest.fixture(autouse=True)
def _fakes():
    CALLS.clear()
    LOG.clear()
    for factory in (InferType, FoldConstant, SimplifyExpr, EliminateCommonSubexpr, FuseOps,
                    ConvertLayout, Tune, Loose, Picky):
        register_pass(factory, owner="plugT", override=True)
    saved = list(pipeline_mod._INSERTIONS)
    pipeline_mod._INSERTIONS.clear()
    yield
    pipeline_mod._INSERTIONS[:] = saved


def tree(p):
    """A pass as a name, a Sequential as (name, [children])."""
    if isinstance(p, Sequential):
        return (p.info.name, [tree(c) for c in p.passes])
    return p.info.name


def options_of(name):
    (opts,) = [o for n, o in CALLS if n == name]
    return opts


def _mod():
    x = irpass.var("x", shape=(2, 2))
    return irpass.IRModule.from_expr(irpass.Function([x], O.exp(x)))


# -- structure ---------------------------------------------------------------------------------


def test_the_issue_example():
    seq = parse_pipeline(
        "InferType,FoldConstant,seq(SimplifyExpr,EliminateCommonSubexpr),FuseOps{fuse_opt_level=2}"
    )
    assert isinstance(seq, Sequential)
    assert seq.info.opt_level == 0
    assert tree(seq) == ("pipeline", [
        "InferType",
        "FoldConstant",
        ("seq", ["SimplifyExpr", "EliminateCommonSubexpr"]),
        "FuseOps",
    ])
    assert isinstance(seq.passes[2], Sequential) and seq.passes[2].info.opt_level == 0
    assert options_of("FuseOps") == {"fuse_opt_level": 2}
    assert type(options_of("FuseOps")["fuse_opt_level"]) is int


def test_whitespace_between_tokens_is_ignored():
    seq = parse_pipeline(" InferType ,\n\tseq( SimplifyExpr , FuseOps { fuse_opt_level = 1 } ) ")
    assert tree(seq) == ("pipeline", ["InferType", ("seq", ["SimplifyExpr", "FuseOps"])])
    assert options_of("FuseOps") == {"fuse_opt_level": 1}


def test_parsed_pipeline_runs_its_passes_in_order():
    seq = parse_pipeline("seq(FoldConstant,seq(SimplifyExpr)),InferType")
    with PassContext(opt_level=2):
        seq(_mod())
    assert LOG == ["FoldConstant", "SimplifyExpr", "InferType"]


# -- values --------------------------------------------------------------------------------


def test_options_are_converted_to_the_annotations():
    parse_pipeline(
        'Tune{rate=2, steps=-3, verbose=true, label=1.50, mode=slow, limit=none, '
        'sizes=[1, 2_000], pair=[3, x], names=[a, "b c"], code={1=one}}'
    )
    got = options_of("Tune")
    assert got == {
        "rate": 2.0, "steps": -3, "verbose": True, "label": "1.50", "mode": "slow",
        "limit": None, "sizes": (1, 2000), "pair": (3, "x"), "names": ["a", "b c"],
        "code": {1: "one"}, "key": "", "anything": None,
    }
    assert type(got["rate"]) is float and type(got["sizes"]) is tuple


def test_union_members_keep_what_the_text_is():
    parse_pipeline("Tune{limit=7, code=abc, names=none, key=3}")
    got = options_of("Tune")
    assert (got["limit"], got["code"], got["names"], got["key"]) == (7, "abc", None, 3)
    CALLS.clear()
    parse_pipeline("Tune{key=k3, code='7'}")
    assert (options_of("Tune")["key"], options_of("Tune")["code"]) == ("k3", "7")


def test_unannotated_options_take_the_value_as_written():
    parse_pipeline(r'Tune{anything=[1, 2.5, two, "3", true, none, {a=1, "b c"=[]}, "q\"\n"]}')
    assert options_of("Tune")["anything"] == [
        1, 2.5, "two", "3", True, None, {"a": 1, "b c": []}, 'q"\n']


def test_empty_braces():
    parse_pipeline("FuseOps{},Loose{other={}}")
    assert options_of("FuseOps") == {"fuse_opt_level": -1}
    assert options_of("Loose") == {"x": 0, "other": {}}


def test_quoted_strings_may_hold_delimiters():
    parse_pipeline("Tune{label='a,b(c){d}=[e]'}")
    assert options_of("Tune")["label"] == "a,b(c){d}=[e]"


def test_unevaluable_annotations_and_extra_keywords():
    parse_pipeline("Loose{x=3, other=[x]}")
    assert options_of("Loose") == {"x": 3, "other": ["x"]}


def test_nested_dict_and_list_values():
    seq = parse_pipeline(
        'ConvertLayout{desired_layouts={nn.conv2d=[NHWC,default], "nn.max_pool2d"=[NCHW]}}'
    )
    assert tree(seq) == ("pipeline", ["ConvertLayout"])
    assert options_of("ConvertLayout") == {
        "desired_layouts": {"nn.conv2d": ["NHWC", "default"], "nn.max_pool2d": ["NCHW"]}
    }


def test_class_pass_options_follow_its_constructor():
    @function_pass(opt_level=1)
    class Scale:
        def __init__(self, factor: float, note: str = ""):
            self.factor = factor

        def transform_function(self, func, mod, ctx):
            return func

    register_pass(Scale, owner="plugT")
    (p,) = parse_pipeline("Scale{factor=2}").passes
    assert p.factor == 2.0 and type(p.factor) is float
    with pytest.raises(PipelineSyntaxError, match="needs the option 'factor'"):
        parse_pipeline("Scale")


def test_pass_registered_as_an_instance_takes_no_options():
    inst = module_pass(lambda mod, ctx: mod, name="Fixed")
    register_pass(inst, owner="plugT")
    assert parse_pipeline("Fixed").passes[0] is inst
    with pytest.raises(PipelineSyntaxError, match="'Fixed' takes no options"):
        parse_pipeline("Fixed{a=1}")


# -- errors ------------------------------------------------------------------------------------

ERRORS = [
    # wrong types
    ("Tune{steps=two}", 12, ["option 'steps' of 'Tune'", "expects int", "two (a word)"]),
    ("Tune{steps=2.5}", 12, ["expects int", "2.5 (float)"]),
    ("Tune{verbose=1}", 14, ["expects bool", "1 (int)"]),
    ("Tune{label=[a]}", 12, ["expects str", "a list"]),
    ("Tune{mode=medium}", 11, ["expects one of 'fast', 'slow'"]),
    ("Tune{sizes=3}", 12, ["expects tuple[int, ...]", "write [a, b]"]),
    ("Tune{sizes=[1,x]}", 15, ["expects int", "x (a word)"]),
    ("Tune{pair=[1,2,3]}", 11, ["2 items, got 3"]),
    ("Tune{limit=x}", 12, ["expects int | None"]),
    ("ConvertLayout{desired_layouts={nn.conv2d=NHWC}}", 42, ["expects list[str]"]),
    ("ConvertLayout{desired_layouts=[NHWC]}", 31, ["expects dict[str, list[str]]", "a list"]),
    # option names
    ("FuseOps{fuse_level=2}", 9, ["unknown option 'fuse_level' for 'FuseOps'",
                                  "did you mean 'fuse_opt_level'?", "(options: fuse_opt_level)"]),
    ("FoldConstant{x=1}", 14, ["'FoldConstant' takes no options, got 'x'"]),
    ("FuseOps{fuse_opt_level=1,fuse_opt_level=2}", 26, ["'fuse_opt_level' given twice",
                                                        "column 9"]),
    ("InferType,ConvertLayout", 11, ["'ConvertLayout' needs the option 'desired_layouts'",
                                     "ConvertLayout{desired_layouts=...}"]),
    ("Picky{level=5}", 1, ["cannot create 'Picky'", "level 5 is too high"]),
    # names
    ("InferType,FoldConstnt", 11, ["unknown pass 'FoldConstnt'", "did you mean 'FoldConstant'"]),
    ("inferType", 1, ["unknown pass 'inferType'", "did you mean 'InferType'"]),
    ("sequ(InferType)", 1, ["unknown pass 'sequ'", "'seq'"]),
    # syntax
    ("InferType,,FoldConstant", 11, ["expected a pass name, got ','"]),
    ("InferType FoldConstant", 11, ["expected ',' or the end of the pipeline, got 'FoldConstant'"]),
    ("FuseOps{fuse_opt_level 2}", 24, ["expected '=' after option 'fuse_opt_level', got '2'"]),
    ("FuseOps{2=2}", 9, ["expected an option name, got '2'"]),
    ("Tune{steps=}", 12, ["expected a value, got '}'"]),
    ('Tune{label="abc}', 12, ["never closed", 'missing "']),
    (r'Tune{label="a\qb"}', 14, ["unknown escape '\\q'"]),
    # unbalanced
    ("seq(InferType", 14, ["expected ',' or ')' closing the 'seq(' at column 1",
                           "the end of the text"]),
    ("seq(seq(InferType)", 19, ["closing the 'seq(' at column 1"]),
    ("InferType)", 10, ["unbalanced ')'"]),
    ("FuseOps{fuse_opt_level=2", 25, ["closing the '{' at column 8"]),
    ("Tune{sizes=[1,2}", 16, ["closing the '[' at column 12"]),
    ("Tune{code={1=a}", 16, ["closing the '{' at column 5"]),
    # trailing comma, empty
    ("InferType,", 11, ["trailing ','"]),
    ("seq(InferType,)", 15, ["trailing ','"]),
    ("Tune{sizes=[1,]}", 15, ["expected a value, got ']'"]),
    ("", 1, ["empty pipeline"]),
    ("  \n ", 1, ["empty pipeline"]),
    ("seq()", 5, ["empty 'seq()'"]),
    ("seq", 4, ["expected '(' after 'seq'"]),
    ("seq{a=1}(InferType)", 4, ["'seq' takes no options"]),
]


@pytest.mark.parametrize("text, column, words", ERRORS)
def test_errors_name_the_column_with_a_caret(text, column, words):
    with pytest.raises(PipelineSyntaxError) as info:
        parse_pipeline(text)
    err = info.value
    assert isinstance(err, ValueError) and isinstance(err, IRPassError)
    assert err.text == text
    assert err.column == column
    message = str(err)
    for word in words:
        assert word in message
    first, line, caret = message.split("\n")
    assert first.startswith(f"pipeline, column {column}: ")
    if "\n" not in text:
        assert line == "  " + text
        assert caret == "  " + " " * (column - 1) + "^"


def test_caret_on_the_right_line_of_a_multiline_text():
    text = "InferType,\n  Bogus"
    with pytest.raises(PipelineSyntaxError) as info:
        parse_pipeline(text)
    assert info.value.column == 14
    _, line, caret = str(info.value).split("\n")
    assert line == "    Bogus"
    assert caret == "  " + "  ^"


def test_factory_errors_are_chained():
    with pytest.raises(PipelineSyntaxError) as info:
        parse_pipeline("Picky{level=9}")
    assert isinstance(info.value.__cause__, ValueError)


def test_text_must_be_a_str():
    with pytest.raises(TypeError, match="must be a str"):
        parse_pipeline(["InferType"])


def test_nesting_is_capped_with_an_error():
    deep = "seq(" * (MAX_DEPTH + 1) + "InferType" + ")" * (MAX_DEPTH + 1)
    with pytest.raises(PipelineSyntaxError, match=f"nested more than {MAX_DEPTH} levels"):
        parse_pipeline(deep)
    ok = "seq(" * 20 + "InferType" + ")" * 20
    p = parse_pipeline(ok)
    for _ in range(20):
        (p,) = p.passes
    assert tree(p) == ("seq", ["InferType"])
    siblings = ",".join(["seq(InferType)"] * (MAX_DEPTH + 5))  # depth is not cumulative
    assert len(parse_pipeline(siblings).passes) == MAX_DEPTH + 5
    named = {f"p{i}": f"p{i + 1}" for i in range(MAX_DEPTH + 1)}
    named[f"p{MAX_DEPTH + 1}"] = "InferType"
    with pytest.raises(PipelineSyntaxError, match="nested more than"):
        parse_pipeline("p0", named=named)
    values = "Tune{anything=" + "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1) + "}"
    with pytest.raises(PipelineSyntaxError, match="nested more than"):
        parse_pipeline(values)


# -- named pipelines and default ----------------------------------------------------------------


def test_named_pipelines_expand_recursively():
    named = {
        "fast": "InferType,FoldConstant",
        "full": "fast,seq(SimplifyExpr),FuseOps{fuse_opt_level=3}",
    }
    seq = parse_pipeline("full,EliminateCommonSubexpr", named=named)
    assert tree(seq) == ("pipeline", [
        ("full", [("fast", ["InferType", "FoldConstant"]), ("seq", ["SimplifyExpr"]), "FuseOps"]),
        "EliminateCommonSubexpr",
    ])
    assert options_of("FuseOps") == {"fuse_opt_level": 3}


def test_named_pipeline_wins_over_a_pass_of_the_same_name():
    seq = parse_pipeline("FoldConstant", named={"FoldConstant": "InferType"})
    assert tree(seq) == ("pipeline", [("FoldConstant", ["InferType"])])


@pytest.mark.parametrize("named, text, where, column, cycle", [
    ({"a": "InferType,b", "b": "c", "c": "a"}, "a", "c", 1, "a -> b -> c -> a"),
    ({"a": "a"}, "a", "a", 1, "a -> a"),
    ({"x": "InferType", "a": "x,seq(InferType,b)", "b": "FoldConstant,a"}, "FoldConstant,a",
     "b", 14, "a -> b -> a"),
])
def test_cycles_among_named_pipelines(named, text, where, column, cycle):
    with pytest.raises(PipelineSyntaxError) as info:
        parse_pipeline("InferType,a", named=named)
    err = info.value
    assert f"named pipelines form a cycle: {cycle}" in str(err)
    assert f"in named pipeline {where!r}" in str(err)
    assert (err.text, err.column) == (text, column)


def test_errors_inside_a_named_pipeline_point_into_its_text():
    with pytest.raises(PipelineSyntaxError) as info:
        parse_pipeline("InferType,fast", named={"fast": "InferType,Bogus"})
    err = info.value
    assert (err.text, err.column) == ("InferType,Bogus", 11)
    assert "in named pipeline 'fast': unknown pass 'Bogus'" in str(err)


def test_named_pipeline_misuse():
    with pytest.raises(PipelineSyntaxError, match="named pipeline 'fast' takes no options"):
        parse_pipeline("fast{x=1}", named={"fast": "InferType"})
    with pytest.raises(PipelineSyntaxError, match="did you mean 'fastpath'"):
        parse_pipeline("fastpth", named={"fastpath": "InferType"})
    for reserved in ("seq", "default"):
        with pytest.raises(ValueError, match="reserved"):
            parse_pipeline("InferType", named={reserved: "InferType"})
    with pytest.raises(TypeError, match="named pipelines map names"):
        parse_pipeline("InferType", named={"fast": ["InferType"]})


def test_default_is_the_default_pipeline():
    register_pass(lambda: _make("Heavy", opt_level=3), "Heavy", owner="plugT")
    add_pipeline_insertion(PipelineInsertion("FoldConstant", phase="simplify"), owner="plugT")
    add_pipeline_insertion(PipelineInsertion("Heavy", phase="optimize"), owner="plugT")
    add_pipeline_insertion(PipelineInsertion("InferType", phase="start"), owner="plugT")
    seq = parse_pipeline("default,SimplifyExpr")
    assert tree(seq) == ("pipeline", [("default_pipeline", ["InferType", "FoldConstant"]),
                                      "SimplifyExpr"])
    seq = parse_pipeline("default{opt_level=3}")
    assert tree(seq) == ("pipeline", [("default_pipeline",
                                       ["InferType", "FoldConstant", "Heavy"])])
    # the caller's opt_level (irpass optimize -O 3) reaches 'default', also inside named
    # pipelines; an explicit option still wins
    seq = parse_pipeline("fast", named={"fast": "default"}, opt_level=3)
    assert tree(seq) == ("pipeline", [("fast", [("default_pipeline",
                                                 ["InferType", "FoldConstant", "Heavy"])])])
    seq = parse_pipeline("default{opt_level=0}", opt_level=3)
    assert tree(seq) == ("pipeline", [("default_pipeline", ["InferType", "FoldConstant"])])


@pytest.mark.parametrize("text, words", [
    ("default{opt_level=9}", ["cannot create 'default'", "between 0 and 4"]),
    ("default{opt_level=x}", ["option 'opt_level' of 'default' expects int"]),
    ("default{level=3}", ["unknown option 'level'", "did you mean 'opt_level'"]),
])
def test_default_options_are_checked(text, words):
    with pytest.raises(PipelineSyntaxError) as info:
        parse_pipeline(text)
    for word in words:
        assert word in str(info.value)


def test_split_pipeline_gives_the_top_level_items_as_written():
    from irpass.transform.pipeline_text import split_pipeline

    assert split_pipeline(" FoldConstant , seq(A, B{k=[1, 2]}), C{s='a, b'} ") == [
        "FoldConstant",
        "seq(A, B{k=[1, 2]})",
        "C{s='a, b'}",
    ]
    with pytest.raises(PipelineSyntaxError):
        split_pipeline("A, B{s='open")
