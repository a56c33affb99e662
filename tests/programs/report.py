"""Print the corpus table and totals: ``python -m tests.programs.report [program ...]``
(from the repository root; ``python tests/programs/report.py`` works too)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path


def load_harness():
    """The harness, imported by its path (tests/ is not a package)."""
    name = "srcgrad_corpus_harness"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name("harness.py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


if __name__ == "__main__":
    sys.exit(load_harness().main())
