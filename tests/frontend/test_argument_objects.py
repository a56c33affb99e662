"""Objects passed as arguments (and objects known when compiling called or used in loops):
compiled (strict) == the eager fallback == central finite differences == HIPS autograd, code
built per class and guarded by it, and precise CompileErrors for what is not compiled."""

from __future__ import annotations

import sys
import warnings
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import pytest
from numpy.testing import assert_allclose

import srcgrad
from srcgrad.errors import CompileError
from srcgrad.transforms.grad import Transform

RS = np.random.RandomState(7)
X = RS.randn(4, 3)


class Dense:
    def __init__(self, W, b):
        self.W, self.b = W, b

    def forward_pass(self, x, params):
        return np.tanh(x @ self.W * params + self.b)

    def __call__(self, x):
        return x @ self.W + self.b


class Scale:
    def __init__(self, log_scale):
        self.log_scale = log_scale

    def forward_pass(self, x, params):
        return x * np.exp(self.log_scale)


class Net:
    def __init__(self, layers):
        self.layers = layers

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return np.tanh(x)


@dataclass(frozen=True)
class Config:
    activation: str = "tanh"
    n_layers: int = 2
    l2: float = 0.1


class Settings(NamedTuple):
    power: int
    weight: float


class Caching:
    def __init__(self, W):
        self.W = W
        self.cache = None

    def forward(self, x):
        self.cache = x
        return x @ self.W


class NoCall:
    def __init__(self, W):
        self.W = W


def through_layers(params, x, layers):
    for layer in layers:
        x = layer.forward_pass(x, params)
    return np.sum(x ** 2)


def called(x, model):
    return np.sum(model(x) ** 2)


def configured(x, cfg):
    for _ in range(cfg.n_layers):
        x = np.tanh(x) if cfg.activation == "tanh" else np.maximum(x, 0)
    return np.sum(x) * cfg.l2


def scaled(x, p):
    return np.sum(x * np.exp(p.log_scale))


def apply(m, x):
    return m(x)


def via_helper(x, m):
    return np.sum(apply(m, x))


def nested(x, net):
    return np.sum(net(x))


def in_loop(x, m):
    h = x
    for _ in range(3):
        h = m(h) * 0.5
    return np.sum(h)


def twice(params, x, layers):
    for layer in layers:
        x = layer.forward_pass(x, params)
    for layer in layers:                          # the same objects, read again
        x = layer.forward_pass(x, params)
    return np.sum(x ** 2)


def with_settings(x, s):
    return np.sum(x ** s.power) * s.weight


def caching(x, layer):
    return np.sum(layer.forward(x))


def not_callable(x, m):
    return np.sum(m(x))


def missing(x, m):
    return np.sum(x * m.bias)


def array_method(x):
    y = x * 2.0
    return y.forward()


GLOBAL_CELL = Dense(RS.randn(3, 3), RS.randn(3))


class Holder:
    def __init__(self):
        self.cell = GLOBAL_CELL

    def loss(self, x):
        h = x
        for _ in range(2):
            h = np.tanh(self.cell(h))
        return np.sum(h)


HOLDER = Holder()


def global_in_loop(x):
    return HOLDER.loss(x)


def global_called(x):
    return np.sum(GLOBAL_CELL(x) ** 2)


def dense():
    return Dense(RS.randn(3, 3), RS.randn(3))


CASES = {
    "list_of_layers": (through_layers, lambda: (0.7, X, [dense(), Scale(0.3), dense()]), 0),
    "list_of_layers_x": (through_layers, lambda: (0.7, X, [dense(), Scale(0.3)]), 1),
    "call": (called, lambda: (X, dense()), 0),
    "twice": (twice, lambda: (0.7, X, [Scale(0.2), dense()]), 1),
    "config_tanh": (configured, lambda: (X, Config()), 0),
    "config_relu": (configured, lambda: (X, Config("relu", 3, 0.5)), 0),
    "float_attribute": (scaled, lambda: (X, Scale(0.2)), 0),
    "helper": (via_helper, lambda: (X, dense()), 0),
    "nested": (nested, lambda: (X, Net([dense(), dense()])), 0),
    "loop": (in_loop, lambda: (X, dense()), 0),
    "namedtuple": (with_settings, lambda: (X, Settings(3, 0.25)), 0),
    "global_in_loop": (global_in_loop, lambda: (X,), 0),
    "global_called": (global_called, lambda: (X,), 0),
}


def fd(f, args, i, eps=1e-6):
    args = list(args)
    x0 = np.asarray(args[i], dtype=float)
    g = np.zeros_like(x0)
    for k in np.ndindex(x0.shape):
        hi, lo = x0.copy(), x0.copy()
        hi[k] += eps
        lo[k] -= eps
        up = f(*args[:i], hi if x0.ndim else float(hi), *args[i + 1:])
        down = f(*args[:i], lo if x0.ndim else float(lo), *args[i + 1:])
        g[k] = (up - down) / (2 * eps)
    return g


def eager(f, args, wrt):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = Transform(f, "grad", wrt)
        t._fn, t.fallback_reason, t._latest = None, "test", None   # the eager engine
        return t(*args)


@pytest.mark.parametrize("name", sorted(CASES))
def test_compiled_equals_eager_and_finite_differences(name):
    f, make, wrt = CASES[name]
    args = make()
    g = srcgrad.grad(f, wrt=wrt, strict=True)
    got = g(*args)
    assert g.source is not None
    np.testing.assert_allclose(got, eager(f, args, wrt), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got, fd(f, args, wrt), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("name", ["list_of_layers", "call", "config_relu", "nested",
                                  "namedtuple", "global_in_loop"])
def test_compiled_equals_hips_autograd(name, monkeypatch):
    autograd = pytest.importorskip("autograd")
    import autograd.numpy as anp
    f, make, wrt = CASES[name]
    args = make()
    got = srcgrad.grad(f, wrt=wrt, strict=True)(*args)
    monkeypatch.setattr(sys.modules[__name__], "np", anp)   # the methods read np too
    want = autograd.grad(f, wrt)(*args)
    assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def test_code_is_built_per_class_and_attribute_values_are_read_at_run_time():
    g = Transform(called, "grad", 0, strict=True)          # its own: counted from none
    first, second = dense(), dense()
    np.testing.assert_allclose(g(X, first), fd(called, (X, first), 0), rtol=1e-5)
    np.testing.assert_allclose(g(X, second), fd(called, (X, second), 0), rtol=1e-5)
    assert len(g.sources) == 1                    # same class: the same code
    net = Net([dense()])
    np.testing.assert_allclose(g(X, net), fd(called, (X, net), 0), rtol=1e-5)
    assert len(g.sources) == 2                    # another class: built again
    h = srcgrad.grad(scaled, strict=True)
    p = Scale(0.2)
    h(X, p)
    p.log_scale = -1.0                            # a float: read when the code runs
    np.testing.assert_allclose(h(X, p), np.exp(-1.0) * np.ones_like(X))


def test_settled_attributes_are_part_of_the_guard():
    g = Transform(configured, "grad", 0, strict=True)
    for cfg in (Config(), Config("relu", 3, 0.5), Config("tanh", 1, 0.2)):
        np.testing.assert_allclose(g(X, cfg), fd(configured, (X, cfg), 0), rtol=1e-5,
                                   atol=1e-8)
    assert len(g.sources) == 3


def test_a_list_with_other_classes_is_built_again():
    g = Transform(through_layers, "grad", 0, strict=True)
    for layers in ([dense(), dense()], [Scale(0.1), dense()], [dense(), dense()]):
        np.testing.assert_allclose(g(0.7, X, layers), fd(through_layers, (0.7, X, layers), 0),
                                   rtol=1e-5)
    assert len(g.sources) == 2


def _refused(f, args, match):
    g = srcgrad.grad(f, strict=True)
    with pytest.raises(CompileError, match=match) as info:
        g(*args)
    assert info.value.filename == __file__ and info.value.lineno is not None
    return info.value


def test_writing_an_attribute_of_an_argument_object_is_refused():
    layer = Caching(RS.randn(3, 2))
    error = _refused(caching, (X, layer), "attribute")
    assert error.lineno == Caching.forward.__code__.co_firstlineno + 1
    assert layer.cache is None                     # nothing written


def test_calling_an_object_without_call_is_refused():
    _refused(not_callable, (X, NoCall(np.eye(3))), "not_callable|m\\(\\)")


def test_a_missing_attribute_is_refused_with_its_line():
    error = _refused(missing, (X, Scale(0.1)), "no attribute 'bias'")
    assert error.lineno == missing.__code__.co_firstlineno + 1


def test_arrays_passed_where_objects_are_used_are_refused_at_the_call():
    g = srcgrad.grad(called, strict=True)
    with pytest.raises(CompileError, match="model"):
        g(X, X)


def test_a_method_of_a_computed_array_is_still_refused_when_compiling():
    with pytest.raises(CompileError, match="forward"):
        srcgrad.grad(array_method, strict=True)


def test_default_mode_falls_back_for_a_refused_write():
    layer = Caching(RS.randn(3, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = srcgrad.grad(caching)(X, layer)
    np.testing.assert_allclose(got, fd(caching, (X, Caching(layer.W)), 0), rtol=1e-5)


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")
def test_an_array_subclass_attribute_is_refused():
    error = _refused(scaled, (X, Scale(np.asmatrix(np.ones((4, 3))))), "matrix")
    assert error.lineno == scaled.__code__.co_firstlineno + 1


class Doubler:
    def __call__(self, x):
        return 2.0 * x


DOUBLER = Doubler()


def global_call(x):
    return np.sum(DOUBLER(x))


def test_a_global_objects_call_rebound_is_compiled_again(monkeypatch):
    g = srcgrad.grad(global_call, strict=True)
    assert_allclose(g(X), 2.0 * np.ones_like(X))
    monkeypatch.setattr(Doubler, "__call__", lambda self, x: 3.0 * x)
    assert_allclose(g(X), 3.0 * np.ones_like(X))
