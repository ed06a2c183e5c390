"""The core's config options are known to a context before the modules that read them are
imported (those are imported on first use since start-up became lazy)."""

import subprocess
import sys


def test_core_options_known_in_a_fresh_process():
    code = (
        "from irpass.transform import PassContext\n"
        "import sys\n"
        "assert 'irpass.instrument.printing' not in sys.modules\n"
        "assert 'irpass.transform.rewrites' not in sys.modules\n"
        "ctx = PassContext(config={'print.elide_constants': 4, 'verify_each': True,\n"
        "                          'rewrites.disable': ['x'], 'rewrites.max_rounds': 3})\n"
        "key = 'print.elide_constants'\n"
        "print(ctx.config[key], PassContext().config[key])\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["4", "16"]
