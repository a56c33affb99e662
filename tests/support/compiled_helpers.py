"""Helpers for compiler tests: define functions from source text the compiler can read."""

from __future__ import annotations

import itertools
import linecache
import textwrap

import numpy as np
from conftest import numerical_grad

import srcgrad
from srcgrad.transforms.fallback import eager_transform

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


def arguments(spec, rng):
    """Arguments from a spec: a tuple is the shape of a random array, anything else itself."""
    args = []
    for item in spec:
        if isinstance(item, tuple):
            args.append(rng.uniform(0.2, 1.4, item))
        else:
            args.append(item)
    return args


def check_three_ways(fn, args):
    """Compiled (strict) == eager == finite differences for every array argument; the
    arguments are never changed.  Returns the compiled transform."""
    wrt = tuple(i for i, a in enumerate(args) if isinstance(a, np.ndarray))
    snapshot = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    compiled = srcgrad.grad(fn, wrt=wrt, strict=True)
    got = compiled(*args)
    got = got if isinstance(got, tuple) else (got,)
    for a, b in zip(args, snapshot):
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, b)          # never mutated
    eager = eager_transform(fn, "grad", list(args), wrt, False)
    for k, i in enumerate(wrt):
        np.testing.assert_allclose(got[k], eager[k], rtol=1e-9, atol=1e-11)
        def f(x, i=i):            # NumPy itself writes into the arguments: hand it copies
            values = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
            values[i] = x.copy()
            return float(fn(*values))
        fd = numerical_grad(f, [args[i].copy()], 0)
        np.testing.assert_allclose(got[k], fd, rtol=1e-5, atol=1e-7)
    return compiled


def check_case(source: str, spec: list, others: list) -> None:
    """Define ``source`` and check it three ways on the arguments of ``spec`` and ``others``."""
    fn = define(source, {"np": np})
    rng = np.random.default_rng(0)
    for s in [spec, *others]:
        check_three_ways(fn, arguments(s, rng))
