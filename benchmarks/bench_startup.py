"""Start-up time of the commands a user types first (issue 24, "Fast start").

Each figure is the median (and the fastest) of ``--runs`` fresh processes, run one
after the other, of:

- ``python -c pass``: the interpreter alone, the floor under everything else;
- ``python -c "import irpass"``;
- ``irpass --version``;
- ``irpass passes`` (loads the plugins: every installed entry point -- here also the
  ONNX pack's, which imports onnx -- then ``std`` and ``instruments``);
- ``irpass passes`` with irpass's own plugins only (``IRPASS_DISABLE_PLUGIN_AUTOLOAD=1
  IRPASS_PLUGINS=instruments,std``), what the issue's target is about;

and whether each imported numpy (``-X importtime`` of one more run). Targets:
``import irpass`` under 100 ms, the two commands under 150 ms. ``--importtime N``
also prints each command's N slowest imports (cumulative, as ``python -X importtime``
reports them), which is where to look when a figure grows.

    python benchmarks/bench_startup.py --runs 20 --importtime 8

Bytecode: a user's installed irpass imports from ``.pyc`` caches that ``pip`` or the
first run wrote, so each command runs once first with a cache directory of this
script's own (``PYTHONPYCACHEPREFIX``, ``PYTHONDONTWRITEBYTECODE`` unset) and is then
timed against it; ``--no-bytecode`` times compiling every module from source on every
run instead (what ``PYTHONDONTWRITEBYTECODE=1`` without caches does, as in this
project's sandbox: several times slower, and more so the more code is imported).

Wall time on a shared machine is noisy: compare medians of many runs, taken in
the same minute.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def commands(cache: str | None) -> dict[str, tuple[list[str], dict[str, str]]]:
    """The measured commands and their environments, by label (``irpass`` as installed
    next to this Python); ``cache``: the bytecode cache directory (None: no caches)."""
    irpass = shutil.which("irpass", path=os.path.dirname(sys.executable)) or "irpass"
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("IRPASS_PLUGINS", "IRPASS_DISABLE_PLUGIN_AUTOLOAD", "IRPASS_CONFIG")
    }
    if cache is None:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env.pop("PYTHONPYCACHEPREFIX", None)
    else:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = cache
    own = {**env, "IRPASS_DISABLE_PLUGIN_AUTOLOAD": "1", "IRPASS_PLUGINS": "instruments,std"}
    return {
        "python -c pass": ([sys.executable, "-c", "pass"], env),
        "import irpass": ([sys.executable, "-c", "import irpass"], env),
        "irpass --version": ([irpass, "--version"], env),
        "irpass passes": ([irpass, "passes"], env),
        "irpass passes (own)": ([irpass, "passes"], own),
    }


def wall_times(cmd: list[str], env: dict[str, str], runs: int) -> list[float]:
    """Wall time of each of ``runs`` runs of ``cmd``, in milliseconds."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
        times.append((time.perf_counter() - start) * 1e3)
    return times


def import_times(cmd: list[str], env: dict[str, str]) -> list[tuple[int, str]]:
    """``(cumulative microseconds, module)`` of every import of one run of ``cmd``."""
    env = {**env, "PYTHONPROFILEIMPORTTIME": "1"}
    done = subprocess.run(
        cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=True
    )
    rows = []
    for line in done.stderr.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and line.startswith("import time:") and parts[1].strip().isdigit():
            rows.append((int(parts[1]), parts[2].strip()))
    return rows


def main(argv: list[str] | None = None) -> None:
    """Print the table (and, with ``--importtime``, the slowest imports)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15, help="fresh processes per command")
    parser.add_argument(
        "--importtime",
        type=int,
        default=0,
        metavar="N",
        help="also print the N slowest imports of each command",
    )
    parser.add_argument(
        "--no-bytecode",
        action="store_true",
        help="compile every module from source on every run (no .pyc caches)",
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="irpass-pycache-") as cache:
        table(commands(None if args.no_bytecode else cache), args.runs, args.importtime)


def table(cmds: dict[str, tuple[list[str], dict[str, str]]], runs: int, importtime: int) -> None:
    """Time each command (after one run that fills the bytecode cache) and print a row."""
    print(f"{'command':<20} {'median ms':>10} {'min ms':>8}  numpy imported")
    for label, (cmd, env) in cmds.items():
        wall_times(cmd, env, 1)  # writes the .pyc files (when caching)
        times = wall_times(cmd, env, runs)
        imports = import_times(cmd, env)
        numpy = "yes" if any(name == "numpy" for _, name in imports) else "no"
        print(f"{label:<20} {statistics.median(times):>10.1f} {min(times):>8.1f}  {numpy}")
        if importtime:
            for us, name in sorted(imports, reverse=True)[:importtime]:
                print(f"    {us / 1e3:8.1f} ms  {name}")


if __name__ == "__main__":
    main()
