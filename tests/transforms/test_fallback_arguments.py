"""``srcgrad.Tensor`` arguments of every transform: differentiated by their values, never zeros.

A Tensor that requires no grad is data to the caller's graph but an argument like any other
to ``grad``: its gradient is the plain NumPy one (a NumPy array of its dtype).  A Tensor that
requires grad gets the same values, recorded (a Tensor whose graph leads back to it, so that
the caller's ``backward`` goes through the derivative).  Both hold in compiled and fallback
functions, as pytree leaves, and for every transform; the caller's Tensors are never written.
"""

from __future__ import annotations

import types
import warnings

import numpy as np
import pytest

import srcgrad

A = np.array([0.3, -0.7, 1.1])
B = np.array([1.5, 0.2, -0.4])
_box = types.SimpleNamespace()


def f_compiled(x):
    return np.sum(np.sin(x) * x)


def f_fallback(x):
    _box.v = x                       # an attribute assignment: the compiler refuses it
    return np.sum(np.sin(_box.v) * _box.v)


def grad_of_f(x):
    return np.sin(x) + x * np.cos(x)


def hessian_of_f(x):
    return np.diag(2 * np.cos(x) - x * np.sin(x))


def tree_compiled(p):
    return np.sum(np.sin(p[0]) * p[1])


def tree_fallback(p):
    _box.v = p
    return np.sum(np.sin(_box.v[0]) * _box.v[1])


def dict_compiled(p):
    return np.sum(np.sin(p["a"]) * p["b"])


def dict_fallback(p):
    _box.v = p
    return np.sum(np.sin(_box.v["a"]) * _box.v["b"])


FUNCTIONS = {"compiled": f_compiled, "fallback": f_fallback}
TRANSFORMS = ["grad", "value_and_grad", "vjp", "jvp", "hessian", "jacfwd", "jacrev"]


def _tensor(values, requires_grad):
    return srcgrad.tensor(values.copy(), dtype=srcgrad.float64, requires_grad=requires_grad)


def _plain(value):
    """A result as a NumPy array (a recorded Tensor's values)."""
    if isinstance(value, srcgrad.Tensor):
        return value.detach().numpy()
    return np.asarray(value)


def _run(kind, fun, x):
    """The derivative ``kind`` of ``fun`` at ``x``: what it should equal is grad_of_f (the
    gradient, a Jacobian-vector or vector-Jacobian product with ones) or hessian_of_f."""
    if kind == "grad":
        return srcgrad.grad(fun)(x)
    if kind == "value_and_grad":
        return srcgrad.value_and_grad(fun)(x)[1]
    if kind == "vjp":
        return srcgrad.vjp(fun, x)[1](1.0)[0]
    if kind == "jvp":            # along e_k, one at a time: the gradient's entries
        return np.array([_plain(srcgrad.jvp(fun, (x,), (np.eye(3)[k],))[1]) for k in range(3)])
    return getattr(srcgrad, kind)(fun)(x)


def _expected(kind, x):
    return hessian_of_f(x) if kind == "hessian" else grad_of_f(x)


@pytest.mark.parametrize("requires_grad", [False, True])
@pytest.mark.parametrize("where", list(FUNCTIONS))
@pytest.mark.parametrize("kind", TRANSFORMS)
def test_a_tensor_argument_gets_its_true_derivative(kind, where, requires_grad):
    x = _tensor(A, requires_grad)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", srcgrad.FallbackWarning)
        got = _run(kind, FUNCTIONS[where], x)
    if kind in ("jacfwd", "jacrev"):
        got = np.diag(_plain(got)) if _plain(got).ndim == 2 else got
    np.testing.assert_allclose(_plain(got), _expected(kind, A), rtol=1e-12)
    if not requires_grad and kind != "jvp":
        assert type(got) is np.ndarray and got.dtype == np.float64   # plain, as for arrays
    np.testing.assert_array_equal(x.detach().numpy(), A)             # never written


@pytest.mark.parametrize("where", list(FUNCTIONS))
def test_a_gradient_of_a_tensor_that_requires_grad_is_recorded(where):
    x = _tensor(A, True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", srcgrad.FallbackWarning)
        g = srcgrad.grad(FUNCTIONS[where])(x)
    assert isinstance(g, srcgrad.Tensor) and g.requires_grad
    g.sum().backward()                  # d/dx sum(grad f) = the Hessian's row sums
    np.testing.assert_allclose(x.grad.numpy(), hessian_of_f(A).sum(axis=1), rtol=1e-12)


def test_a_float32_tensor_gets_a_float32_gradient():
    x = srcgrad.Tensor(A)                                  # float32, as torch.Tensor
    got = srcgrad.grad(f_compiled)(x)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, grad_of_f(A.astype(np.float32)), rtol=1e-5)


TREES = {
    "list": ([0, 1], lambda a, b: [a, b], {"compiled": tree_compiled, "fallback": tree_fallback}),
    "tuple": ([0, 1], lambda a, b: (a, b), {"compiled": tree_compiled, "fallback": tree_fallback}),
    "dict": (["a", "b"], lambda a, b: {"a": a, "b": b},
             {"compiled": dict_compiled, "fallback": dict_fallback}),
}


@pytest.mark.parametrize("requires_grad", [False, True])
@pytest.mark.parametrize("where", ["compiled", "fallback"])
@pytest.mark.parametrize("kind", ["grad", "value_and_grad", "vjp", "jvp", "jacrev"])
@pytest.mark.parametrize("tree", list(TREES))
def test_tensors_inside_pytrees_get_their_true_derivatives(tree, kind, where, requires_grad):
    keys, build, functions = TREES[tree]
    fun = functions[where]
    for mixed in (False, True):         # every leaf a Tensor, or a Tensor beside an array
        a = _tensor(A, requires_grad)
        b = B.copy() if mixed else _tensor(B, requires_grad)
        p = build(a, b)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", srcgrad.FallbackWarning)
            if kind == "grad":
                got = srcgrad.grad(fun)(p)
            elif kind == "value_and_grad":
                got = srcgrad.value_and_grad(fun)(p)[1]
            elif kind == "vjp":
                got = srcgrad.vjp(fun, p)[1](1.0)[0]
            elif kind == "jvp":         # the derivative along (ones, zeros) and (zeros, ones)
                ones, zeros = np.ones(3), np.zeros(3)
                got = build(*[_plain(srcgrad.jvp(fun, (p,), (build(*t),))[1])
                              for t in ((ones, zeros), (zeros, ones))])
            elif requires_grad:          # recorded pytrees: a clear refusal, or the values
                try:
                    got = srcgrad.jacrev(fun)(p)
                except srcgrad.CompileError as exc:
                    assert "lists, tuples or dicts" in str(exc)
                    continue
            else:
                got = srcgrad.jacrev(fun)(p)
        want = {keys[0]: np.cos(A) * B, keys[1]: np.sin(A)}
        if kind == "jvp":
            want = {keys[0]: np.sum(np.cos(A) * B), keys[1]: np.sum(np.sin(A))}
        for k in keys:
            np.testing.assert_allclose(_plain(got[k]), want[k], rtol=1e-12)
        np.testing.assert_array_equal(_plain(a), A)


def test_a_non_differentiated_tensor_is_read_by_its_values():
    y = _tensor(B, False)
    got = srcgrad.grad(lambda x, y: np.sum(x * y))(A, y)
    np.testing.assert_allclose(got, B)
    yr = _tensor(B, True)               # recorded: the result keeps its graph to yr
    got = srcgrad.grad(lambda x, y: np.sum(x * y * y))(A, yr)
    np.testing.assert_allclose(_plain(got), B * B)
    got.sum().backward()
    np.testing.assert_allclose(yr.grad.numpy(), 2 * B)


def test_no_grad_takes_a_tensor_that_requires_grad_by_its_values():
    x = _tensor(A, True)
    with srcgrad.no_grad():
        got = srcgrad.grad(f_compiled)(x)
    assert type(got) is np.ndarray
    np.testing.assert_allclose(got, grad_of_f(A), rtol=1e-12)
