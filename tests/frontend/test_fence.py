"""The fence: each construct the compiler does not handle yet raises a CompileError that names
the user's file, line and construct (strict=True), and otherwise falls back to the eager engine
with one FallbackWarning and the correct gradient."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from compiled_helpers import define
from conftest import numerical_grad

import srcgrad

CASES = {
    # name: (source, line of the construct (1-based in the source), words in the message)
    "attribute write": ("""
        def f(x):
            box = BOX
            box.value = np.sum(x)
            return np.sum(x * box.value)
        """, 4, "attribute"),
    "try with an if": ("""
        def f(x):
            try:
                if x.ndim > 1:
                    x = x.ravel()
                z = np.log(x)
            except ValueError:
                z = x
            return np.sum(z)
        """, 4, "try body of assignments"),
    "with errstate raising": ("""
        def f(x):
            with np.errstate(all="raise"):
                y = np.log(x)
            return np.sum(y)
        """, 3, "'ignore'"),
    "nonlocal in a nested def": ("""
        def f(x):
            acc = x * 1.0
            def g(t):
                nonlocal acc
                acc = acc + t
            g(x)
            return np.sum(acc)
        """, 5, "nonlocal in a nested function"),
    "a dict changed in a branch": ("""
        def f(x):
            d = {"a": x}
            if np.sum(x) > 0:
                d["a"] = x * 2
            return np.sum(d["a"])
        """, 5, "a dict built in the function"),
    "list method": ("""
        def f(x):
            parts = [x * k for k in range(3)]
            parts.pop()
            return np.sum(np.stack(parts))
        """, 4, "list.pop()"),
    "list element write": ("""
        def f(x):
            parts = [x * k for k in range(3)]
            parts[0] = x
            return np.sum(np.stack(parts))
        """, 4, "element of a list"),
    "second name of an appended list": ("""
        def f(x):
            hs = [x]
            for _ in range(3):
                hs.append(hs[-1] * 2.0)
            alias = hs
            alias.append(x)
            return np.sum(np.stack(hs))
        """, 8, "changed in place"),
    "write into an array held by a list": ("""
        def f(x):
            y = x * 1.0
            kept = []
            for k in range(2):
                kept.append(y)
                y[k] = 0.0
            return np.sum(np.stack(kept))
        """, 7, "put in a list"),
    "write and store in the same loop": ("""
        def f(x):
            y = x * 1.0
            kept = []
            for k in range(2):
                y[k] = 0.0
                kept.append(y)
            return np.sum(np.stack(kept))
        """, 5, "same array"),
    "loop writes what it only reads": ("""
        def f(x):
            y = x * 1.0
            total = 0.0
            for i in range(3):
                z = y
                z[i] = 0.0
                total = total + np.sum(z)
            return total
        """, 5, "in place"),
    "early return": ("""
        def f(x):
            return np.sum(x)
            y = x
        """, 3, "return"),
    "global": ("""
        def f(x):
            global COUNTER
            return np.sum(x)
        """, 3, "global"),
    "walrus": ("""
        def f(x):
            y = (z := x * 2) + z
            return np.sum(y)
        """, 3, "walrus operator (:=)"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_strict_raises_with_the_users_location(case):
    source, line, words = CASES[case]
    fn = define(source, {"np": np, "BOX": _Box()})
    with pytest.raises(srcgrad.CompileError) as info:
        srcgrad.grad(fn, strict=True)
    err = info.value
    assert err.lineno == fn.__code__.co_firstlineno + line - 2
    assert err.filename == fn.__code__.co_filename
    assert words in str(err)
    text = str(err).splitlines()
    assert text[1].startswith(f'  File "{err.filename}", line {err.lineno}, in f')
    assert "^" in text[3]        # the caret under the construct, as a SyntaxError shows it


class _Box:
    value = 0.0


NO_EAGER = ("early return",)   # the eager run of a dead line is not a gradient check


@pytest.mark.parametrize("case", sorted(c for c in CASES if c not in NO_EAGER))
def test_fallback_warns_once_and_gives_the_right_gradient(case):
    source, _, words = CASES[case]
    fn = define(source, {"np": np, "BOX": _Box()})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        g = srcgrad.grad(fn)
        x = np.array([0.3, 0.7, 1.2])
        got = g(x)
        g(x)
    fallbacks = [w for w in caught if issubclass(w.category, srcgrad.FallbackWarning)]
    assert len(fallbacks) == 1 and words in str(fallbacks[0].message)
    assert g.fallback_reason is not None and g.source is None
    expected = numerical_grad(lambda a: float(fn(a)), [x.copy()], 0)
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-8)


def test_preallocate_then_fill_gets_the_exact_gradient():
    fn = define("""
        def f(x):
            y = np.zeros(3)
            with np.errstate(all="ignore"):
                y[0] = np.sum(x)
            return np.sum(y * x)
        """, {"np": np})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", srcgrad.FallbackWarning)
        g = srcgrad.grad(fn)
        x = np.array([0.3, 0.7, 1.2])
        got = g(x)
    # f = sum(x) * x[0], so df/dx = x[0] + [sum(x), 0, 0]; never a dropped (zero) term
    np.testing.assert_allclose(got, x[0] + np.array([x.sum(), 0.0, 0.0]), rtol=1e-12)


def test_unknown_function_names_the_call():
    fn = define("""
        def f(x):
            return np.sum(np.unwrap(x))
        """, {"np": np})
    with pytest.raises(srcgrad.CompileError, match="numpy.unwrap"):
        srcgrad.grad(fn, strict=True)


def test_source_that_cannot_be_read_falls_back():
    namespace = {"np": np}
    exec("def f(x):\n    return np.sum(x * x)\n", namespace)
    with pytest.warns(srcgrad.FallbackWarning, match="cannot be read"):
        g = srcgrad.grad(namespace["f"])
    np.testing.assert_allclose(g(np.array([1.0, 2.0])), [2.0, 4.0])


def _scaled_primitive():
    """A user primitive with a keyword parameter (made in the test: the rule table is global)."""
    @srcgrad.primitive
    def _scaled(x, *, k):
        return x * k
    srcgrad.defvjp(_scaled, lambda g, ans, x, k: g * k, nin=1)
    return _scaled


def test_gradient_through_a_shape_parameter_is_refused():
    """A keyword parameter of a primitive gets no gradient: one that carries one is refused
    (np.clip's bounds were the example until they became inputs with rules of their own)."""
    scaled = _scaled_primitive()
    fn = define("""
        def f(x, c):
            return np.sum(scaled(x, k=c))
        """, {"np": np, "scaled": scaled})
    x = np.array([0.3, 1.2])
    np.testing.assert_allclose(srcgrad.grad(fn, strict=True)(x, 0.5), [0.5, 0.5])
    with pytest.raises(srcgrad.CompileError, match="parameter 'c' of _scaled"):
        srcgrad.grad(fn, wrt=(0, 1), strict=True)


def test_a_write_into_an_argument_under_a_second_name_acts_on_a_private_copy():
    fn = define("""
        def f(x, c):
            y = x
            y[0] = 0.0
            c[1] = 5.0
            return np.sum(x * y * c)
        """, {"np": np})
    x, c = np.array([1.0, 2.0, 3.0]), np.array([1.0, 1.0, 2.0])
    g = srcgrad.grad(fn, strict=True)            # y and x name one array: both see the write
    np.testing.assert_allclose(g(x, c), [0.0, 20.0, 12.0])   # d/dx of sum(x'² c'), x'[0] = 0
    np.testing.assert_array_equal(x, [1.0, 2.0, 3.0])      # the caller's arrays are unchanged
    np.testing.assert_array_equal(c, [1.0, 1.0, 2.0])


def test_rows_overwritten_in_place_get_the_exact_gradient():
    fn = define("""
        def f(x0, x1):
            v = np.sin(x0)
            for i in range(2):
                v[i % 3] = v[(i + 1) % 3] * np.sin(x1[i % 4])
            try:
                return np.sum(v)
            except ValueError:
                return 0.0
        """, {"np": np})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", srcgrad.FallbackWarning)
        g = srcgrad.grad(fn, wrt=(0, 1))
        x0 = np.linspace(0.1, 1.2, 12).reshape(3, 4)
        x1 = np.array([0.3, -0.4, 0.8, 1.1])
        d0, d1 = g(x0, x1)        # NumPy allows the write PyTorch forbids: the gradient is exact
    np.testing.assert_allclose(d0, numerical_grad(fn, [x0.copy(), x1.copy()], 0), atol=1e-7)
    np.testing.assert_allclose(d1, numerical_grad(fn, [x0.copy(), x1.copy()], 1), atol=1e-7)


_LAMBDAS = {
    "square": lambda x: np.sum(x ** 2),
}


def test_a_lambda_that_cannot_be_isolated_is_refused_at_its_line():
    square = _LAMBDAS["square"]
    with pytest.raises(srcgrad.CompileError, match="cannot be isolated") as info:
        srcgrad.grad(square, strict=True)
    assert info.value.filename == __file__
    assert info.value.lineno == square.__code__.co_firstlineno
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", srcgrad.FallbackWarning)
        np.testing.assert_allclose(srcgrad.grad(square)(np.array([1.0, -2.0])), [2.0, -4.0])
