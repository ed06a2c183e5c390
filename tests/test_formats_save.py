"""Saving never destroys another model: ``irpass.save`` refuses to write its constants over
the ``.npz`` of another text file beside it, and a failed save leaves the files it would have
replaced as they were (each file is written aside and renamed when complete)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import irpass
import numpy as np
import pytest
from irpass import formats
from irpass.ir import serialize
from irpass.ir.printer import INLINE_CONST_MAX


def big_mod(seed: int = 0) -> irpass.IRModule:
    """A module with a constant too big to print inline (so it is saved to a .npz)."""
    n = INLINE_CONST_MAX + 1
    x = irpass.var("x", shape=(n,))
    w = irpass.const(np.random.default_rng(seed).standard_normal(n).astype("float32"))
    return irpass.IRModule.from_expr(irpass.Function([x], irpass.op.add(x, w)))


def small_mod() -> irpass.IRModule:
    x = irpass.var("x", shape=(4,))
    return irpass.IRModule.from_expr(irpass.Function([x], irpass.op.negative(x)))


def snapshot(directory: Path) -> dict[str, bytes]:
    """Every file of ``directory`` (hidden ones too: a leftover temporary file shows)."""
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


@pytest.fixture
def saved(tmp_path):
    """``model.txt`` + ``model.npz`` saved in ``tmp_path``: (module, directory, files)."""
    mod = big_mod()
    irpass.save(mod, tmp_path / "model.txt")
    files = snapshot(tmp_path)
    assert sorted(files) == ["model.npz", "model.txt"]
    return mod, tmp_path, files


def assert_untouched(mod, directory, files):
    assert snapshot(directory) == files
    irpass.assert_structural_equal(irpass.load(directory / "model.txt"), mod)


# -- another model's constants ----------------------------------------------------------------


@pytest.mark.parametrize("name", ["model.ir", "model", "model.IR"])
def test_save_refuses_to_write_over_another_models_constants(saved, name):
    mod, directory, files = saved
    with pytest.raises(FileExistsError) as info:
        irpass.save(big_mod(seed=1), directory / name)
    message = str(info.value)
    assert str(directory / "model.npz") in message and str(directory / "model.txt") in message
    assert str(directory / name) in message
    assert_untouched(mod, directory, files)


def test_save_refuses_only_what_would_destroy_another_model(saved, tmp_path):
    mod, directory, files = saved
    with pytest.raises(FileExistsError):
        irpass.save(big_mod(seed=1), directory / "model.ir")
    # a module without big constants writes no .npz: it may sit beside
    irpass.save(small_mod(), directory / "model.ir")
    after = snapshot(directory)
    assert sorted(after) == ["model.ir", "model.npz", "model.txt"]
    assert_untouched(mod, directory, {**files, "model.ir": after["model.ir"]})
    irpass.assert_structural_equal(irpass.load(directory / "model.ir"), small_mod())
    # saving again to the path whose constants they are replaces both files
    other = big_mod(seed=1)
    irpass.save(other, directory / "model.txt")
    assert snapshot(directory)["model.npz"] != files["model.npz"]
    irpass.assert_structural_equal(irpass.load(directory / "model.txt"), other)
    # a leftover .npz that no text file names is fair game
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    (fresh / "model.npz").write_bytes(b"stale")
    (fresh / "model.txt").write_text(str(small_mod()))  # no metadata_file header
    irpass.save(big_mod(), fresh / "model.ir")
    irpass.assert_structural_equal(irpass.load(fresh / "model.ir"), big_mod())


def test_side_files_name_what_load_reads_and_save_writes(saved, tmp_path):
    _, directory, _ = saved
    assert serialize.side_files(directory / "model.txt") == [directory / "model.npz"]
    assert serialize.side_files(directory / "model.txt", "save") == [directory / "model.npz"]
    assert serialize.side_files(directory / "none.ir", "save") == [directory / "none.npz"]
    assert serialize.side_files(directory / "none.ir") == []  # does not exist: reads nothing
    irpass.save(small_mod(), tmp_path / "small.txt")
    assert serialize.side_files(tmp_path / "small.txt") == []  # no metadata_file header
    assert formats.model_files(directory / "model.txt") == [directory / "model.txt",
                                                             directory / "model.npz"]
    with pytest.raises(ValueError, match="for_"):
        serialize.side_files(directory / "model.txt", "write")


# -- failed saves -----------------------------------------------------------------------------


def test_a_failed_constants_write_leaves_the_old_files(saved, monkeypatch):
    mod, directory, files = saved

    def savez_then_fail(f, **arrays):
        f.write(b"PK half an archive")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(np, "savez", savez_then_fail)
    with pytest.raises(OSError, match="No space left"):
        irpass.save(big_mod(seed=1), directory / "model.txt")
    monkeypatch.undo()
    assert_untouched(mod, directory, files)


def test_a_failed_text_write_leaves_the_old_files(saved, monkeypatch):
    mod, directory, files = saved
    real_write_text = Path.write_text

    def write_half_then_fail(self, text, *args, **kwargs):
        real_write_text(self, text[: len(text) // 2], *args, **kwargs)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "write_text", write_half_then_fail)
    with pytest.raises(OSError, match="No space left"):
        irpass.save(small_mod(), directory / "model.txt")
    monkeypatch.undo()
    assert_untouched(mod, directory, files)


def test_atomic_path_renames_only_a_complete_file(tmp_path):
    target = tmp_path / "out.bin"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError), formats.atomic_path(target) as tmp:
        assert tmp.parent == tmp_path and tmp != target
        tmp.write_bytes(b"ne")
        raise RuntimeError("interrupted")
    assert snapshot(tmp_path) == {"out.bin": b"old"}
    with formats.atomic_path(target) as tmp:
        tmp.write_bytes(b"new")
        assert target.read_bytes() == b"old"
    assert snapshot(tmp_path) == {"out.bin": b"new"}
    # the renamed file must not stay private, as a temporary file would be (mkstemp's 0600)
    (tmp_path / "plain").write_text("x")
    want = stat.S_IMODE(os.stat(tmp_path / "plain").st_mode)
    irpass.save(big_mod(), tmp_path / "model.txt")
    for name in ("out.bin", "model.txt", "model.npz"):
        assert stat.S_IMODE(os.stat(tmp_path / name).st_mode) == want, name
    # a file replaced keeps its permissions, a symlink keeps pointing to the file
    os.chmod(target, 0o600)
    (tmp_path / "link.bin").symlink_to("out.bin")
    with formats.atomic_path(tmp_path / "link.bin") as tmp:
        tmp.write_bytes(b"newer")
    assert (tmp_path / "link.bin").is_symlink() and target.read_bytes() == b"newer"
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o600
