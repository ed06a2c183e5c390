"""What plugins cost at start-up: importing irpass, loading the plugins, running the CLI.

Each figure is the median of several fresh interpreters (``python -X importtime``
is the tool for finding out where an import's time goes):

- ``import irpass`` alone (no plugin is loaded by the import);
- ``import irpass`` + ``irpass.plugins.load()`` (entry-point discovery, importing
  ``std`` and ``instruments``, committing what they register);
- the same with ``IRPASS_DISABLE_PLUGIN_AUTOLOAD=1`` (the core alone);
- ``irpass passes`` and ``irpass optimize --example mlp -q`` end to end;
- in this process (median of many, plugin modules already imported): the
  entry-point scan alone, and a whole ``PluginManager.load()`` with autoload on
  and off -- fresh processes are too noisy to see a few milliseconds.

    python benchmarks/bench_plugin_load.py --repeat 5
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

from irpass.plugins import PluginSettings
from irpass.plugins.manager import PluginManager, entry_points
from irpass.testing.plugins import RegistrySnapshot


def median_ms(cmd: list[str], repeat: int, env: dict[str, str] | None = None) -> float:
    """Median wall time of ``cmd`` over ``repeat`` runs, in milliseconds."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def in_process_ms(run: Callable[[], object], repeat: int) -> float:
    """Median time of ``run()`` in this process, in milliseconds; registries restored each time."""
    times = []
    for _ in range(repeat):
        saved = RegistrySnapshot.take()
        saved.core_only().restore()
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
        saved.restore()
    return statistics.median(times) * 1e3


def main() -> None:
    """Print the start-up figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    n = parser.parse_args().repeat
    py = sys.executable
    env = {k: v for k, v in os.environ.items() if not k.startswith("IRPASS_")}
    core_only = {**env, "IRPASS_DISABLE_PLUGIN_AUTOLOAD": "1"}
    irpass_cmd = shutil.which("irpass") or ""
    rows = [
        ("python -c pass (interpreter floor)", median_ms([py, "-c", "pass"], n, env)),
        ("import irpass", median_ms([py, "-c", "import irpass"], n, env)),
        ("import irpass + plugins.load()",
         median_ms([py, "-c", "import irpass; irpass.plugins.load()"], n, env)),
        ("  ... with IRPASS_DISABLE_PLUGIN_AUTOLOAD=1",
         median_ms([py, "-c", "import irpass; irpass.plugins.load()"], n, core_only)),
    ]
    if irpass_cmd:
        rows += [
            ("irpass passes", median_ms([irpass_cmd, "passes"], n, env)),
            ("irpass optimize --example mlp -q",
             median_ms([irpass_cmd, "optimize", "--example", "mlp", "-q"], n, env)),
        ]
    many = max(15, 3 * n)
    rows += [
        ("in process: entry-point scan", in_process_ms(entry_points, many)),
        ("in process: PluginManager.load(), autoload on",
         in_process_ms(lambda: PluginManager(PluginSettings()).load(), many)),
        ("in process: PluginManager.load(), autoload off",
         in_process_ms(lambda: PluginManager(PluginSettings(autoload=False)).load(), many)),
    ]
    print(f"start-up, median of {n} fresh processes ({many} runs in process)")
    print(f"{'what':45s} {'ms':>8s}")
    for label, ms in rows:
        print(f"{label:45s} {ms:8.1f}")


if __name__ == "__main__":
    main()
