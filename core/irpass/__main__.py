"""``python -m irpass``: the ``irpass`` command."""

import sys

from irpass.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
