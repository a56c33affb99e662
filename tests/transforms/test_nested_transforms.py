"""Transforms nested inside transforms, against JAX.

Each case is one function source, ``top(x)``, executed twice: with ``np`` and the transform
names bound to NumPy and srcgrad, and to ``jax.numpy`` and JAX (the oracle).  An outer
transform (grad, value_and_grad, jvp, vjp) of ``top`` must equal JAX's: in default mode
(where the compiler refuses, with a FallbackWarning, on the eager engine), and with
``strict=True`` wherever that compiles.  The inner transforms close over the outer variable,
take it as their argument, or both: the eager engine must keep the levels apart
(perturbation confusion gives ``x * d/dy (x + y) = 2`` instead of 1).
"""

from __future__ import annotations

import itertools
import linecache
import textwrap
import types
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import srcgrad
from srcgrad.transforms.levels import nested

jax.config.update("jax_enable_x64", True)

_count = itertools.count()
X = np.array([0.3, 0.7, 1.1])

CASES = {
    "grad_of_grad": ("""
        def f(x):
            return x ** 3 * np.sin(x)
        def top(x):
            return grad(grad(f))(x)
        """, 0.7),
    "closure_grad": ("""
        def top(x):
            inner = lambda z: z * np.sin(x) * x
            return grad(inner)(x)
        """, 0.7),
    "closure_only": ("""
        def top(x):
            return grad(lambda z: z * np.sin(x))(1.5)
        """, 0.7),
    "closure_arrays": ("""
        def top(x):
            inner = lambda z: np.sum(z * np.sin(x) * x)
            return np.sum(grad(inner)(x) * x)
        """, X),
    "closure_attribute": ("""
        def top(x):
            box = Box(w=x)
            return grad(lambda z: z * np.sin(box.w))(1.5)
        """, 0.7),
    "perturbation_confusion": ("""
        def top(x):
            return x * grad(lambda y: x + y)(1.0)
        """, 1.0),
    "grad_of_jvp": ("""
        def top(x):
            return jvp(lambda z: z * np.sin(x) * z, (x,), (1.0,))[1]
        """, 0.7),
    "jvp_closure_only": ("""
        def top(x):
            return jvp(lambda z: z * np.sin(x), (1.5,), (1.0,))[1]
        """, 0.7),
    "jvp_tangent_of_x": ("""
        def top(x):
            return jvp(lambda z: z * np.sin(z), (1.3,), (x * x,))[1]
        """, 0.7),
    "jvp_of_grad": ("""
        def f(x):
            return x ** 3 * np.sin(x)
        def top(x):
            return jvp(grad(f), (x,), (1.0,))[1]
        """, 0.7),
    "jvp_of_closure_grad": ("""
        def top(x):
            g = lambda y: grad(lambda z: z * np.sin(x) * z)(y)
            return jvp(g, (x,), (1.0,))[1]
        """, 0.7),
    "jvp_of_jvp": ("""
        def top(x):
            f = lambda y: jvp(lambda z: z * np.sin(z) * y, (y,), (1.0,))[1]
            return jvp(f, (x,), (1.0,))[1]
        """, 0.7),
    "grad_of_vjp": ("""
        def top(x):
            y, back = vjp(lambda z: np.sin(z) * x * z, x)
            return back(1.0)[0]
        """, 0.7),
    "vjp_cotangent_of_x": ("""
        def top(x):
            y, back = vjp(lambda z: z * np.sin(z), 1.3)
            return back(x * x)[0] + y
        """, 0.7),
    "value_and_grad_nested": ("""
        def top(x):
            v, d = value_and_grad(lambda z: z * z * np.cos(x))(x)
            return v + d * x
        """, 0.7),
    "three_levels": ("""
        def top(x):
            def f2(y):
                inner = lambda z: z * z * y * np.sin(x)
                return grad(inner)(y) * x
            return grad(f2)(x)
        """, 0.7),
    "grad_grad_grad": ("""
        def f(x):
            return np.exp(x) * np.sin(x)
        def top(x):
            return grad(grad(grad(f)))(x)
        """, 0.7),
    "dict_argument": ("""
        def top(x):
            d = grad(lambda p: p["a"] * np.sin(x) * p["b"])({"a": x, "b": 2.0})
            return d["a"] * d["b"]
        """, 0.7),
    "hessian_closure": ("""
        def top(x):
            return np.sum(hessian(lambda z: np.sum(z ** 3) * np.sin(x[0]))(x))
        """, X),
    "jacfwd_closure": ("""
        def top(x):
            return np.sum(jacfwd(lambda z: z ** 2 * np.sin(x))(x))
        """, X),
    "jacrev_closure": ("""
        def top(x):
            return np.sum(jacrev(lambda z: z ** 2 * np.sin(x))(x))
        """, X),
}

SRCGRAD = {"Box": types.SimpleNamespace, "np": np, "grad": srcgrad.grad, "jvp": srcgrad.jvp,
           "vjp": srcgrad.vjp,
           "value_and_grad": srcgrad.value_and_grad, "hessian": srcgrad.hessian,
           "jacfwd": srcgrad.jacfwd, "jacrev": srcgrad.jacrev}
JAX = {"Box": types.SimpleNamespace, "np": jnp, "grad": jax.grad, "jvp": jax.jvp, "vjp": jax.vjp,
       "value_and_grad": jax.value_and_grad, "hessian": jax.hessian, "jacfwd": jax.jacfwd,
       "jacrev": jax.jacrev}


def _define(source: str, names: dict):
    """``top`` of ``source``, executed as if from a file (the compiler reads its source)."""
    source = textwrap.dedent(source)
    filename = f"<nested-transforms-{next(_count)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    namespace = dict(names)
    exec(compile(source, filename, "exec"), namespace)
    return namespace["top"]


def _outer(kind: str, lib: dict, top, x, strict: bool | None = None):
    """The outer transform ``kind`` of ``top`` at ``x`` (a tangent/cotangent of ones)."""
    opts = {} if strict is None else {"strict": strict}
    t = np.ones_like(x) if np.ndim(x) else 1.0
    if kind == "grad":
        return lib["grad"](top, **opts)(x)
    if kind == "value_and_grad":
        return lib["value_and_grad"](top, **opts)(x)
    if kind == "jvp":
        return lib["jvp"](top, (x,), (t,), **opts)
    value, back = lib["vjp"](top, x, **opts)
    return value, back(1.0)[0]


def _close(got, want) -> None:
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g, dtype=float), np.asarray(w), rtol=1e-9,
                                   atol=1e-12)


@pytest.mark.parametrize("kind", ["grad", "jvp", "vjp"])      # value_and_grad: grad's path
@pytest.mark.parametrize("name", list(CASES))
def test_nested_transforms_equal_jax(name, kind):
    source, x = CASES[name]
    want = _outer(kind, JAX, _define(source, JAX), x)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", srcgrad.FallbackWarning)
            compiled = _outer(kind, SRCGRAD, _define(source, SRCGRAD), x, strict=True)
    except srcgrad.CompileError:
        refused = True
    else:
        refused = False
        _close(compiled, want)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", srcgrad.FallbackWarning)
        got = _outer(kind, SRCGRAD, _define(source, SRCGRAD), x)
    said = [str(w.message) for w in caught if issubclass(w.category, srcgrad.FallbackWarning)]
    assert said or not refused                        # a refusal falls back with a warning
    assert not [m for m in said if "internal error" in m]   # never compiled code on a level
    _close(got, want)
    assert not nested()                  # the level count is back to zero


def test_an_inner_closure_over_the_outer_argument_keeps_the_levels_apart():
    def fun(x):
        inner = lambda z: z * np.sin(x) * x  # noqa: E731
        return srcgrad.grad(inner)(x)
    with pytest.warns(srcgrad.FallbackWarning):
        got = srcgrad.grad(fun)(0.7)
    assert got == pytest.approx(np.cos(0.7) * 0.7 + np.sin(0.7), rel=1e-12)


def test_a_closure_over_a_tensor_of_the_callers_keeps_its_graph():
    w = srcgrad.tensor(0.7, dtype=srcgrad.float64, requires_grad=True)
    g = srcgrad.grad(lambda z: z * z * w)(1.5)        # 2 z w, recorded to w
    assert isinstance(g, srcgrad.Tensor)
    g.backward()
    assert float(w.grad) == pytest.approx(3.0)


def test_the_level_count_is_restored_when_the_function_raises():
    def fun(x):
        inner = lambda z: z * x  # noqa: E731
        srcgrad.grad(inner)(x)
        raise ZeroDivisionError("the user's own error")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", srcgrad.FallbackWarning)
        with pytest.raises(ZeroDivisionError):
            srcgrad.grad(fun)(0.5)
    assert not nested()
    g = srcgrad.grad(lambda x: x * x)
    assert g(3.0) == 6.0 and type(g(3.0)) is float       # compiled again, plain results
