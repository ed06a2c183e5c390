"""The debugging tools on real models: print-changed's size, verify_each on the zoo."""

from __future__ import annotations

import io

import irpass
import pytest
from irpass.instrument import PrintChanged
from irpass.ir import structural_equal
from irpass.transform import PassContext, default_pipeline
from irpass_onnx.testing import light_model


@pytest.fixture(scope="module")
def resnet50():
    try:
        return irpass.load(light_model("resnet50").path)
    except LookupError as err:  # the installed onnx ships its light models
        pytest.fail(str(err))


@pytest.mark.parametrize("diff", [False, True])
def test_print_changed_on_resnet50_stays_under_a_megabyte(resnet50, diff):
    out = io.StringIO()
    with PassContext(opt_level=3, instruments=[PrintChanged(diff=diff, stream=out)]):
        default_pipeline(3)(resnet50)
    text = out.getvalue()
    assert "*** IR Dump After SimplifyInference" in text  # it did print the passes' work
    assert len(text.encode()) < 1_000_000


def test_verify_each_finds_nothing_wrong_with_the_standard_pipeline(resnet50):
    with PassContext(opt_level=3):
        plain = default_pipeline(3)(resnet50)
    with PassContext(opt_level=3, config={"verify_each": True}):
        checked = default_pipeline(3)(resnet50)
    assert structural_equal(plain, checked)
