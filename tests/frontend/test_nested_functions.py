"""Nested functions, lambdas, helpers and lists where NumPy expects arrays: each
compiles strict and equals the eager engine and finite differences, or is refused with a
CompileError naming the construct."""

from __future__ import annotations

import time

import numpy as np
import pytest
from compiled_helpers import check_three_ways, define
from conftest import numerical_grad

import srcgrad

COMPILED = {
    "a closure over an argument": """
        def f(x):
            def inner(y):
                return y * x
            return np.sum(inner(x) ** 2)
        """,
    "a closure called in a loop": """
        def f(x):
            W = np.ones((3, 3)) * 0.5 + np.eye(3)
            def layer(h):
                z = h @ W
                return np.tanh(z)
            h = x
            for i in range(3):
                h = layer(h) + x * i
            return np.sum(h)
        """,
    "a closure called in a while loop and a branch": """
        def f(x):
            scale = x * 2.0
            def g(v):
                return v * scale
            out = 0.0
            i = 0
            while i < 2:
                if i > 0:
                    out = out + np.sum(g(x))
                i += 1
            return out
        """,
    "a nested function with a branch and early return": """
        def f(x):
            def act(v):
                if np.sum(v) > 0:
                    return np.tanh(v)
                return v * 0.5
            return np.sum(act(x)) + np.sum(act(-x))
        """,
    "a nested function returning a tuple": """
        def f(x):
            def two(v):
                return v * 2.0, (v, np.sum(v))
            a, (b, s) = two(x)
            return np.sum(a * b) * s
        """,
    "a nested function in a nested function": """
        def f(x):
            def outer(v):
                def inner(u):
                    return u * v
                return inner(v) + 1.0
            return np.sum(outer(x))
        """,
    "a nested function with literal defaults": """
        def f(x):
            def g(v, p=2.0):
                return np.sum(v ** p)
            return g(x) + g(x, p=3.0) + g(x, 1.0)
        """,
    "a lambda with a default, bound to a name": """
        def f(x):
            sq = lambda v, p=2: np.sum(v ** p)
            return sq(x) + sq(x, 3)
        """,
    "a lambda called in a loop": """
        def f(x):
            c = 0.5
            g = lambda v: v * c
            h = x
            for i in range(3):
                h = g(h) + x
            return np.sum(h)
        """,
    "a closure reading a name a loop assigned before": """
        def f(x):
            c = x * 2.0
            for i in range(2):
                c = x * 5.0
            def g(v):
                return v * c
            return np.sum(g(x))
        """,
    "a nested function whose local shadows an outer name": """
        def f(x):
            w = x * 3.0
            def g(v):
                w = v * 2.0
                w += 1.0
                return w
            return np.sum(g(x) * w)
        """,
    "a helper returning a nested tuple": """
        def f(x):
            a, (b, s) = two(x)
            return np.sum(a * b) * s
        """,
}


LIST_OPERANDS = {
    "np.sum of a comprehension over an array": """
        def f(x):
            return np.sum([v * 3.0 for v in x])
        """,
    "np.mean of a comprehension of sums": """
        def f(x):
            return np.mean([np.sum(v) for v in [x, x * 2.0]])
        """,
    "np.mean, np.var and np.std of literals": """
        def f(x):
            return np.mean([x[0], x[1] + 2]) + np.var((x[0], x[1] + 2)) + np.std([x[0], x[2]])
        """,
    "np.dot and np.maximum of list literals": """
        def f(x):
            return np.dot([x[0], x[1], 1.0], x) + np.sum(np.maximum([x[0], x[1]], 0.0))
        """,
    "np.max of a list of sums": """
        def f(x):
            return np.max([np.sum(x), np.sum(x * x)])
        """,
    "a closure using a comprehension": """
        def f(x):
            def g(v):
                return np.array([u * 3.0 for u in v])
            return np.sum(g(x) ** 2)
        """,
}
"""A list given where NumPy expects an array is stacked, as ``np.asarray`` does.  The eager
engine cannot run these yet (it refuses a Tensor turned into a plain array), so they are
checked compiled, strict and default, against finite differences."""


def _two(v):
    return (v, (v * 2.0, np.sum(v)))


@pytest.mark.parametrize("case", sorted(COMPILED))
def test_compiles_exactly(case):
    fn = define(COMPILED[case], {"np": np, "two": _two})
    check_three_ways(fn, [np.array([0.3, -0.7, 1.1])])


@pytest.mark.parametrize("case", sorted(LIST_OPERANDS))
def test_lists_as_array_operands(case):
    fn = define(LIST_OPERANDS[case], {"np": np})
    x = np.array([0.3, -0.7, 1.1])
    fd = numerical_grad(lambda a: float(fn(a)), [x.copy()], 0)
    for strict in (True, False):
        got = srcgrad.grad(fn, strict=strict)(x)
        np.testing.assert_array_equal(x, [0.3, -0.7, 1.1])          # never mutated
        np.testing.assert_allclose(got, fd, rtol=1e-6, atol=1e-8)


def test_lists_as_array_operands_eager():
    fn = define(LIST_OPERANDS["np.mean of a comprehension of sums"], {"np": np})
    check_three_ways(fn, [np.array([0.3, -0.7, 1.1])])


@pytest.mark.parametrize("source", [
    "def f(s):\n    return np.mean([s, s + 2.0])\n",
    "def f(s):\n    return np.var((s, s + 2.0)) + np.std([s, s * 3.0])\n",
])
def test_lists_of_python_floats(source):
    fn = define(source, {"np": np})
    for strict in (True, False):
        got = srcgrad.grad(fn, strict=strict)(0.7)
        fd = (fn(0.7 + 1e-6) - fn(0.7 - 1e-6)) / 2e-6
        assert isinstance(got, float) and abs(got - fd) < 1e-6


REFUSED = {
    "a closure writing into an enclosing array": ("""
        def f(x):
            acc = np.zeros(3)
            def add(v):
                acc[0] = v[0]
                return v
            return np.sum(add(x) * acc)
        """, "writes in place into 'acc'"),
    "nonlocal": ("""
        def f(x):
            k = 0
            def g(v):
                nonlocal k
                k = k + 1
                return v
            return np.sum(g(x))
        """, "nonlocal"),
    "a recursive nested function": ("""
        def f(x):
            def g(v, n):
                if n == 0:
                    return v
                return g(v * 2.0, n - 1)
            return np.sum(g(x, 2))
        """, "recursion"),
    "a decorated nested function": ("""
        def f(x):
            @staticmethod
            def g(v):
                return v
            return np.sum(g(x))
        """, "decorated"),
    "the walrus operator": ("""
        def f(x):
            if (n := np.sum(x ** 2)) > 0.1:
                return n * 2.0
            return n
        """, ":="),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_refused_with_a_clear_message(case):
    source, message = REFUSED[case]
    fn = define(source, {"np": np})
    with pytest.raises(srcgrad.CompileError, match=message):
        srcgrad.grad(fn, strict=True)(np.array([0.3, -0.7, 1.1]))


def test_recursion_over_a_list_is_refused_fast():
    namespace = {"np": np}
    define("""
        def rs(vs):
            if len(vs) == 0:
                return 0.0
            return np.sum(vs[0] ** 2) + rs(vs[1:])
        """, namespace)
    fn = define("def f(lst):\n    return rs(lst)\n", namespace)
    start = time.perf_counter()
    with pytest.raises(srcgrad.CompileError, match="recursion"):
        srcgrad.grad(fn, strict=True)([np.ones(2), np.ones(2), np.ones(2)])
    assert time.perf_counter() - start < 10.0
