"""``python -m srcgrad``: see :mod:`srcgrad.tools.cli`."""

import sys

from srcgrad.tools.cli import main

if __name__ == "__main__":
    sys.exit(main())
