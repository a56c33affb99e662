"""Transforms made again for the same function are reused (``grad(f)(x)`` written inline), and
never where the function's behaviour could differ: other closure values, other defaults, a rule
given since, other options."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import srcgrad
from srcgrad.transforms.cache import TRANSFORMS, TransformCache


def loss(w, x):
    return np.sum(np.tanh(x @ w) ** 2)


W, X = np.linspace(-1.0, 1.0, 6).reshape(3, 2), np.linspace(0.5, 2.0, 12).reshape(4, 3)


def test_the_same_function_gets_the_same_transform():
    assert srcgrad.grad(loss) is srcgrad.grad(loss)
    assert srcgrad.grad(loss, wrt=1) is not srcgrad.grad(loss)
    assert srcgrad.grad(loss, wrt=(0, 1)) is srcgrad.grad(loss, wrt=[0, 1])
    assert srcgrad.grad(loss, strict=True) is not srcgrad.grad(loss)
    assert srcgrad.value_and_grad(loss) is not srcgrad.grad(loss)
    assert srcgrad.hessian(loss) is srcgrad.hessian(loss)
    assert srcgrad.jacrev(np.tanh) is srcgrad.jacrev(np.tanh)


def test_a_lambda_made_again_over_the_same_values_is_reused():
    def outer(x):
        return srcgrad.grad(lambda z: np.sum(z * np.sin(x)))

    x = np.array([0.1, 0.2])
    assert outer(x) is outer(x)
    other = np.array([0.3, 0.4])
    g = outer(other)
    assert g is not outer(x)                      # another closure value: another transform
    np.testing.assert_allclose(g(np.ones(2)), np.sin(other))


def test_closures_over_changing_values_are_each_right():
    """The inline style of HIPS autograd: a fresh closure per step."""
    x = 0.3
    for _ in range(4):
        def fun(y):
            inner = lambda z: z * np.sin(y) * y          # noqa: E731
            return srcgrad.grad(inner)(y)
        got = srcgrad.grad(fun)(x)
        assert got == pytest.approx(np.cos(x) * x + np.sin(x), rel=1e-12)
        x += 0.4


def _scaled_square(k):
    def f(x, k=k):
        return np.sum(k * x ** 2)
    return f


def test_other_defaults_are_another_function():
    made = [_scaled_square(k) for k in (1.0, 3.0)]
    assert made[0].__code__ is made[1].__code__
    grads = [srcgrad.grad(f)(np.array([1.0, 2.0])) for f in made]
    np.testing.assert_allclose(grads[0], [2.0, 4.0])
    np.testing.assert_allclose(grads[1], [6.0, 12.0])


def test_a_rule_given_since_makes_a_new_transform():
    @srcgrad.primitive
    def cube(x):
        return x ** 3

    def f(x):
        return np.sum(cube(x))

    srcgrad.defvjp(cube, lambda g, ans, x: g * 3 * x ** 2)
    first = srcgrad.grad(f)
    np.testing.assert_allclose(first(np.array([1.0, 2.0])), [3.0, 12.0])
    srcgrad.defvjp(cube, lambda g, ans, x: g * 0.0)     # replaced: the new rule is used
    second = srcgrad.grad(f)
    assert second is not first
    np.testing.assert_allclose(second(np.array([1.0, 2.0])), [0.0, 0.0])


def test_a_strict_refusal_is_raised_every_time():
    def f(x):
        return np.sum(np.unwrap(x))

    for _ in range(2):
        with pytest.raises(srcgrad.CompileError, match="numpy.unwrap"):
            srcgrad.grad(f, strict=True)


def test_the_fallback_warning_points_at_the_users_line():
    def f(x):
        return np.sum(np.r_[x[0], 2.0, x] ** 2)

    TRANSFORMS.clear()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        g = srcgrad.grad(f)
        g(np.ones(2))
    fallbacks = [w for w in seen if issubclass(w.category, srcgrad.FallbackWarning)]
    assert fallbacks and all(w.filename == __file__ for w in fallbacks)


def test_the_cache_is_bounded_and_least_recently_used_goes_first():
    cache = TransformCache(size=2)
    fns = [lambda x, k=k: x * k for k in range(3)]
    made = [cache.get(f, ("grad",), object) for f in fns]
    assert len(cache) == 2
    assert cache.get(fns[2], ("grad",), object) is made[2]
    assert cache.get(fns[0], ("grad",), object) is not made[0]     # evicted, made anew


def test_unhashable_options_are_made_anew():
    cache = TransformCache()
    f = np.sin
    assert cache.get(f, ([0],), object) is not cache.get(f, ([0],), object)
