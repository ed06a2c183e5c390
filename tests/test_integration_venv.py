"""irpass and the example pass pack pip-installed into a fresh virtual environment.

What a user does: ``pip install irpass irpass-example-pack``, then the
``irpass`` command. Checked through the venv's own ``bin/irpass``: the pack's
passes, instrument and pipeline slot appear; a config file or ``-p no:NAME``
removes plugins; a broken pack (tests/fixtures/broken-pack) is reported and
skipped, or is an error with ``--strict-plugins``.

No network: the wheels are built from (a copy of) the checkout with this
interpreter's setuptools (``--no-build-isolation``; the test extra pins
``setuptools>=70.1``, which builds wheels without the ``wheel`` package), and
pip installs them with ``--no-index --no-deps``. Marked ``integration``:
``pytest -m "not integration"`` skips it.
"""

from __future__ import annotations

import importlib.metadata as metadata
import os
import re
import shutil
import subprocess
import sys
import venv
from dataclasses import dataclass
from pathlib import Path

import irpass
import numpy as np
import pytest

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[1]
PACK = Path("contrib", "irpass-example-pack")
BROKEN = Path("tests", "fixtures", "broken-pack")

# irpass's runtime dependencies, taken from this environment (see _expose_dependencies)
DEPENDENCIES = ("numpy", "pluggy") + (("tomli",) if sys.version_info < (3, 11) else ())

# Left out of the copy of the checkout the wheels are built from: VCS data, other
# environments (.ci/run makes .venv-ci inside the checkout), stale build output.
_NOT_SOURCES = shutil.ignore_patterns(
    ".git", ".venv*", ".tox", "build", "dist", "*.egg-info", "__pycache__",
    ".pytest_cache", ".hypothesis", ".ruff_cache",
)


@dataclass
class Venv:
    """A virtual environment with irpass and the example pack installed."""

    root: Path
    python: Path
    irpass: Path
    broken_site: Path  # irpass-broken-pack, installed with --target: on PYTHONPATH on demand
    env: dict[str, str]

    def run(self, *args: str, cwd: Path | None = None, broken: bool = False,
            check: bool = False) -> subprocess.CompletedProcess[str]:
        """``bin/irpass ARGS`` (or ``bin/python ARGS`` when args[0] is "-c") in ``cwd``."""
        env = dict(self.env)
        if broken:
            env["PYTHONPATH"] = str(self.broken_site)
        exe = self.python if args[:1] == ("-c",) else self.irpass
        proc = subprocess.run([str(exe), *args], cwd=cwd or self.root / "work", env=env,
                              capture_output=True, text=True, timeout=120)
        if check:
            assert proc.returncode == 0, _show(proc)
        return proc


def _show(proc: subprocess.CompletedProcess[str]) -> str:
    return (f"{' '.join(map(str, proc.args))} -> exit {proc.returncode}\n"
            f"--- stdout\n{proc.stdout[-3000:]}\n--- stderr\n{proc.stderr[-3000:]}")


def _clean_env() -> dict[str, str]:
    """This process's environment without what would reach into it from the venv:
    irpass settings, PYTHONPATH and friends, pip configuration, the active venv."""
    drop = ("IRPASS_", "PYTHON", "PIP_", "VIRTUAL_ENV", "CONDA_", "__PYVENV")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    # PIP_CONFIG_FILE=devnull: no pip.conf of the machine (index URLs, user=true, ...) applies
    env.update(PYTHONNOUSERSITE="1", PYTHONUTF8="1", PIP_NO_INDEX="1", PIP_CONFIG_FILE=os.devnull,
               PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1", COLUMNS="200")
    return env


def _check_build_tools() -> None:
    """Skip (fail under CI, where the test extra is installed) without a wheel builder."""
    try:
        version = metadata.version("setuptools")
    except metadata.PackageNotFoundError:
        version = None
    if version is not None:
        major, minor = (int(p) for p in re.findall(r"\d+", version)[:2])
        if (major, minor) >= (70, 1) or _installed("wheel"):
            return
    why = (f"setuptools {version} needs the 'wheel' package" if version else "no setuptools")
    message = (f"{why} to build wheels without build isolation; the test extra asks for "
               "setuptools>=70.1 (pip install -e '.[test]')")
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def _installed(name: str) -> bool:
    try:
        metadata.distribution(name)
    except metadata.PackageNotFoundError:
        return False
    return True


def _pip(python: Path | str, *args: str, env: dict[str, str]) -> None:
    proc = subprocess.run([str(python), "-m", "pip", *args], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, _show(proc)


def _expose_dependencies(deps_dir: Path, site_packages: Path) -> None:
    """Make this environment's numpy and pluggy (and tomli) importable in the venv.

    pip may not download them (no network), and ``--system-site-packages``
    would expose everything installed here too -- above all the irpass being
    tested from the checkout (an editable install) and any other pass pack,
    whose entry points would then load in the venv and make the test
    meaningless. So ``deps_dir`` gets symlinks to exactly these
    distributions' top-level packages and ``.dist-info`` directories (found
    through their installed file lists), and a ``.pth`` file in the venv puts
    ``deps_dir`` on its ``sys.path``.
    """
    deps_dir.mkdir()
    for name in DEPENDENCIES:
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            pytest.skip(f"{name} is not installed here, and the venv may not download it")
        if not dist.files:
            pytest.skip(f"{name} has no installed file list (RECORD); cannot link it")
        # the first part of every file path: the package, its .libs, the .dist-info;
        # paths leaving site-packages ("../../bin/f2py") are scripts, not needed
        tops = {f.parts[0] for f in dist.files if f.parts and f.parts[0] != ".."}
        for top in sorted(tops):
            source = Path(dist.locate_file(top))
            target = deps_dir / top
            if source.exists() and not target.exists():
                target.symlink_to(source, target_is_directory=source.is_dir())
    (site_packages / "_irpass_test_dependencies.pth").write_text(f"{deps_dir}\n")


@pytest.fixture(scope="module")
def env(tmp_path_factory) -> Venv:
    """Build the three wheels, make the venv, install irpass and the pack (once per module)."""
    _check_build_tools()
    root = tmp_path_factory.mktemp("venv-integration")
    clean = _clean_env()

    # Build from a copy: setuptools writes build/ and *.egg-info next to the sources,
    # which must not litter the checkout (nor may a stale build/ end up in a wheel).
    src = root / "src"
    shutil.copytree(REPO, src, ignore=_NOT_SOURCES)
    wheels = root / "wheels"
    _pip(sys.executable, "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(wheels),
         str(src), str(src / PACK), str(src / BROKEN), env=clean)

    def wheel(dist: str) -> str:
        [path] = wheels.glob(f"{dist}-*.whl")
        return str(path)

    venv.EnvBuilder(with_pip=True, clear=True).create(root / "venv")
    bindir = "Scripts" if os.name == "nt" else "bin"
    python = root / "venv" / bindir / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        env=clean, capture_output=True, text=True, check=True,
    ).stdout.strip()
    _expose_dependencies(root / "deps", Path(site))
    _pip(python, "install", "--no-index", "--no-deps", "-q",
         wheel("irpass"), wheel("irpass_example_pack"), env=clean)
    # the broken pack goes to a directory of its own, put on PYTHONPATH only by the
    # tests about it: every other test sees a clean install, in any test order
    _pip(python, "install", "--no-index", "--no-deps", "-q", "--target",
         str(root / "broken-site"), wheel("irpass_broken_pack"), env=clean)
    (root / "work").mkdir()
    return Venv(root, python, root / "venv" / bindir / "irpass", root / "broken-site", clean)


def rows(text: str, first: str) -> list[str]:
    """The lines of a table whose first column is ``first``."""
    return [line for line in text.splitlines() if line.split()[:1] == [first]]


def row(text: str, first: str) -> str:
    found = rows(text, first)
    assert len(found) == 1, f"expected one row for {first!r} in:\n{text}"
    return found[0]


def names_dist(text: str, dist: str, version: str = "0.1.0") -> bool:
    """Whether ``text`` names distribution ``dist`` and its version; names compare as
    pip compares them (case, and '-', '_', '.' alike)."""
    name = r"[-_.]+".join(map(re.escape, re.split(r"[-_.]+", dist)))
    return re.search(rf"\b{name}[ =]+{re.escape(version)}\b", text, flags=re.I) is not None


def warnings_of(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("irpass: warning:")]


# -- the install ----------------------------------------------------------------------


def test_venv_runs_the_installed_wheels_only(env):
    version = env.run("--version", check=True)
    venv_dir = str((env.root / "venv").resolve())
    assert venv_dir in version.stdout  # irpass from the venv, not the checkout
    probe = env.run("-c", "import importlib.util as u, irpass_example_pack as p; "
                          "print(p.__file__); print(u.find_spec('pytest') is None)", check=True)
    where, no_pytest = probe.stdout.split()
    assert Path(where).resolve().is_relative_to(venv_dir)
    assert no_pytest == "True"  # nothing else of the test environment leaked in


# -- the pack, installed --------------------------------------------------------------


def test_plugins_lists_the_pack_with_its_distribution(env):
    proc = env.run("plugins", "-v", check=True)
    line = row(proc.stdout, "example")
    assert "loaded" in line.split()
    assert names_dist(line, "irpass-example-pack")
    assert "entry point" in line
    for part in ("2 passes", "1 instrument", "1 config option", "1 pipeline insertion"):
        assert part in line
    details = proc.stdout.split(line, 1)[1]
    for contribution in ("FoldAddZero", "OpStatistics", "op-stats", "example.max_rewrites"):
        assert contribution in details
    assert "loaded" in row(proc.stdout, "std").split()
    assert warnings_of(proc.stderr) == []


def test_passes_lists_the_pack_passes(env):
    proc = env.run("passes", check=True)
    fold = row(proc.stdout, "FoldAddZero").split()
    assert fold[1] == "1" and "example" in fold
    stats = row(proc.stdout, "OpStatistics").split()
    assert stats[1] == "0" and "example" in stats
    assert "std" in row(proc.stdout, "InferType").split()


def pipeline_row(stdout: str, name: str) -> list[str]:
    """The row of pass ``name`` in ``irpass pipeline`` output (its first column is the number)."""
    found = [line.split() for line in stdout.splitlines() if line.split()[1:2] == [name]]
    assert len(found) == 1, f"expected one row for {name!r} in:\n{stdout}"
    return found[0]


def test_pipeline_shows_the_pack_insertion(env):
    proc = env.run("pipeline", "--opt-level", "3", check=True)
    fold = pipeline_row(proc.stdout, "FoldAddZero")
    assert "example" in fold and "simplify" in fold
    order = [line.split()[1] for line in proc.stdout.splitlines()
             if line.split()[:1] and line.split()[0].isdigit()]
    assert order.index("InferType") < order.index("FoldAddZero")
    level0 = env.run("pipeline", "--opt-level", "0", check=True).stdout
    # an opt_level 1 pass: not a row, but listed as left out with why
    assert not [line for line in level0.splitlines() if line.split()[1:2] == ["FoldAddZero"]]
    [left_out] = [line for line in level0.splitlines() if "FoldAddZero" in line]
    assert "example" in left_out and "opt_level" in left_out


def test_optimize_runs_the_pack_pass_and_instrument(env, tmp_path):
    x = irpass.var("x", shape=(2, 3))
    zeros = irpass.const(np.zeros((2, 3), dtype="float32"))
    model = tmp_path / "model.ir"
    model.write_text(str(irpass.IRModule.from_expr(
        irpass.Function([x], irpass.op.tanh(x + zeros)))))
    # std's SimplifyExpr would drop the add first; leave it to the pack's pass
    proc = env.run("optimize", str(model), "-O", "3", "--instrument", "op-stats", "-q",
                   "--disable-pass", "SimplifyExpr", "--check", check=True)
    assert "op-stats: FoldAddZero: add -1" in proc.stderr
    assert re.search(r"op-stats: \d+ pass\(es\) ran; op calls 2 -> 1", proc.stderr)
    assert "add" not in proc.stdout and "tanh" in proc.stdout
    builtin = env.run("optimize", "--instrument", "op-stats", "-q", check=True)
    assert "op-stats:" in builtin.stderr


def test_config_file_sets_the_pack_option_and_instrument(env, tmp_path):
    (tmp_path / "irpass.toml").write_text(
        # std's SimplifyExpr, and Canonicalize with the pack's rule set, would fold x + 0 too
        'disabled_pass = ["SimplifyExpr", "Canonicalize"]\n\n'
        '[config.example]\nmax_rewrites = 0\n\n'
        '[instruments.op-stats]\noutput = "stats.txt"\nall_passes = true\n'
    )
    model = tmp_path / "model.ir"
    v = irpass.var("x", shape=(2,))
    model.write_text(str(irpass.IRModule.from_expr(
        irpass.Function([v], v + irpass.const(np.zeros(2, dtype="float32"))))))
    proc = env.run("optimize", "model.ir", "-O", "3", "-q", cwd=tmp_path, check=True)
    assert "add" in proc.stdout  # max_rewrites = 0: nothing folded
    stats = (tmp_path / "stats.txt").read_text()
    assert "op-stats: FoldAddZero: no change" in stats
    (tmp_path / "irpass.toml").write_text('[config.example]\nmax_rewrites = "many"\n')
    bad = env.run("optimize", "model.ir", "-q", cwd=tmp_path)
    assert bad.returncode == 2, _show(bad)
    assert "max_rewrites" in bad.stderr and "Traceback" not in bad.stderr


# -- switching plugins off ------------------------------------------------------------


def test_config_file_disable_removes_the_pack(env, tmp_path):
    (tmp_path / "irpass.toml").write_text('[plugins]\ndisable = ["example"]\n')
    plugins = env.run("plugins", cwd=tmp_path, check=True)
    assert "blocked" in row(plugins.stdout, "example").split()
    passes = env.run("passes", cwd=tmp_path, check=True)
    assert "FoldAddZero" not in passes.stdout and "OpStatistics" not in passes.stdout
    assert "InferType" in passes.stdout
    pipeline = env.run("pipeline", "--opt-level", "3", cwd=tmp_path, check=True)
    assert "FoldAddZero" not in pipeline.stdout and "InferType" in pipeline.stdout
    instrument = env.run("optimize", "--instrument", "op-stats", "-q", cwd=tmp_path)
    assert instrument.returncode == 2, _show(instrument)
    assert "op-stats" in instrument.stderr


def test_dash_p_no_std_removes_the_standard_passes(env):
    passes = env.run("-p", "no:std", "passes", check=True)
    assert "InferType" not in passes.stdout
    assert "FoldAddZero" in passes.stdout  # the pack does not depend on std
    plugins = env.run("-p", "no:std", "plugins", check=True)
    assert "blocked" in row(plugins.stdout, "std").split()
    pipeline = env.run("-p", "no:std", "pipeline", "--opt-level", "3", check=True)
    assert "InferType" not in pipeline.stdout
    assert "simplify" in pipeline_row(pipeline.stdout, "FoldAddZero")


# -- a broken pack --------------------------------------------------------------------


def test_broken_pack_is_reported_and_skipped(env):
    proc = env.run("plugins", broken=True)
    assert proc.returncode == 0, _show(proc)
    for name in ("broken", "broken-hook"):
        line = row(proc.stdout, name)
        assert "failed" in line.split()
        assert names_dist(line, "irpass-broken-pack")
    assert "irpass_no_such_module_for_the_broken_pack" in proc.stdout
    assert "irpass_register_passes" in proc.stdout
    warned = warnings_of(proc.stderr)
    assert len(warned) == 2, proc.stderr
    assert sum("'broken'" in w for w in warned) == 1
    assert sum("'broken-hook'" in w for w in warned) == 1
    assert all(names_dist(w, "irpass-broken-pack") for w in warned)
    assert "Traceback" not in proc.stderr
    assert "loaded" in row(proc.stdout, "example").split()  # the others still load


def test_broken_pack_does_not_stop_other_commands(env):
    proc = env.run("passes", broken=True)
    assert proc.returncode == 0, _show(proc)
    assert "FoldAddZero" in proc.stdout
    assert len(warnings_of(proc.stderr)) == 2


def test_strict_plugins_makes_a_broken_pack_an_error(env):
    proc = env.run("--strict-plugins", "plugins", broken=True)
    assert proc.returncode == 2, _show(proc)
    assert "irpass: error:" in proc.stderr and "broken" in proc.stderr
    assert "Traceback" not in proc.stderr
