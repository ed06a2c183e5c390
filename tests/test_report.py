"""ReportInstrument and the HTML report: what the page holds (the browser tests check
that it renders: tests/test_report_browser.py)."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import numpy as np
import pytest
from irpass import op
from irpass.instrument import CheckEach, CheckEachError, PassInstrument, get_instrument
from irpass.instrument.report import ReportInstrument
from irpass.ir import ExprMutator, Function, IRModule, Op, var
from irpass.testing import models
from irpass.transform import PassContext, Sequential, function_pass, get_pass, module_pass
from irpass.viz.report import changed_region


class _Page(HTMLParser):
    """The report's structure: the change sections, findings and timeline rows."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.changes: list[str] = []
        self.findings: list[str] = []
        self.rows: list[list[str]] = []
        self.tags: list[str] = []
        self._row: list[str] | None = None
        self._in_timeline = False
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append(tag)
        if tag == "section" and "pass-change" in (a.get("class") or "").split():
            self.changes.append(a["data-pass"])
        if tag == "div" and a.get("class") == "finding":
            self.findings.append(a.get("data-pass", ""))
        if tag == "section":
            self._in_timeline = a.get("id") == "timeline"
        if tag == "tr" and self._in_timeline:
            self._row = []
            self.rows.append(self._row)

    def handle_data(self, data):
        if self._row is not None and data.strip():
            self._row.append(data.strip())


def _section(text: str, name: str) -> str:
    """The change section of pass ``name``."""
    start = text.index('class="pass-change" id="change-')
    start = text.index(f'data-pass="{name}"', start)
    return text[start : text.index("</section>", start)]


class _ExpToTanh(ExprMutator):
    def visit_call(self, call):
        new = super().visit_call(call)
        return op.tanh(new.args[0]) if new.op is Op.get("exp") else new


@function_pass(opt_level=0, name="ExpToTanh")
def exp_to_tanh(func, mod, ctx):
    return _ExpToTanh().visit(func)


@module_pass(opt_level=0, name="Nothing")
def nothing(mod, ctx):
    return mod


@module_pass(opt_level=4, name="TooHigh")
def too_high(mod, ctx):
    raise AssertionError("a pass above the opt level ran")


@module_pass(opt_level=0, name="Off")
def off(mod, ctx):
    raise AssertionError("a disabled pass ran")


def _small() -> IRModule:
    x = var("x", shape=(2, 3))
    return IRModule.from_expr(Function([x], op.nn.relu(op.exp(x) + op.exp(x * x))))


def _pipeline() -> Sequential:
    return Sequential([get_pass("InferType"), nothing, exp_to_tanh, too_high, off], name="pipe")


def test_one_section_per_pass_that_changed_the_module_with_its_diff(tmp_path):
    path = tmp_path / "run.html"
    report = ReportInstrument(path, pipeline=_pipeline())
    with PassContext(opt_level=3, disabled_pass=["Off"], instruments=[report]):
        _pipeline()(_small())
    page = _Page(path.read_text())
    # InferType adds types to the text, ExpToTanh rewrites; Nothing changes nothing
    assert page.changes == ["InferType", "ExpToTanh"]
    section = _section(path.read_text(), "ExpToTanh")
    diff = section.split("</pre>")[0]
    assert re.search(r'class="del">-.*exp\(', diff) and re.search(r'class="add">\+.*tanh\(', diff)
    rows = {r[1]: r for r in page.rows[1:]}
    assert "unchanged" in rows["Nothing"]
    assert "skipped: opt_level 4 > 3" in rows["TooHigh"]
    assert "skipped: disabled (disabled_pass)" in rows["Off"]
    assert "not given the pipeline" not in path.read_text()
    # the order of the pipeline, the skipped passes in place
    assert [r[1] for r in page.rows[1:]] == [
        "pipe",
        "InferType",
        "Nothing",
        "ExpToTanh",
        "TooHigh",
        "Off",
    ]


def test_records_give_time_and_op_call_delta():
    report = ReportInstrument()
    x = var("x", shape=(4,))
    mod = IRModule.from_expr(Function([x], op.exp(op.exp(x))))

    @function_pass(opt_level=0, name="DropOuterExp")
    def drop(func, mod, ctx):
        return Function(func.params, func.body.args[0])

    with PassContext(instruments=[report]):
        Sequential([drop, nothing])(mod)
    by_name = {r.name: r for r in report.records}
    assert by_name["DropOuterExp"].changed and by_name["DropOuterExp"].delta == -1
    assert by_name["DropOuterExp"].calls == 1
    assert not by_name["Nothing"].changed and by_name["Nothing"].seconds is not None
    assert by_name["sequential"].group
    assert [c.name for c in report.changes] == ["DropOuterExp"]


class _Refuse(PassInstrument):
    def should_run(self, mod, info):
        return info.name != "Nothing"


def test_a_pass_an_instrument_refused_is_listed_as_skipped():
    report = ReportInstrument()
    with PassContext(instruments=[_Refuse(), report]):
        Sequential([nothing, exp_to_tanh])(_small())
    rows = [(r.name, r.skipped) for r in report.records]
    assert ("Nothing", "an instrument's should_run said no") in rows
    assert ("ExpToTanh", None) in rows
    # refused as the last pass of an inner Sequential: listed inside it, in its place
    with PassContext(instruments=[_Refuse(), report]):
        Sequential([Sequential([exp_to_tanh, nothing], name="inner"), exp_to_tanh])(_small())
    rows = [(r.name, r.depth, r.skipped is not None) for r in report.records]
    assert rows == [
        ("sequential", 0, False),
        ("inner", 1, False),
        ("ExpToTanh", 2, False),
        ("Nothing", 2, True),
        ("ExpToTanh", 1, False),
    ]


class _SignFlip(ExprMutator):
    def visit_call(self, call):
        new = super().visit_call(call)
        return op.negative(new) if new.op is Op.get("nn.relu") else new


@function_pass(opt_level=0, name="PlantedSignFlip")
def sign_flip(func, mod, ctx):
    return _SignFlip().visit(func)


@pytest.mark.parametrize("report_first", [True, False])
def test_check_each_finding_in_the_same_context_is_shown(tmp_path, report_first):
    path = tmp_path / "run.html"
    report = ReportInstrument(path)
    check = CheckEach(seed=1)
    instruments = [report, check] if report_first else [check, report]
    with pytest.raises(CheckEachError), PassContext(opt_level=3, instruments=instruments):
        Sequential([get_pass("InferType"), sign_flip, nothing])(models.mlp())
    text = path.read_text()
    page = _Page(text)
    assert page.findings == ["PlantedSignFlip"]
    assert "changed the outputs" in text
    assert page.changes.count("PlantedSignFlip") == 1
    section = _section(text, "PlantedSignFlip")
    assert "check-each: this pass changed the outputs" in section
    assert "negative(" in section.split("</pre>")[0]
    rows = {r[1]: r for r in page.rows[1:]}
    assert any(cell.startswith("failed:") for cell in rows["PlantedSignFlip"])
    assert "did not finish" in rows["sequential"]


def test_write_renders_the_summary_and_findings_it_is_given(tmp_path):
    report = ReportInstrument()
    with PassContext(instruments=[report]):
        Sequential([exp_to_tanh])(_small())
    out = report.write(
        tmp_path / "r.html",
        summary={
            "model": "small.onnx",
            "output": "small.opt.onnx",
            "pipeline": "ExpToTanh",
            "time": {"load": 0.5, "passes": 0.25, "save": 1.5, "total": 2.25},
            "nodes": {"before": 9, "after": 7},
            "size": {"input": 3 << 20, "output": 2048},
            "ops": {"before": {"exp": 2, "add": 1}, "after": {"tanh": 2, "add": 1}},
            "check": "ok, 1 output(s) match",
        },
        findings=["first bad pass: ExpToTanh"],
    )
    text = out.read_text()
    for piece in (
        "small.onnx",
        "small.opt.onnx",
        "load 500.0 ms",
        "save 1.50 s",
        "total 2.25 s",
        "9 &rarr; 7",
        "3.0 MB &rarr; 2.0 kB",
        "first bad pass: ExpToTanh",
        "<code>tanh</code>",
        "ok, 1 output(s) match",
        "not given the pipeline",
    ):
        assert piece in text, piece
    assert _Page(text).changes == ["ExpToTanh"]


def test_the_page_fetches_nothing(tmp_path):
    report = ReportInstrument(tmp_path / "r.html")
    with PassContext(opt_level=3, instruments=[report]):
        Sequential([get_pass("InferType"), get_pass("SimplifyInference"), get_pass("FuseOps")])(
            models.resnet()
        )
    text = (tmp_path / "r.html").read_text()
    page = _Page(text)
    assert page.changes  # something to show
    assert not {"script", "link", "img", "iframe", "object", "embed"} & set(page.tags)
    assert not re.search(r"\b(src|srcset)=|url\(|@import", text)


def test_bad_paths_are_one_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such folder") as info:
        ReportInstrument(tmp_path / "missing" / "r.html")
    assert str(tmp_path / "missing") in str(info.value)
    with pytest.raises(ValueError, match=r"'r\.txt' must end in \.html"):
        ReportInstrument("r.txt")
    with pytest.raises(ValueError, match="no path"):
        ReportInstrument().write()


def test_registered_as_report_with_the_path_as_argument(tmp_path):
    made = get_instrument("report", str(tmp_path / "a.html"))
    assert isinstance(made, ReportInstrument) and made.path == tmp_path / "a.html"
    with PassContext(instruments=[made]):
        Sequential([exp_to_tanh])(_small())
    assert _Page((tmp_path / "a.html").read_text()).changes == ["ExpToTanh"]


def test_the_changed_region_is_what_the_pass_made_not_the_consumers_it_rebuilt():
    x = var("x", shape=(2, 3))
    shared = op.exp(x)
    before = Function([x], op.nn.relu(op.sigmoid(shared) + shared) * shared)
    after = _ExpToTanh().visit(_SigmoidToTanhPlusExp().visit(before))
    # before: sigmoid, exp went; after: tanh(tanh(x)) came. add, relu, multiply were
    # rebuilt over new inputs: the same computation, not part of the change
    region = changed_region(before, after, max_nodes=10)
    assert region.total == (2, 2)
    assert sorted(_ops(region.before)) == ["exp", "sigmoid"]
    assert sorted(_ops(region.after)) == ["tanh", "tanh"]
    capped = changed_region(before, after, max_nodes=1)
    assert capped.shown == (1, 1) and capped.total == (2, 2)
    assert _ops(capped.after) == ["tanh"]


class _SigmoidToTanhPlusExp(ExprMutator):
    def visit_call(self, call):
        new = super().visit_call(call)
        return op.tanh(new.args[0]) if new.op is Op.get("sigmoid") else new


def _ops(expr) -> list[str]:
    from irpass.ir import Call, post_order_visit

    found = []
    post_order_visit(
        expr, lambda n: found.append(n.op.name) if type(n) is Call and type(n.op) is Op else None
    )
    return found


def test_unchanged_run_says_so(tmp_path):
    report = ReportInstrument(tmp_path / "r.html")
    x = var("x", shape=(2,))
    with PassContext(instruments=[report]):
        Sequential([nothing])(IRModule.from_expr(Function([x], op.exp(x))))
    text = (tmp_path / "r.html").read_text()
    assert "No pass changed the module." in text and not _Page(text).changes
    assert np.isfinite(report.records[-1].seconds)


def test_a_bisect_result_is_a_finding_with_the_culprits_change(tmp_path):
    from irpass.debug.bisect import bisect
    from irpass.debug.oracle import OutputsDiffer

    mod = models.mlp()
    pipeline = Sequential([get_pass("InferType"), nothing, sign_flip])
    found = bisect(mod, pipeline, OutputsDiffer(mod))
    report = ReportInstrument()
    text = report.write(tmp_path / "b.html", findings=[found]).read_text()
    page = _Page(text)
    assert page.findings == ["PlantedSignFlip"]
    assert "first bad pass: PlantedSignFlip" in text
    assert page.changes == ["PlantedSignFlip"]
    section = _section(text, "PlantedSignFlip")
    assert "bisect: the first bad pass" in section and "negative(" in section


@pytest.mark.slow
def test_a_million_node_chain_is_reported_without_recursion(tmp_path):
    x = var("x", shape=(2,))
    y = x
    for _ in range(1_000_000):
        y = op.negative(y)
    mod = IRModule.from_expr(Function([x], op.exp(y)))
    report = ReportInstrument(tmp_path / "chain.html")  # pictures: the region walk too
    with PassContext(instruments=[report]):
        Sequential([exp_to_tanh])(mod)
    text = (tmp_path / "chain.html").read_text()
    assert _Page(text).changes == ["ExpToTanh"]
    assert re.search(r'class="add">\+.*tanh\(', _section(text, "ExpToTanh"))


def test_a_fused_call_counts_the_calls_drawn_inside_it():
    from irpass.ir import Call
    from irpass.viz.report import changed_regions

    with PassContext(opt_level=3):
        before = Sequential([get_pass("InferType")])(models.resnet())
        after = Sequential([get_pass("FuseOps")])(before)
    (region,), differ = changed_regions(before, after, max_nodes=12)
    assert differ == 1 and region.function == "main"
    fused = [n for n in _calls(region.after) if type(n.op) is Function]
    boxes = sum(1 + len(_ops(f.op)) for f in fused)
    assert fused and boxes <= 12 and region.shown[1] == len(fused) < region.total[1]
    assert not any(type(n) is Call and type(n.op) is Function for n in _calls(region.before))


def _calls(expr) -> list:
    from irpass.ir import Call, post_order_visit

    found = []
    post_order_visit(expr, lambda n: found.append(n) if type(n) is Call else None)
    return found


def test_switched_on_by_a_config_file(tmp_path):
    from irpass.settings import load_settings

    (tmp_path / "irpass.toml").write_text(
        f'[instruments.report]\npath = "{(tmp_path / "cfg.html").as_posix()}"\npictures = false\n'
    )
    ctx = load_settings(environ={}, cwd=tmp_path).pass_context()
    (report,) = [i for i in ctx.instruments if isinstance(i, ReportInstrument)]
    assert report.path == tmp_path / "cfg.html" and not report.pictures
    with ctx:
        Sequential([exp_to_tanh])(_small())
    assert _Page((tmp_path / "cfg.html").read_text()).changes == ["ExpToTanh"]


def test_without_graphviz_the_report_says_so_in_one_line(tmp_path, monkeypatch):
    import irpass.viz

    def no_graphviz(dot, fmt):
        raise irpass.viz.GraphvizNotFound("no dot here: apt-get install graphviz")

    monkeypatch.setattr(irpass.viz, "render", no_graphviz)
    report = ReportInstrument(tmp_path / "r.html")
    with PassContext(instruments=[report]):
        Sequential([exp_to_tanh])(_small())
    text = (tmp_path / "r.html").read_text()
    notes = re.findall(r'<p class="note" id="pictures-note">([^<]*)</p>', text)
    assert notes == ["No pictures: no dot here: apt-get install graphviz."]
    assert "<svg" not in text and _Page(text).changes == ["ExpToTanh"]
