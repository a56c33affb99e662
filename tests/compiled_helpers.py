"""Helpers for compiler tests: define functions from source text the compiler can read."""

from __future__ import annotations

import itertools
import linecache
import textwrap

_counter = itertools.count()


def define(source: str, namespace: dict | None = None, name: str | None = None):
    """Execute ``source`` as if from a file (registered in linecache, as Jupyter does)."""
    source = textwrap.dedent(source)
    filename = f"<test-source-{next(_counter)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    env = {} if namespace is None else namespace
    exec(compile(source, filename, "exec"), env)
    if name is None:
        name = next(line.split("(")[0][4:] for line in source.splitlines()
                    if line.startswith("def "))
    return env[name]
