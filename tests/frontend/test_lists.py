"""Lists, compiled (strict: never falling back): literals, ``append`` in loops and branches,
element reads, comprehensions and generator expressions feeding ``sum``, ``np.stack`` and
``np.concatenate``.  Compiled == eager == finite differences, and PyTorch where installed."""

from __future__ import annotations

import numpy as np
import pytest
from compiled_helpers import check_case, define
from conftest import needs_torch

import srcgrad

CASES = {
    # name: (source, argument spec, other argument specs)
    "append in a loop, then stack": ("""
        def f(x, w, n):
            hs = []
            h = x
            for t in range(n):
                h = np.tanh(h * w + t)
                hs.append(h)
            return np.sum(np.stack(hs) ** 2)
        """, [(3,), (3,), 4], [[(3,), (3,), 1]]),
    "rnn reading its last state": ("""
        def f(h0, w, xs):
            hs = [h0]
            for t in range(len(xs)):
                hs.append(np.tanh(hs[-1] @ w + xs[t]))
            return np.sum(np.stack(hs[1:], axis=1) * np.cos(np.stack(hs[:-1], axis=1)))
        """, [(2, 3), (3, 3), (4, 2, 3)], []),
    "list comprehension with a filter": ("""
        def f(x, n):
            parts = [np.sin(x * k) for k in range(n) if k % 2 == 0]
            return np.sum(np.concatenate(parts))
        """, [(3,), 5], [[(3,), 1]]),
    "nested comprehension over rows": ("""
        def f(m, v):
            grid = [r * c for r in m for c in v]
            return np.sum(np.stack(grid) ** 2)
        """, [(3, 2), (2,)], []),
    "generator expression into sum": ("""
        def f(x, w):
            return sum(np.sum(w[i] * x ** i) for i in range(len(w)))
        """, [(3,), (4,)], []),
    "sum of a built list, of a literal, of rows": ("""
        def f(x, m):
            terms = []
            for row in m:
                terms.append(np.sum(row * x))
            pair = [np.sum(x), np.sum(x * x)]
            return sum(terms) + sum(pair, 1.0) + np.sum(sum(m) * x)
        """, [(3,), (4, 3)], []),
    "appends in a branch: a list of varying length": ("""
        def f(x, n):
            kept = [x]
            for k in range(n):
                y = np.sin(x * (k + 1))
                if np.sum(y) > 0.5:
                    kept.append(y * kept[-1])
            return np.sum(np.stack(kept))
        """, [(3,), 6], []),
    "list built by a while loop": ("""
        def f(x):
            steps = [x]
            while np.max(np.abs(steps[-1])) > 0.05:
                steps.append(steps[-1] * 0.5)
            return np.sum(np.stack(steps) ** 3)
        """, [(3,)], []),
    "a list the loop only reads": ("""
        def f(a, b, c, n):
            weights = [a, b, c]
            h = a
            for t in range(n):
                h = np.tanh(h * weights[t % 3])
            return np.sum(h)
        """, [(3,), (3,), (3,), 5], []),
    "for over a list, enumerate and zip": ("""
        def f(x, y):
            items = [np.exp(x * k) for k in range(3)]
            total = 0.0
            for item in items:
                total = total + np.sum(item)
            for k, item in enumerate(items):
                total = total + k * np.sum(item * y)
            for item, other in zip(items, [x, y, x * y]):
                total = total + np.sum(item * other)
            return total
        """, [(3,), (3,)], []),
    "an element read before a later append": ("""
        def f(x, n):
            hs = []
            for k in range(n):
                hs.append(x * (k + 1.0))
            last = hs[-1]
            for k in range(2):
                hs.append(last * 2.0)
            return np.sum(np.sin(last)) + np.sum(hs[0])
        """, [(3,), 3], []),
    "unpacking and slicing a built list": ("""
        def f(x):
            parts = [x * k for k in range(1, 4)]
            a, b, c = parts
            return np.sum(a * b * c) + np.sum(np.stack(parts[::2]))
        """, [(3,)], []),
    "zero-trip comprehension": ("""
        def f(x, n):
            extra = [np.sum(x * k) for k in range(n)]
            return np.sum(x ** 2) + sum(extra)
        """, [(3,), 0], [[(3,), 2]]),
    "a list literal carried through a loop": ("""
        def f(x, n):
            path = [x, x * 2.0]
            for _ in range(n):
                path.append(path[-1] * path[-2])
            return np.sum(path[-1])
        """, [(2,), 3], []),
    "reversed, max and min": ("""
        def f(x, n):
            hs = [x * (k + 1.0) for k in range(n)]
            acc = x
            for h in reversed(hs):
                acc = np.sin(acc) * h
            for k in reversed(range(1, n)):
                acc = acc + max(np.sum(acc) * k, 0.3) - min(k * 0.5, np.sum(hs[k]), 2.0)
            for row in reversed(np.stack(hs)):
                acc = acc + row * 0.1
            return np.sum(acc)
        """, [(3,), 4], [[(3,), 1]]),
    "a named slice of a list, and a comprehension over one": ("""
        def f(x, n):
            hs = [x]
            for k in range(n):
                hs.append(np.sin(hs[-1]) + x)
            tail = hs[1:]
            first = tail[0]
            scaled = [h * (i + 1.0) for i, h in enumerate(hs[1:])]
            return np.sum(np.stack(tail)) + np.sum(first ** 2) + np.sum(np.stack(scaled))
        """, [(3,), 3], []),
    "python floats in a list": ("""
        def f(s, n):
            values = [s]
            for k in range(n):
                values.append(values[-1] * s + 1.0)
            return sum(values)
        """, [(), 4], []),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_compiled_equals_eager_and_finite_differences(case):
    check_case(*CASES[case])


RNN = """
    def f(h0, w, u, xs):
        hs = [h0]
        for x in xs:
            hs.append(np.tanh(hs[-1] @ w + x @ u))
        return np.mean(np.stack(hs[1:]) ** 2)
    """


@needs_torch
def test_an_rnn_over_a_list_matches_pytorch():
    import torch
    fn = define(RNN, {"np": np})
    rng = np.random.default_rng(1)
    args = [rng.normal(size=(2, 4)), rng.normal(size=(4, 4)) * 0.5, rng.normal(size=(3, 4)),
            rng.normal(size=(5, 2, 3))]
    got = srcgrad.grad(fn, wrt=(0, 1, 2), strict=True)(*args)
    h0, w, u = (torch.tensor(a, requires_grad=True) for a in args[:3])
    hs = [h0]
    for x in torch.tensor(args[3]):
        hs.append(torch.tanh(hs[-1] @ w + x @ u))
    torch.mean(torch.stack(hs[1:]) ** 2).backward()
    for g, t in zip(got, (h0, w, u)):
        np.testing.assert_allclose(g, t.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_generated_list_code_reads_like_code():
    fn = define(RNN, {"np": np})
    source = srcgrad.grad(fn, wrt=1, strict=True).source
    assert "hs.append(" in source                 # one name for the list, as the user wrote
    assert "hs_1 = hs" not in source
    assert "pop_gradient(d_hs" in source           # the adjoint of append pops
    assert "unstack(" in source                    # the adjoint of np.stack of a list
    assert "d_u" not in source and "d_xs" not in source     # no adjoints nobody asked for


def test_the_callers_list_argument_is_never_changed():
    fn = define("""
        def f(x, items):
            acc = x
            for k in range(len(items)):
                acc = acc * items[k]
            return np.sum(acc)
        """, {"np": np})
    items = [np.array([0.5, 2.0]), np.array([1.5, -1.0])]
    before = [a.copy() for a in items]
    g = srcgrad.grad(fn, wrt=(0, 1), strict=True)
    dx, ditems = g(np.array([1.0, 3.0]), items)
    assert len(items) == 2 and all(np.array_equal(a, b) for a, b in zip(items, before))
    np.testing.assert_allclose(dx, items[0] * items[1])
    np.testing.assert_allclose(ditems[0], np.array([1.0, 3.0]) * items[1])


def test_vjp_of_a_list_result_leaves_the_cotangent_alone():
    fn = define("""
        def f(x, n):
            out = []
            for k in range(n):
                out.append(np.sin(x) * (k + 1.0))
            return out
        """, {"np": np})
    x = np.array([0.3, -0.4])
    value, back = srcgrad.vjp(fn, x, 3, strict=True)
    assert isinstance(value, list) and len(value) == 3
    cotangent = [np.ones(2), np.full(2, 2.0), np.full(2, 3.0)]
    dx, _ = back(cotangent)
    np.testing.assert_allclose(dx, np.cos(x) * (1 + 4 + 9))
    assert len(cotangent) == 3 and cotangent[2][0] == 3.0        # not popped, not changed


def test_value_and_grad_and_compile_of_a_comprehension():
    fn = define("""
        def f(x, n):
            return np.sum(np.stack([np.sin(x) * k for k in range(n)]))
        """, {"np": np})
    x = np.array([0.3, -0.4])
    value, dx = srcgrad.value_and_grad(fn, strict=True)(x, 3)
    np.testing.assert_allclose(value, np.sum(np.sin(x)) * 3)
    np.testing.assert_allclose(dx, np.cos(x) * 3)
    t = srcgrad.tensor(x, requires_grad=True)
    srcgrad.compile(fn)(t, 3).backward()
    np.testing.assert_allclose(t.grad.numpy(), np.cos(x) * 3)


def test_the_fallback_vjp_of_a_list_result_agrees():
    source = """
        def f(x, n):
            out = []
            for k in range(n):
                out.append(np.sin(x) * (k + 1.0))
            return out, np.sum(x)
        """
    fn = define(source, {"np": np})
    x = np.array([0.3, -0.4])
    cotangent = ([np.ones(2), np.full(2, 2.0), np.full(2, 3.0)], 0.5)
    compiled = srcgrad.vjp(fn, x, 3, strict=True)[1](cotangent)[0]
    from srcgrad.transforms.fallback import eager_transform
    eager = eager_transform(fn, "vjp", [x, 3], (0, 1), False)[1](cotangent)[0]
    np.testing.assert_allclose(compiled, np.cos(x) * 14 + 0.5)
    np.testing.assert_allclose(eager, compiled)
