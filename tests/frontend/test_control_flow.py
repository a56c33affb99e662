"""Control flow and mutation, compiled (strict: never falling back): compiled == eager ==
finite differences, on both sides of every branch, for zero-trip loops, nested loops and
loops with branches, and the caller's arrays are never changed."""

from __future__ import annotations

import numpy as np
import pytest
from compiled_helpers import check_case, check_three_ways, define
from conftest import numerical_grad

import srcgrad

CASES = {
    "if elif else": ("""
        def f(x, s):
            if s > 1.0:
                y = np.sin(x) * s
            elif s > 0.0:
                y = x ** 2
            else:
                y = -x
            return np.sum(y * x)
        """, [(3,), 2.0], [[(3,), 0.5], [(3,), -1.0]]),
    "branch on data": ("""
        def f(x):
            if np.sum(x) > 0:
                y = np.tanh(x)
            else:
                y = x * x
            return np.sum(y)
        """, [(4,)], []),
    "conditional expression": ("""
        def f(x, flag):
            y = np.exp(x) if flag else np.sin(x)
            return np.sum(y * 2.0 if np.max(x) > 0.5 else y)
        """, [(3,), True], [[(3,), False]]),
    "for over range with runtime bounds": ("""
        def f(x, a, b, step):
            y = x
            for i in range(a, b, step):
                y = y * np.cos(x * i) + x
            return np.sum(y)
        """, [(3,), 1, 7, 2], [[(3,), 5, 2, 1]]),
    "for over rows, enumerate, zip": ("""
        def f(m, v):
            acc = 0.0
            for row in m:
                acc = acc + np.sum(np.sin(row) * v)
            for i, row in enumerate(m):
                acc = acc + i * np.sum(row ** 2)
            for r, w in zip(m, v):
                acc = acc + np.sum(r) * w
            return acc
        """, [(3, 3), (3,)], []),
    "nested loops with a branch": ("""
        def f(x, n):
            y = x
            for i in range(n):
                for j in range(2):
                    if i > j:
                        y = y * x
                    else:
                        y = np.sin(y) + j
            return np.sum(y)
        """, [(3,), 3], [[(3,), 0]]),
    "while with a data-dependent trip count": ("""
        def f(c):
            x = c * 0 + 1.0
            k = 0
            while np.max(np.abs(x * x - c)) > 1e-10 and k < 50:
                x = 0.5 * (x + c / x)
                k = k + 1
            return np.sum(x)
        """, [(3,)], []),
    "subscript writes in a loop": ("""
        def f(x):
            y = np.zeros_like(x[:4])
            for i in range(4):
                y[i] = np.sum(x[:i + 1] ** 2)
            y[1:3] += x[0]
            return np.sum(np.sqrt(y + 1.0) * x[:4])
        """, [(5,)], []),
    "writes by slice, by mask, and into an argument": ("""
        def f(x, w):
            y = x.copy()
            y[1:3] = w[:2] * 2.0
            mask = x > 0.5
            y[mask] = np.sin(y[mask])
            x[0] = w[2]
            z = np.zeros_like(x)
            z[::2] = x[:3] * y[:3]
            return np.sum(y * z) + np.sum(x ** 2)
        """, [(5,), (3,)], []),
    "a loop whose body overwrites what it carries, run zero times": ("""
        def f(x, n):
            v = np.sin(x)
            j = 0
            while j < n:
                v = np.tanh(x)
                j = j + 1
            for k in range(n):
                v = np.cos(x) * k
            return np.sum(v)
        """, [(3,), 0], [[(3,), 2]]),
    "a loop variable that shadows an earlier one": ("""
        def f(x, w):
            j = 3
            for i in range(2):
                for j in range(2):
                    x = np.tanh(x + w[(i + j) % 4] * 0.3)
            return np.sum(x) * j
        """, [(3,), (4,)], []),
    "break and continue": ("""
        def f(x, n, cut):
            y = x
            for i in range(n):
                if np.sum(y) > cut:
                    break
                if i == 1:
                    continue
                y = y * x + 0.1
            return np.sum(y)
        """, [(3,), 5, 100.0], [[(3,), 5, 1.0], [(3,), 5, 2.5], [(3,), 0, 1.0],
                                [(3,), 4, -10.0]]),
    "while with break, nested loops": ("""
        def f(x):
            y = x
            k = 0
            while True:
                for j in range(3):
                    if j == 2:
                        break
                    y = np.sin(y) + x
                k = k + 1
                if k >= 3:
                    break
            return np.sum(y)
        """, [(3,)], []),
    "return anywhere": ("""
        def f(x, n):
            if np.sum(x) > 2.0:
                return np.sum(x ** 2)
            y = x
            for i in range(n):
                y = y * x
                if np.max(y) > 1.5:
                    return np.sum(y) * 2
            return np.sum(np.sin(y))
        """, [(3,), 3], [[(3,), 0], [(3,), 6]]),
    "for else and while else": ("""
        def f(x, n, cut):
            y = x
            for i in range(n):
                y = y * x
                if np.sum(y) > cut:
                    break
            else:
                y = np.sin(y) * 3
            k = 0
            while k < 2:
                y = y + x
                k = k + 1
            else:
                y = y * 2
            return np.sum(y)
        """, [(3,), 3, 100.0], [[(3,), 3, 1.0], [(3,), 0, 1.0]]),
    "loop-carried arrays and scalars": ("""
        def f(w, h0):
            h = h0
            scale = 1.0
            for t in range(5):
                h = np.tanh(w @ h + 0.1 * t)
                scale = scale * 0.9
            return np.sum(h) * scale
        """, [(3, 3), (3,)], []),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_compiled_equals_eager_and_finite_differences(case):
    check_case(*CASES[case])


def test_both_sides_of_a_data_branch():
    fn = define(CASES["branch on data"][0], {"np": np})
    check_three_ways(fn, [np.array([0.5, 0.2, -0.1, 0.3])])
    check_three_ways(fn, [np.array([-0.5, 0.2, -0.1, 0.3])])


def test_every_exit_of_a_function_with_early_returns():
    fn = define(CASES["return anywhere"][0], {"np": np})
    for x, n in [([1.1, 1.2, 1.4], 5), ([0.3, 0.2, 0.4], 3), ([0.9, 0.2, 0.4], 6),
                 ([0.3, 0.2, 0.4], 0)]:
        check_three_ways(fn, [np.array(x), n])


def test_zero_trip_loop_passes_values_through():
    fn = define("""
        def f(x, n):
            y = x * 2
            for i in range(n):
                y = np.sin(y)
            return np.sum(y)
        """, {"np": np})
    g = srcgrad.grad(fn, strict=True)
    np.testing.assert_allclose(g(np.ones(3), 0), [2.0, 2.0, 2.0])


def test_a_long_loop_backwards():
    fn = define("""
        def f(x, n):
            y = x
            for i in range(n):
                y = y * 0.999 + 0.001 * np.sin(y)
            return np.sum(y)
        """, {"np": np})
    check_three_ways(fn, [np.array([0.3, 0.6]), 2000])


def test_recursion_compiles():
    namespace = {"np": np}
    define("""
        def f(x, n):
            return np.sin(x) if n == 0 else f(x * 2, n - 1) * x
        """, namespace)
    outer = define("""
        def g(x):
            return np.sum(f(x, 3))
        """, namespace)
    compiled = srcgrad.grad(outer, strict=True)
    x = np.array([0.3, 0.5])
    np.testing.assert_allclose(compiled(x), numerical_grad(lambda a: float(outer(a)),
                                                           [x.copy()], 0), rtol=1e-6)
    assert compiled.source.count("def f_vjp(") == 1      # one vjp, calling itself


def test_generated_loop_reads_like_code():
    fn = define(CASES["loop-carried arrays and scalars"][0], {"np": np})
    source = srcgrad.grad(fn, strict=True).source
    assert "for t in range(trips):" in source and "reversed(" in source
    assert "_body_vjp(" in source


def test_writes_over_rows_that_earlier_iterations_read():
    fn = define("""
        def f(x0, x1):
            v = np.sin(x0)
            for i in range(5):
                v[i % 3] = v[(i + 1) % 3] * np.sin(x1[i % 4])
            return np.sum(v ** 2)
        """, {"np": np})
    rng = np.random.default_rng(4)
    args = [rng.uniform(-1.5, 1.5, (3, 4)), rng.uniform(-1.5, 1.5, 4)]
    got = srcgrad.grad(fn, wrt=(0, 1), strict=True)(*args)
    for k in (0, 1):                 # the eager engine refuses this program, as PyTorch does
        fd = numerical_grad(lambda *xs: float(fn(*xs)), [a.copy() for a in args], k)
        np.testing.assert_allclose(got[k], fd, rtol=1e-6, atol=1e-8)


def test_writes_into_np_zeros_compile():
    fn = define("""
        def f(x):
            z = np.zeros(4)
            z[::2] = np.sin(x[:2])
            z[1] = x[3] ** 2
            return np.sum(z * x)
        """, {"np": np})
    x = np.array([0.3, 0.7, 1.1, 0.4])
    got = srcgrad.grad(fn, strict=True)(x)   # the eager engine cannot store into np.zeros
    fd = numerical_grad(lambda a: float(fn(a)), [x.copy()], 0)
    np.testing.assert_allclose(got, fd, rtol=1e-6, atol=1e-8)


def test_second_derivative_through_a_compiled_loop():
    fn = define("""
        def f(x, w):
            s = 0.0
            for i in range(x.shape[0]):
                if x[i] > 0.4:
                    s = s + np.sin(x[i] * w) ** 2
                else:
                    s = s + x[i] ** 3
            return s
        """, {"np": np})
    compiled = srcgrad.compile(fn, strict=True)
    a = np.array([0.3, 0.5, 0.9])

    def first(v):          # the gradient in x, as a plain array
        x = srcgrad.tensor(v, requires_grad=True)
        (g,) = srcgrad.autograd.grad(compiled(x, srcgrad.tensor(1.3)), x)
        return g.numpy()

    x = srcgrad.tensor(a, requires_grad=True)
    (g,) = srcgrad.autograd.grad(compiled(x, srcgrad.tensor(1.3)), x, create_graph=True)
    (h,) = srcgrad.autograd.grad(g.sum(), x)
    expected = numerical_grad(lambda v: float(np.sum(first(v))), [a.copy()], 0)
    np.testing.assert_allclose(h.numpy(), expected, rtol=1e-6, atol=1e-8)


def test_a_dict_of_parameters_read_in_loops_and_branches():
    fn = define("""
        def f(params, xs):
            h = np.zeros(params["w"].shape[0])
            for t in range(len(xs)):
                h = np.tanh(params["w"] @ h + params["u"] * xs[t])
                if np.sum(h) > 0.0:
                    h = h * params["layers"][t % len(params["layers"])]
            return np.sum(h ** 2) + np.sum(params["layers"][0])
        """, {"np": np})
    rng = np.random.default_rng(5)
    params = {"w": rng.normal(size=(3, 3)) * 0.5, "u": rng.normal(size=3),
              "layers": [rng.uniform(0.5, 1.5, 3), rng.uniform(0.5, 1.5, 3)]}
    xs = rng.normal(size=4)
    got = srcgrad.grad(fn, strict=True)(params, xs)
    from srcgrad.transforms.fallback import eager_transform
    eager = eager_transform(fn, "grad", [params, xs], (0,), True)

    def leaf_fd(get, put):
        def f(v):
            p = {"w": params["w"].copy(), "u": params["u"].copy(),
                 "layers": [a.copy() for a in params["layers"]]}
            put(p, v)
            return float(fn(p, xs))
        return numerical_grad(f, [get(params).copy()], 0)

    for get, put, g, e in [
            (lambda p: p["w"], lambda p, v: p.__setitem__("w", v), got["w"], eager["w"]),
            (lambda p: p["u"], lambda p, v: p.__setitem__("u", v), got["u"], eager["u"]),
            (lambda p: p["layers"][1], lambda p, v: p["layers"].__setitem__(1, v),
             got["layers"][1], eager["layers"][1])]:
        np.testing.assert_allclose(g, e, rtol=1e-9, atol=1e-11)
        np.testing.assert_allclose(g, leaf_fd(get, put), rtol=1e-6, atol=1e-8)
