"""The safety net: any exception inside the compiler becomes a CompileError at the
construct being compiled; compiled code that raises where the eager engine does not falls back
once, with a warning (strict: CompileError); errors the function itself raises stay its own;
the fallback is never a dead end; higher order through a transform is refused or computed."""

from __future__ import annotations

import functools
import math
import warnings

import numpy as np
import pytest
from compiled_helpers import define

import srcgrad
import srcgrad.build.pipeline as pipeline
import srcgrad.frontend.primitives as primitives

A = np.array([0.5, -1.0, 2.0])


def loss(x, y):
    return np.sum(np.tanh(x * y) ** 2)


def expected(x, y):
    t = np.tanh(x * y)
    return 2 * t * (1 - t ** 2) * y


# ------------------------------------------------------------------ compile time
def test_an_exception_inside_the_compiler_is_an_internal_compile_error(monkeypatch):
    def broken(*args, **kwargs):
        raise KeyError("oops")

    monkeypatch.setattr(pipeline, "build_graph", broken)
    with pytest.raises(srcgrad.CompileError, match="internal error.*KeyError") as info:
        srcgrad.grad(loss, strict=True)
    assert info.value.filename == __file__
    with pytest.warns(srcgrad.FallbackWarning, match="internal error"):
        g = srcgrad.grad(loss)
    np.testing.assert_allclose(g(A, 2 * A), expected(A, 2 * A))


def test_an_internal_error_while_lowering_points_at_the_statement(monkeypatch):
    f = define("""
        def f(x):
            y = x * 2.0
            z = np.sin(y)
            return np.sum(z)
        """, {"np": np})
    original = primitives.Primitives.prim

    def broken(self, fn, inputs, params, hint, node):
        if getattr(fn, "name", "") == "sin" or fn is np.sin:
            raise IndexError("list index out of range")
        return original(self, fn, inputs, params, hint, node)

    monkeypatch.setattr(primitives.Primitives, "prim", broken)
    with pytest.raises(srcgrad.CompileError, match="IndexError") as info:
        srcgrad.grad(f, strict=True)
    assert info.value.lineno == 4 and "np.sin(y)" in str(info.value)


def test_recursion_in_the_compiler_is_a_compile_error():
    terms = " + ".join(["x"] * 250)
    f = define(f"def f(x):\n    return np.sum({terms})\n", {"np": np})
    try:
        g = srcgrad.grad(f, strict=True)
    except srcgrad.CompileError:
        pass                                  # refused is fine; anything else is not
    else:
        np.testing.assert_allclose(g(A), np.full(3, 250.0))


# --------------------------------------------------------------------- call time
def _break(g, exc=None):
    def raising(*args):
        raise exc if exc is not None else IndexError("internal")
    g._fn = raising
    g._latest = None
    g._shapes_fixed = False


def test_compiled_code_that_raises_falls_back_once_with_a_warning():
    g = srcgrad.grad(loss)
    _break(g)
    x, y = A.copy(), 2 * A
    with pytest.warns(srcgrad.FallbackWarning, match="internal error.*IndexError"):
        np.testing.assert_allclose(g(x, y), expected(A, 2 * A))
    with warnings.catch_warnings():
        warnings.simplefilter("error")        # remembered: no second warning
        np.testing.assert_allclose(g(x, y), expected(A, 2 * A))
    np.testing.assert_array_equal(x, A)


def test_strict_turns_an_internal_failure_into_a_compile_error():
    g = srcgrad.grad(loss, strict=True)
    _break(g)
    with pytest.raises(srcgrad.CompileError, match="internal error.*IndexError"):
        g(A, 2 * A)


def test_the_functions_own_errors_are_raised_as_numpy_raises_them():
    f = define("def f(w, x):\n    return np.sum(x @ w)\n", {"np": np})
    for strict in (False, True):
        g = srcgrad.grad(f, strict=strict)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with pytest.raises(ValueError, match="mismatch"):
                g(np.ones(3), np.ones((2, 2)))
            np.testing.assert_allclose(g(np.ones(2), np.ones((3, 2))), [3.0, 3.0])


def test_interrupts_are_not_caught():
    g = srcgrad.grad(loss)
    _break(g, KeyboardInterrupt())
    with pytest.raises(KeyboardInterrupt):
        g(A, A)


def test_a_vjp_backward_that_raises_falls_back():
    def f(x, y):
        return np.sin(x) * y

    value, back = srcgrad.vjp(f, A, 2 * A)
    transform = srcgrad.transforms.cache.TRANSFORMS.get(f, ("vjp", (0, 1), "numpy", False), None)

    def raising_backward(*args):
        def backward(g):
            raise AttributeError("internal")
        return f(*args), backward
    transform._fn = raising_backward
    value, back = transform(A, 2 * A)
    with pytest.warns(srcgrad.FallbackWarning, match="AttributeError"):
        dx, dy = back(np.ones(3))
    np.testing.assert_allclose(dx, np.cos(A) * 2 * A)
    np.testing.assert_allclose(dy, np.sin(A))


def test_compile_in_the_eager_graph_falls_back_when_compiled_code_raises():
    c = srcgrad.compile(loss)
    _break(c.transform)
    x = srcgrad.tensor(A, requires_grad=True)
    with pytest.warns(srcgrad.FallbackWarning):
        out = c(x, srcgrad.tensor(2 * A))
    out.backward()
    np.testing.assert_allclose(x.grad.numpy(), expected(A, 2 * A))


# ---------------------------------------------------------- no dead end
def test_a_call_with_no_rule_is_named_at_grad_time_and_at_call_time():
    f = define("def f(x):\n    return math.cbrt(x) * 2.0\n", {"math": math})
    with pytest.warns(srcgrad.FallbackWarning, match="math.cbrt.*defvjp"):
        g = srcgrad.grad(f)
    with pytest.raises(Exception) as info:
        g(1.5)
    assert not isinstance(info.value, (AttributeError, KeyError, IndexError))
    text = str(info.value) + "".join(getattr(info.value, "__notes__", []))
    assert "math.cbrt" in text and "defvjp" in text


# ------------------------------------------------------------------ higher order
def cube(x):
    return x ** 3 + np.sin(x)


def test_grad_of_grad_is_compiled_and_right():
    with warnings.catch_warnings():
        warnings.simplefilter("error", srcgrad.FallbackWarning)
        gg = srcgrad.grad(srcgrad.grad(cube), strict=True)
    for x in (0.5, 3.0):
        assert gg(x) == pytest.approx(6 * x - math.sin(x))
    assert gg.source is not None and "cube_tangent" in gg.source


def test_grad_of_an_eager_grad_keeps_the_graph():
    inner = functools.partial(cube)          # runs on the eager engine
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gg = srcgrad.grad(srcgrad.grad(inner))
        hessian_diag = srcgrad.grad(lambda x: np.sum(srcgrad.grad(
            lambda y: np.sum(y ** 3))(x)))
        assert gg(2.0) == pytest.approx(12 - math.sin(2.0))
        np.testing.assert_allclose(hessian_diag(A), 6 * A)


def test_mixed_second_derivatives_through_an_inner_transform():
    def inner(x, w):
        return np.sum(np.sin(x * w))

    def outer(w, x):
        value, dx = srcgrad.value_and_grad(inner)(x, w)
        return np.sum(dx * x) + value

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = srcgrad.grad(outer)(A.copy(), 2 * A)
    x, w = 2 * A, A
    # d/dw [sum(w cos(xw) x) + sum(sin(xw))] = x cos(xw) - x^2 w sin(xw) + x cos(xw)
    np.testing.assert_allclose(got, 2 * x * np.cos(x * w) - x * x * w * np.sin(x * w))
