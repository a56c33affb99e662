"""Calls of user methods, bound-method and callable-object targets, ``*args``, keyword-only
parameters, ``**kwargs`` and functions passed as defaults: compiled (strict) == finite
differences == the eager fallback, or a precise CompileError; arguments never mutated."""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest

import srcgrad
from srcgrad.transforms.grad import Transform

X = np.array([0.3, -0.7, 1.2])
W = np.array([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0]])


def fd(f, args, i, eps=1e-6):
    """Central finite differences of scalar ``f`` in argument ``i``."""
    args = list(args)
    x = np.asarray(args[i], dtype=float)
    g = np.zeros_like(x)
    for k in np.ndindex(x.shape):
        hi, lo = x.copy(), x.copy()
        hi[k] += eps
        lo[k] -= eps
        g[k] = (f(*args[:i], hi, *args[i + 1:]) - f(*args[:i], lo, *args[i + 1:])) / (2 * eps)
    return g


def both(f, *args, wrt=0, **kwargs):
    """The compiled (strict) and the fallback gradient; both must equal each other."""
    strict = srcgrad.grad(f, wrt=wrt, strict=True)
    assert strict.source is not None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        eager = Transform(f, "grad", wrt)         # its own, not the one grad(f) keeps
        eager._fn = None                         # force the eager engine
        eager.fallback_reason = "test"
        eager._latest = None
        copies = [np.copy(a) if isinstance(a, np.ndarray) else a for a in args]
        got_eager = eager(*args, **kwargs)
    got = strict(*args, **kwargs)
    for a, c in zip(args, copies):
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, c)           # never mutated
    return got, got_eager


class Model:
    def __init__(self, weights):
        self.W = weights

    def act(self, v):
        return np.tanh(v)

    def loss(self, x):
        return np.sum(self.act(self.W @ x))

    @staticmethod
    def sq(v):
        return v ** 2

    @classmethod
    def doubled(cls, v):
        return np.sum(cls.sq(v)) * 2.0

    def __call__(self, x):
        return np.sum(self.act(self.W @ x) ** 2)


def _loss(x, weights):
    return np.sum(np.tanh(weights @ x))


def _weights_first(weights, x):
    return np.sum(np.tanh(weights @ x))


MODEL = Model(W)


def uses_global_model(x):
    return MODEL.loss(x)


def uses_classmethod(x):
    return Model.doubled(x) + MODEL.doubled(x)


class Plain:
    def run(self, x):
        return np.sum(self.scale(x) ** 2)

    def scale(self, v):
        return v * 3.0


def uses_new_instance(x):
    return Plain().run(x)


def uses_argument_object(model, x):
    return model.loss(x)


def uses_made_object(x):
    return Model(W).loss(x)


@pytest.mark.parametrize("fun, expected", [
    (MODEL.loss, lambda x: fd(MODEL.loss, [x], 0)),
    (uses_global_model, lambda x: fd(MODEL.loss, [x], 0)),
    (uses_classmethod, lambda x: 8 * x),
    (Model.doubled, lambda x: 4 * x),
    (MODEL, lambda x: fd(MODEL, [x], 0)),
    (functools.partial(_weights_first, W), lambda x: fd(MODEL.loss, [x], 0)),
    (uses_new_instance, lambda x: 18 * x),
])
def test_methods_compile_and_match_finite_differences(fun, expected):
    got, eager = both(fun, X)
    np.testing.assert_allclose(got, expected(X), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(eager, got, rtol=1e-10)


def test_closure_object_method():
    model = Model(2 * W)

    def f(x):
        return model.loss(x) + np.sum(model.W)

    got, eager = both(f, X)
    np.testing.assert_allclose(got, fd(model.loss, [X], 0), rtol=1e-6)
    np.testing.assert_allclose(eager, got)


def test_data_attributes_are_read_when_the_code_runs():
    model = Model(W.copy())
    g = srcgrad.grad(model.loss, strict=True)
    first = g(X)
    model.W = 2 * W
    np.testing.assert_allclose(g(X), fd(model.loss, [X], 0), rtol=1e-6)
    assert not np.allclose(first, g(X))


def test_rebinding_a_method_reached_through_self_rebuilds():
    class Net:
        def act(self, v):
            return np.tanh(v)

        def loss(self, x):
            return np.sum(self.act(x))

    net = Net()
    g = srcgrad.grad(net.loss, strict=True)
    np.testing.assert_allclose(g(X), 1 - np.tanh(X) ** 2)
    net.act = lambda v: v ** 3                          # on the object
    np.testing.assert_allclose(g(X), 3 * X ** 2)
    del net.act
    Net.act = lambda self, v: np.sin(v)                 # on the class
    np.testing.assert_allclose(g(X), np.cos(X))


def test_rebinding_a_method_of_a_new_instance_or_classmethod_rebuilds():
    class Sq:
        def run(self, x):
            return np.sum(self.inner(x))

        def inner(self, v):
            return v * v

    def f(x):
        return Sq().run(x)

    g = srcgrad.grad(f, strict=True)
    np.testing.assert_allclose(g(X), 2 * X)
    Sq.inner = lambda self, v: 3.0 * v
    np.testing.assert_allclose(g(X), 3.0 * np.ones(3))

    class C:
        @classmethod
        def go(cls, v):
            return np.sum(v * v)

    def h(x):
        return C.go(x)

    gh = srcgrad.grad(h, strict=True)
    np.testing.assert_allclose(gh(X), 2 * X)
    C.go = classmethod(lambda cls, v: np.sum(np.sin(v)))
    np.testing.assert_allclose(gh(X), np.cos(X))


def test_methods_of_argument_objects_and_objects_made_here_compile():
    """An object passed as an argument is compiled for its class at the call, one made in
    the function is followed when compiling (tests/frontend/test_argument_objects.py)."""
    np.testing.assert_allclose(srcgrad.grad(uses_argument_object, wrt=1, strict=True)(
        MODEL, X), fd(MODEL.loss, [X], 0), rtol=1e-6)
    np.testing.assert_allclose(srcgrad.grad(uses_made_object, strict=True)(X),
                               fd(MODEL.loss, [X], 0), rtol=1e-6)
    with pytest.raises(srcgrad.CompileError, match=r"model\.loss\(\)") as info:
        srcgrad.grad(uses_argument_object, wrt=1, strict=True)(X, X)   # an array: no .loss
    assert "the array method" not in str(info.value)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_allclose(srcgrad.grad(uses_argument_object, wrt=1)(MODEL, X),
                                   fd(MODEL.loss, [X], 0), rtol=1e-6)
        np.testing.assert_allclose(srcgrad.grad(uses_made_object)(X),
                                   fd(MODEL.loss, [X], 0), rtol=1e-6)


def test_partial_with_keywords_is_refused_when_strict():
    with pytest.raises(srcgrad.CompileError, match="keyword"):
        srcgrad.grad(functools.partial(_loss, weights=W), strict=True)


# ----------------------------------------------------------- *args, keyword-only, **kwargs
def star(*args):
    return np.sum(args[0] * args[1] ** 2)


def star_named(x, *rest, scale=2.0):
    return np.sum(x * rest[0]) * scale + len(rest)


def keyword_only(x, *, scale=2.0):
    return np.sum(np.sin(x) * scale)


def ignores_kwargs(x, **options):
    return np.sum(x ** 3)


def reads_kwargs(x, **options):
    return np.sum(x) * options.get("scale", 1.0)


def test_star_args_gradient_is_the_positional_argument_as_jax_gives_it():
    b = X[::-1].copy()
    got, eager = both(star, X, b)
    assert isinstance(got, np.ndarray) and isinstance(eager, np.ndarray)   # not a tuple
    np.testing.assert_allclose(got, b ** 2)
    np.testing.assert_allclose(eager, got)
    got, eager = both(star, X, b, wrt=1)
    np.testing.assert_allclose(got, 2 * X * b)
    np.testing.assert_allclose(eager, got)
    pair = srcgrad.grad(star, wrt=(0, 1), strict=True)(X, b)
    np.testing.assert_allclose(pair[0], b ** 2)
    np.testing.assert_allclose(pair[1], 2 * X * b)
    value, grad = srcgrad.value_and_grad(star, strict=True)(X, b)
    assert value == pytest.approx(star(X, b))
    np.testing.assert_allclose(grad, b ** 2)
    with pytest.raises(TypeError, match="positional arguments"):
        srcgrad.grad(star, wrt=2, strict=True)(X, b)


def test_star_args_match_jax():
    jax = pytest.importorskip("jax")
    jnp = pytest.importorskip("jax.numpy")
    jax.config.update("jax_enable_x64", True)
    b = X[::-1].copy()

    def jstar(*args):
        return jnp.sum(args[0] * args[1] ** 2)

    for k in (0, 1):
        np.testing.assert_allclose(srcgrad.grad(star, wrt=k, strict=True)(X, b),
                                   np.asarray(jax.grad(jstar, argnums=k)(X, b)))


def test_named_varargs_and_keyword_only():
    b = X ** 2
    got, eager = both(star_named, X, b, b, scale=3.0)
    np.testing.assert_allclose(got, 3.0 * b)
    np.testing.assert_allclose(eager, got)
    got, eager = both(star_named, X, b, wrt=1)
    np.testing.assert_allclose(got, 2.0 * X)
    np.testing.assert_allclose(eager, got)
    got, eager = both(keyword_only, X, scale=0.5)
    np.testing.assert_allclose(got, 0.5 * np.cos(X))
    np.testing.assert_allclose(eager, got)
    np.testing.assert_allclose(srcgrad.grad(keyword_only, strict=True)(X), 2 * np.cos(X))
    with pytest.raises(ValueError, match="not positional"):
        srcgrad.grad(keyword_only, wrt="scale")


def test_kwargs_ignored_compile_and_kwargs_read_are_refused():
    got, eager = both(ignores_kwargs, X, unused=4.0)
    np.testing.assert_allclose(got, 3 * X ** 2)
    np.testing.assert_allclose(eager, got)
    with pytest.raises(srcgrad.CompileError, match=r"\*\*options"):
        srcgrad.grad(reads_kwargs, strict=True)
    with pytest.warns(srcgrad.FallbackWarning):
        g = srcgrad.grad(reads_kwargs)
    np.testing.assert_allclose(g(X, scale=3.0), 3.0 * np.ones(3))


def _helper_star(*vs, w=1.0):
    return w * sum(np.sum(v ** 2) for v in vs)


def _helper_keyword(v, *, lam=0.1):
    return lam * np.sum(v ** 2)


def test_helpers_with_star_args_and_keyword_only_are_lowered_in_place():
    def f(x):
        return _helper_star(x, 2.0 * x, w=0.5) + _helper_keyword(x, lam=3.0)

    got, eager = both(f, X)
    np.testing.assert_allclose(got, fd(f, [X], 0), rtol=1e-6)
    np.testing.assert_allclose(eager, got)


# ------------------------------------------------------------------ functions as defaults
def reduce_default(a, _r=np.sum):
    return _r(np.exp(a))


def _halve(v):
    return v * 0.5


def act_default(a, act=_halve):
    return np.sum(act(a) ** 2)


def test_a_function_default_is_bound_when_compiling():
    got, eager = both(reduce_default, X)
    np.testing.assert_allclose(got, np.exp(X))
    np.testing.assert_allclose(eager, got)
    g = srcgrad.grad(reduce_default, strict=True)
    np.testing.assert_allclose(g(X, np.mean), np.exp(X) / 3)        # another one passed
    np.testing.assert_allclose(g(X, _r=np.max), [0, 0, np.exp(X[2])])
    np.testing.assert_allclose(g(X), np.exp(X))
    got, eager = both(act_default, X)
    np.testing.assert_allclose(got, 0.5 * X)
    np.testing.assert_allclose(eager, got)

    def caller(x):
        return reduce_default(x) + reduce_default(x, np.mean) + act_default(x, np.sin)

    got, eager = both(caller, X)
    np.testing.assert_allclose(got, fd(caller, [X], 0), rtol=1e-6)
    np.testing.assert_allclose(eager, got)


def test_rebinding_a_default_rebuilds():
    def f(a, _r=np.sum):
        return _r(a * a)

    g = srcgrad.grad(f, strict=True)
    np.testing.assert_allclose(g(X), 2 * X)
    f.__defaults__ = (np.mean,)
    np.testing.assert_allclose(g(X), 2 * X / 3)
