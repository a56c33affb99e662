"""Objects made in the function compiled (``Sequential(Linear(W, b), ReLU())``): their state
followed when compiling, ``self.attr = value`` modelled exactly, compiled (strict) == the eager
fallback == central finite differences == HIPS autograd; refused (with file:line) wherever the
state could not follow (returned, printed, carried into a loop or branch lowered as a block)."""

from __future__ import annotations

import sys
import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose

import srcgrad
from srcgrad.errors import CompileError
from srcgrad.transforms.grad import Transform

RS = np.random.RandomState(3)
X = RS.randn(5, 3)
W1, B1 = RS.randn(3, 4), RS.randn(4)
W2, B2 = RS.randn(4, 2), RS.randn(2)


class Module:
    def __call__(self, x):
        return self.forward(x)


class Linear(Module):
    def __init__(self, W, b):
        self.W, self.b = W, b

    def forward(self, x):
        return x @ self.W + self.b


class Tanh(Module):
    def forward(self, x):
        out = np.tanh(x)
        self.cache = out                  # kept for its own backward
        return out

    def backward(self, d):
        return d * (1 - self.cache ** 2)


class Sequential(Module):
    def __init__(self, *layers):
        self.layers = list(layers)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


class Box:
    def __init__(self, v):
        self.v = v

    def double(self):
        self.v = self.v * 2.0
        return self


class Gate(Module):
    def __init__(self, W, active=True):
        self.W, self.active = W, active

    def forward(self, x):
        if self.active:                   # known when compiling: the branch taken is lowered
            self.cache = x
            return np.tanh(x @ self.W)
        return x


class Counter:
    steps = 3                             # a class attribute: plain data


def sequential(W1, x):
    net = Sequential(Linear(W1, B1), Tanh(), Linear(W2, B2))
    return np.sum(net(x) ** 2)


def cached_backward(x):
    act = Tanh()
    y = act(x)
    return np.sum(act.backward(y))          # reads the input it cached


def aliased(x):
    a = Box(x)
    b = a
    b.v = x * 3.0                         # seen through a too, as in Python
    return np.sum(a.v ** 2)


def chained(x):
    return np.sum(Box(x).double().double().v)


def unrolled(x):
    box = Box(x)
    for _ in range(3):
        box.v = np.sin(box.v)
    return np.sum(box.v) * Counter.steps


def nested_state(x):
    outer = Box(Box(x))
    outer.v.v = outer.v.v * 2.0
    return np.sum(outer.v.v ** 2)


def renamed(x):
    box = Box(x * 2.0)
    y = box.v                             # a second name of what the object holds
    box.v = np.sin(x)
    z = box.v
    return np.sum(y * box.v + z)


def gated(W, x):
    layers = [Gate(W), Gate(W, active=False), Gate(W * 0.5)]
    for layer in layers:
        x = layer(x)
    return np.sum(layers[2].cache ** 2) + np.sum(x)


def returned(x):
    return Box(x)


def printed(x):
    box = Box(x)
    print(box)
    return np.sum(box.v)


def in_branch(x, flag):
    box = Box(x)
    if flag > 0:
        box.v = x * 2.0
    return np.sum(box.v)


def in_runtime_loop(x, n):
    box = Box(x)
    for _ in range(n):
        box.v = np.sin(box.v)
    return np.sum(box.v)


CASES = {
    "sequential": (sequential, lambda: (W1.copy(), X), 0),
    "sequential_x": (sequential, lambda: (W1.copy(), X), 1),
    "cached_backward": (cached_backward, lambda: (X,), 0),
    "aliased": (aliased, lambda: (X,), 0),
    "chained": (chained, lambda: (X,), 0),
    "unrolled": (unrolled, lambda: (X,), 0),
    "nested_state": (nested_state, lambda: (X,), 0),
    "renamed": (renamed, lambda: (X,), 0),
    "gated": (gated, lambda: (RS.randn(3, 3), X), 0),
}


def fd(f, args, i, eps=1e-6):
    args = list(args)
    x0 = np.asarray(args[i], dtype=float)
    g = np.zeros_like(x0)
    for k in np.ndindex(x0.shape):
        hi, lo = x0.copy(), x0.copy()
        hi[k] += eps
        lo[k] -= eps
        g[k] = (f(*args[:i], hi, *args[i + 1:]) - f(*args[:i], lo, *args[i + 1:])) / (2 * eps)
    return g


def eager(f, args, wrt):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = Transform(f, "grad", wrt)
        t._fn, t.fallback_reason, t._latest = None, "test", None
        return t(*args)


@pytest.mark.parametrize("name", sorted(CASES))
def test_compiled_equals_eager_and_finite_differences(name):
    f, make, wrt = CASES[name]
    args = make()
    g = srcgrad.grad(f, wrt=wrt, strict=True)
    got = g(*args)
    assert g.source is not None
    assert_allclose(got, eager(f, args, wrt), rtol=1e-10, atol=1e-12)
    assert_allclose(got, fd(f, args, wrt), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("name", ["sequential", "cached_backward", "aliased", "unrolled"])
def test_compiled_equals_hips_autograd(name, monkeypatch):
    autograd = pytest.importorskip("autograd")
    import autograd.numpy as anp
    f, make, wrt = CASES[name]
    args = make()
    got = srcgrad.grad(f, wrt=wrt, strict=True)(*args)
    monkeypatch.setattr(sys.modules[__name__], "np", anp)
    assert_allclose(got, autograd.grad(f, wrt)(*args), rtol=1e-10, atol=1e-12)


def test_the_generated_code_holds_no_object():
    source = srcgrad.grad(sequential, strict=True).source
    assert "Sequential" not in source.split('"""', 2)[2] and "cache" not in source


@pytest.mark.parametrize("f, args, match", [
    (returned, (X,), "object made in the function"),
    (printed, (X,), "object made in the function"),
    (in_branch, (X, 1.0), "object made in the function"),
    (in_runtime_loop, (X, 3), "object made in the function"),
])
def test_an_object_whose_state_cannot_follow_is_refused(f, args, match):
    with pytest.raises(CompileError, match=match) as info:
        srcgrad.grad(f, strict=True)(*args)
    assert info.value.filename == __file__
    assert f.__code__.co_firstlineno < info.value.lineno <= f.__code__.co_firstlineno + 6


def test_refused_objects_run_eagerly_in_default_mode():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = srcgrad.grad(in_branch)(X, 1.0)
    assert_allclose(got, fd(in_branch, (X, 1.0), 0), rtol=1e-5)
