"""``python -m srcgrad``: see :mod:`srcgrad.cli`."""

import sys

from srcgrad.cli import main

if __name__ == "__main__":
    sys.exit(main())
