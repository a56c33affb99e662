"""Second derivatives on the eager engine, forward over reverse: a backward that reads its
operation's output (``tanh``, ``exp``, ``sqrt``…) passes that output's tangent on, as
PyTorch's does; and transforms built for a function default never run for another function."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import srcgrad
import srcgrad.autograd.forward_ad as fwAD
from srcgrad.runtime.rules.primitives import NUMPY_BINDINGS
from srcgrad.transforms.fallback import eager_hessian

X = np.array([0.3, 0.45, 0.7])


def _reads_output(ufunc):
    prim = NUMPY_BINDINGS[ufunc][0]
    return prim.reads and prim.reads[0].get("ans") == "data"


UNARY = sorted((f for f in NUMPY_BINDINGS if isinstance(f, np.ufunc) and f.nin == 1
                and NUMPY_BINDINGS[f][0].differentiable and _reads_output(f)),
               key=lambda f: f.__name__)


def test_there_are_rules_that_read_their_output():
    assert {"exp", "tanh", "sqrt"} <= {f.__name__ for f in UNARY}


@pytest.mark.parametrize("ufunc", UNARY, ids=lambda f: f.__name__)
def test_eager_hessian_of_a_rule_reading_its_output(ufunc):
    def f(x):
        return np.sum(ufunc(x) * x)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = eager_hessian(f, (X.copy(),), 0)
    grad = srcgrad.grad(f, strict=True)
    eps = 1e-6
    fd = np.stack([(grad(X + eps * e) - grad(X - eps * e)) / (2 * eps) for e in np.eye(3)], 1)
    np.testing.assert_allclose(got, fd, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["tanh", "exp", "sqrt", "sigmoid"])
def test_forward_over_backward_matches_pytorch(name):
    torch = pytest.importorskip("torch")
    import torch.autograd.forward_ad as tAD
    results = []
    for lib, ad in ((srcgrad, fwAD), (torch, tAD)):
        x = lib.tensor(X, requires_grad=True, dtype=lib.float64)
        with ad.dual_level():
            xd = ad.make_dual(x, lib.tensor([1.0, -2.0, 0.5], dtype=lib.float64))
            y = getattr(xd, name)().sum()
            g, = lib.autograd.grad(y, xd, create_graph=True)
            results.append(ad.unpack_dual(g).tangent.detach().numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-12)


def g_with_default(x, act=np.tanh):
    return np.sum(act(x) * x)


@pytest.mark.parametrize("transform", ["hessian", "jacfwd_of_grad", "jacrev_of_grad", "jvp"])
def test_another_function_than_the_default_is_the_one_differentiated(transform):
    x, v = X.copy(), np.array([1.0, -1.0, 0.5])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", srcgrad.FallbackWarning)
        if transform == "hessian":
            got, want = srcgrad.hessian(g_with_default)(x, np.sin), \
                np.diag(2 * np.cos(x) - x * np.sin(x))
        elif transform == "jvp":
            got = srcgrad.jvp(g_with_default, (x, np.sin), (v, None))[1]
            want = np.sum((np.cos(x) * x + np.sin(x)) * v)
        else:
            jac = getattr(srcgrad, transform.split("_")[0])
            got = jac(srcgrad.grad(g_with_default))(x, np.sin)
            want = np.diag(2 * np.cos(x) - x * np.sin(x))
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    default = srcgrad.hessian(g_with_default)(x)          # and the default's own, compiled
    np.testing.assert_allclose(default, np.diag(
        2 * (1 - np.tanh(x) ** 2) - 2 * x * np.tanh(x) * (1 - np.tanh(x) ** 2)), rtol=1e-10)


def test_strict_refuses_another_function_than_the_default():
    with pytest.raises(srcgrad.CompileError, match="act is given another function"):
        srcgrad.hessian(g_with_default, strict=True)(X.copy(), np.sin)


def test_eager_jvp_writes_a_0d_array_argument_in_place_as_numpy_does():
    from srcgrad.transforms.fallback import eager_jvp

    def f(s):
        a = s
        a *= 2.0                  # a 0-d array is written in place: s sees it
        return np.sin(s) * 0.73

    s = np.array(0.357)
    value, tangent = eager_jvp(f, (s.copy(),), (np.array(1.0),), (0,))
    assert value == pytest.approx(f(s.copy()), rel=1e-14)
    assert tangent == pytest.approx(2 * 0.73 * np.cos(2 * s), rel=1e-12)
    assert s == 0.357
