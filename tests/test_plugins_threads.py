"""Plugin loading from several threads at once (issue 18).

Each check runs in a fresh interpreter, where ``import irpass`` has loaded no
plugin yet, so the threads really race for the lazy load. A round starts many
threads at a barrier, each looking up a std pass; between rounds the registries
go back to the core's own (``RegistrySnapshot.core_only``), so the next round
loads again. A lookup that finds the plugins half-loaded fails with
``KeyError``; the checks pass only when no lookup of any round failed, whatever
the scheduling (they need no sleep and no timing).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from irpass.testing.plugins import OWN_PLUGINS, plugin_environ

ROUNDS = 40
THREADS = 8

RACE = textwrap.dedent("""
    import sys
    import threading

    import irpass
    from irpass.testing.plugins import RegistrySnapshot

    ROUNDS, THREADS = int(sys.argv[1]), int(sys.argv[2])
    LOOKUPS = sys.argv[3].split(",")
    core = RegistrySnapshot.take().core_only()
    assert irpass.plugins._manager is None, "plugins loaded by the import alone"
    failed = []
    for round_ in range(ROUNDS):
        core.restore()  # no plugin loaded: the first lookup of the round loads them
        barrier = threading.Barrier(THREADS)

        def work(i):
            barrier.wait()
            name = LOOKUPS[i % len(LOOKUPS)]
            try:
                assert irpass.transform.get_pass(name).info.name == name
                assert name in irpass.transform.list_passes()
            except Exception as exc:
                failed.append(f"round {round_}, thread {i}, {name}: {exc!r}")

        threads = [threading.Thread(target=work, args=(i,)) for i in range(THREADS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert irpass.plugins.get_plugin_manager().record("std").status == "loaded"
    print(len(failed), "failed lookups")
    print("\\n".join(failed[:5]))
    sys.exit(1 if failed else 0)
""")


def _run(script: str, *args: str, env: dict[str, str], timeout: float = 120):
    return subprocess.run([sys.executable, "-c", script, *map(str, args)], env=env,
                          capture_output=True, text=True, timeout=timeout)


def test_threads_racing_for_the_first_lookup_all_find_the_pass():
    proc = _run(RACE, ROUNDS, THREADS, "FoldConstant", env=plugin_environ(OWN_PLUGINS))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert proc.stdout.startswith("0 failed lookups")


# A plugin that, while it is being loaded, uses the registries itself: that thread
# holds the loading lock and must get through (no deadlock), the other threads wait.
REENTRANT_PLUGIN = textwrap.dedent("""
    import irpass
    import irpass.plugins
    from irpass.plugins import hookimpl
    from irpass.transform import module_pass

    # at import, while the plugins load: lookups that would load them again
    assert "Identity" in irpass.transform.list_passes()
    assert irpass.plugins.get_plugin_manager() is irpass.plugins.load()


    @module_pass(opt_level=0, name="Reentrant")
    def Reentrant(mod, ctx):
        return mod


    @hookimpl
    def irpass_register_passes():
        irpass.transform.get_pass("Identity")  # the core's: already there
        irpass.transform.list_passes()
        return [Reentrant]
""")


def test_a_plugin_using_the_registries_while_it_loads_does_not_deadlock(tmp_path):
    (tmp_path / "reentrant_plugin.py").write_text(REENTRANT_PLUGIN)
    env = plugin_environ((*OWN_PLUGINS, "reentrant_plugin"))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tmp_path), env.get("PYTHONPATH")]))
    proc = _run(RACE, 10, THREADS, "FoldConstant,Reentrant", env=env, timeout=120)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert proc.stdout.startswith("0 failed lookups")
