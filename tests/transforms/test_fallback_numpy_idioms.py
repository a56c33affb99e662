"""The eager fallback runs the NumPy idioms the compiler may refuse, with exact gradients.

Each function starts with an attribute assignment (``_box.v = ...``), which the compiler
refuses, so that ``srcgrad.grad`` answers on the eager engine with one ``FallbackWarning``.
Gradients are checked against central differences and, where it runs the same function,
HIPS autograd (the function's ``np`` and SciPy names rebound to autograd's); the caller's
arguments are checked unchanged.
"""

from __future__ import annotations

import copy
import math
import threading
import types
import warnings

import numpy as np
import pytest
import scipy.linalg
import scipy.signal
import scipy.special
from scipy.special import logsumexp
from scipy.stats import norm

import srcgrad
from srcgrad.transforms.grad import Transform

_box = types.SimpleNamespace()
RS = np.random.RandomState(3)
X = RS.randn(4, 3)
W = RS.randn(3, 2)
Z = RS.randn(3, 4)
V = RS.randn(5)
GLOBAL_DATA = RS.randn(2, 3)


def fill_rows(w, x):
    _box.v = 0
    out = np.zeros((x.shape[0], w.shape[1]))
    for i in range(x.shape[0]):
        out[i] = x[i].dot(w) * 2.0
    return np.sum(np.tanh(out) ** 2)


def fill_like_and_empty(v):
    _box.v = 0
    a = np.empty(v.shape[0])
    b = np.zeros_like(a)
    for i in range(v.shape[0]):
        a[i] = v[i] ** 2
        b[i] = np.sin(v[i]) + a[i]
    c = np.full((2,), v[0])
    return np.sum(a * b) + np.sum(c ** 3)


def recurrence(w, x):
    _box.v = 0
    h = np.zeros(x.shape[0] + 1)
    h[0] = 0.5
    for t in range(x.shape[0]):
        h[t + 1] = np.tanh(h[t] * w[0] + x[t] * w[1])
    return np.sum(h ** 2)


def data_dot_param(w, x):
    _box.v = 0
    hidden = x.reshape(x.shape[0], -1).dot(w)
    return np.sum(np.maximum(hidden, 0.0) ** 2)


def softmax_in_place(z):
    _box.v = 0
    probs = np.exp(z)
    probs /= probs.sum(axis=1, keepdims=True)
    logits = z * 2.0
    logits -= logits.max(axis=1, keepdims=True)
    probs *= 3.0
    return np.sum(probs ** 2) + np.sum(np.exp(logits))


def scipy_calls(z):
    _box.v = 0
    lse = logsumexp(z, axis=1, keepdims=True)
    lp = np.sum(norm.logpdf(z, 0.5, 2.0))
    return np.sum(z - lse) ** 2 + lp + np.sum(scipy.special.logsumexp(z * 0.5, axis=0))


def convolve_and_erf(v):
    _box.v = 0
    c = scipy.signal.convolve(v, np.array([0.25, 0.5, 0.25]), mode="same")
    return np.sum(scipy.special.erf(c) ** 2)


CASES = {
    "fill_rows": (fill_rows, lambda: (W.copy(), X.copy()), 0),
    "fill_like_and_empty": (fill_like_and_empty, lambda: (V.copy(),), 0),
    "recurrence": (recurrence, lambda: (np.array([0.7, -0.4]), V.copy()), 0),
    "data_dot_param": (data_dot_param, lambda: (W.copy(), X.copy()), 0),
    "softmax_in_place": (softmax_in_place, lambda: (Z.copy(),), 0),
    "scipy_calls": (scipy_calls, lambda: (Z.copy(),), 0),
    "convolve_and_erf": (convolve_and_erf, lambda: (V.copy(),), 0),
}
ORACLE = ("data_dot_param", "softmax_in_place", "scipy_calls")


def _fd(f, args, p, eps=1e-6):
    x = args[p]
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        up, down = [a.copy() for a in args], [a.copy() for a in args]
        up[p][i] += eps
        down[p][i] -= eps
        g[i] = (f(*up) - f(*down)) / (2 * eps)
    return g


def _fallback_grad(f, args, p, **kwargs):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        g = Transform(f, "grad", p, **kwargs)(*args)     # made anew: it warns again
    assert any(issubclass(w.category, srcgrad.FallbackWarning) for w in seen)
    return g


@pytest.mark.parametrize("name", sorted(CASES))
def test_fallback_gradient_equals_finite_differences(name):
    f, make, p = CASES[name]
    args = make()
    kept = copy.deepcopy(args)
    g = _fallback_grad(f, args, p)
    for a, b in zip(args, kept):
        np.testing.assert_array_equal(a, b)          # the caller's arguments are not written
    assert type(g) is np.ndarray and g.shape == args[p].shape
    np.testing.assert_allclose(g, _fd(f, make(), p), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name", ORACLE)
def test_fallback_gradient_equals_hips_autograd(name):
    autograd = pytest.importorskip("autograd")
    import autograd.numpy as anp
    import autograd.scipy.special as aspecial
    import autograd.scipy.stats.norm as anorm
    f, make, p = CASES[name]
    names = {**f.__globals__, "np": anp, "logsumexp": aspecial.logsumexp,
             "norm": anorm, "scipy": types.SimpleNamespace(special=aspecial)}
    twin = types.FunctionType(f.__code__, names, f.__name__)
    np.testing.assert_allclose(_fallback_grad(f, make(), p),
                               autograd.grad(twin, p)(*make()), rtol=1e-10, atol=1e-12)


def test_value_and_grad_in_place_matches_numpy():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", srcgrad.FallbackWarning)
        value, g = srcgrad.value_and_grad(softmax_in_place)(Z.copy())
    assert value == pytest.approx(softmax_in_place(Z.copy()), rel=1e-14)
    np.testing.assert_allclose(g, _fd(softmax_in_place, (Z.copy(),), 0), rtol=1e-6)


def test_buffers_stay_numpy_outside_the_run():
    fill_rows(W, X)                      # the plain function: NumPy's own arrays throughout
    _fallback_grad(fill_rows, (W.copy(), X.copy()), 0)
    assert type(np.zeros(3)) is np.ndarray and fill_rows.__globals__["np"] is np


def _writes_a_stale_view(w):
    _box.v = 0
    a = np.exp(w)
    first = a[:2]
    a *= 2.0                             # NumPy shows this write through ``first``
    return np.sum(first) + np.sum(a)


def test_a_view_read_after_its_base_is_written_is_refused_not_wrong():
    with pytest.raises(srcgrad.CompileError, match="written in place after this view"):
        _fallback_grad(_writes_a_stale_view, (V.copy(),), 0)


def _global_dot(w):
    _box.v = 0
    return np.sum(GLOBAL_DATA.dot(w) ** 2)       # a plain ndarray's method: no dispatch


def _library_without_rule(w):
    _box.v = 0
    return np.sum(scipy.linalg.sqrtm(np.outer(w, w) + np.eye(3)))


def test_what_cannot_be_followed_names_the_line_and_the_call():
    with pytest.raises(srcgrad.CompileError, match=r"test_fallback_numpy_idioms\.py:\d+ "
                       r"\(return np\.sum\(GLOBAL_DATA\.dot\(w\)"):
        _fallback_grad(_global_dot, (W.copy(),), 0)
    with pytest.raises(srcgrad.CompileError, match=r"test_fallback_numpy_idioms\.py:\d+ .*"
                       r"scipy\.linalg\.\S*sqrtm"):
        _fallback_grad(_library_without_rule, (V[:3].copy(),), 0)


def test_a_tensor_keeps_pytorch_refusal_of_a_write_into_what_backward_reads():
    x = srcgrad.tensor(Z.copy(), requires_grad=True)
    probs = x.exp()
    probs /= probs.sum(dim=1, keepdim=True)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        probs.sum().backward()


def test_jvp_of_an_in_place_update_is_right_or_refused():
    t = RS.randn(*Z.shape)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _, tangent = srcgrad.jvp(softmax_in_place, (Z.copy(),), (t,))
    except srcgrad.CompileError:
        return
    want = np.sum(_fd(softmax_in_place, (Z.copy(),), 0) * t)
    assert float(tangent) == pytest.approx(want, rel=1e-6)


def _spd(n, seed):
    a = np.random.RandomState(seed).randn(n, n)
    return a @ a.T + n * np.eye(n)


K = _spd(4, 5)
Y = RS.randn(4)
YY = RS.randn(4, 2)


def cho_solve_both(k, y):
    _box.v = 0
    L = np.linalg.cholesky(k)
    lower = scipy.linalg.cho_solve((L, True), y)
    upper = scipy.linalg.cho_solve((L.T.copy(), False), y * 2.0)
    return np.sum(lower * y) + np.sum(upper ** 2)


def triangular(k, y):
    _box.v = 0
    L = np.linalg.cholesky(k)
    v = scipy.linalg.solve_triangular(L, y, lower=True)
    u = scipy.linalg.solve_triangular(L.T, v, lower=False)
    return np.sum(v ** 2) + np.sum(np.sin(u))


@pytest.mark.parametrize("f", [cho_solve_both, triangular])
@pytest.mark.parametrize("y", [Y, YY], ids=["vector", "matrix"])
@pytest.mark.parametrize("p", [0, 1])
def test_scipy_linalg_solves(f, y, p):
    args = (K.copy(), y.copy())
    g = _fallback_grad(f, args, p)
    np.testing.assert_array_equal(args[0], K)
    np.testing.assert_allclose(g, _fd(f, (K.copy(), y.copy()), p), rtol=1e-6, atol=1e-8)


def test_solve_triangular_equals_hips_autograd():
    autograd = pytest.importorskip("autograd")
    import autograd.numpy as anp
    import autograd.scipy.linalg as alinalg
    twin = types.FunctionType(triangular.__code__, {
        **triangular.__globals__, "np": anp, "scipy": types.SimpleNamespace(linalg=alinalg)})
    # with respect to y: autograd's cholesky symmetrises the gradient of k, where NumPy reads
    # (and srcgrad differentiates) its lower triangle only
    np.testing.assert_allclose(_fallback_grad(triangular, (K.copy(), YY.copy()), 1),
                               autograd.grad(twin, 1)(K.copy(), YY.copy()), rtol=1e-9)


def test_forward_and_second_order_through_a_triangular_solve():
    t = RS.randn(4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", srcgrad.FallbackWarning)
        _, tangent = srcgrad.jvp(lambda y: triangular(K, y), (Y.copy(),), (t,))
        h = srcgrad.hessian(triangular, 1)(K.copy(), Y.copy())
    assert float(tangent) == pytest.approx(float(np.sum(_fd(triangular, (K, Y.copy()), 1) * t)),
                                           rel=1e-6)
    column = (_fd(triangular, (K, Y + 1e-4 * t), 1) - _fd(triangular, (K, Y - 1e-4 * t), 1)) / 2e-4
    np.testing.assert_allclose(h @ t, column, rtol=1e-4, atol=1e-6)


def black_scholes(sigma, s, k):
    _box.v = 0
    d1 = (math.log(s / k) + 0.5 * sigma ** 2) / sigma
    cdf = 0.5 * (1.0 + math.erf(d1 / math.sqrt(2.0)))
    return s * cdf - k * math.exp(-sigma) * math.tanh(sigma) + math.pow(sigma, 3)


def test_math_functions_of_a_float_that_carries_a_gradient():
    eps = 1e-6
    g = _fallback_grad(black_scholes, (0.3, 100.0, 95.0), 0)
    want = (black_scholes(0.3 + eps, 100.0, 95.0) - black_scholes(0.3 - eps, 100.0, 95.0)) / (
        2 * eps)
    assert type(g) is float and g == pytest.approx(want, rel=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", srcgrad.FallbackWarning)
        value, _ = srcgrad.value_and_grad(black_scholes)(0.3, 100.0, 95.0)
    assert float(value) == black_scholes(0.3, 100.0, 95.0)        # math's own rounding
    with pytest.raises(ValueError, match="math domain error"):   # as the plain function
        _fallback_grad(black_scholes, (0.3, -100.0, 95.0), 0)


def _float_of_loss(w):
    _box.v = 0
    return float(np.sum(w ** 2))


def test_float_of_a_value_that_carries_a_gradient_names_the_line():
    with pytest.raises(srcgrad.CompileError, match=r"test_fallback_numpy_idioms\.py:\d+ "
                       r"\(return float\(np\.sum\(w \*\* 2\)\)\).*Python float"):
        _fallback_grad(_float_of_loss, (V.copy(),), 0)


def _makes_buffers_in_another_thread(w):
    _box.v = 0
    seen = []
    worker = threading.Thread(target=lambda: seen.append(type(np.zeros(2))))
    worker.start()
    worker.join()
    out = np.zeros(w.shape)
    out[:] = w * 2.0
    _box.seen = seen
    return np.sum(out ** 2)


def test_another_thread_gets_numpy_arrays_while_the_run_shows_stand_ins():
    g = _fallback_grad(_makes_buffers_in_another_thread, (V.copy(),), 0)
    np.testing.assert_allclose(g, 8.0 * V)
    assert _box.seen == [np.ndarray]


ACTIVATIONS = {np.tanh: "tanh", np.sin: "sin"}


def _checks_types(x):
    _unused = 0
    del _unused                                  # not compiled: the eager engine runs it
    act = np.tanh
    assert isinstance(x, np.ndarray) and isinstance(act, np.ufunc)
    assert ACTIVATIONS.get(act) == "tanh" and issubclass(type(np.zeros(2)), np.ndarray)
    return np.sum(act(x) * x)


def test_the_eager_run_answers_type_checks_and_lookups_as_numpy_does():
    x = np.array([0.5, -1.0, 2.0])
    g = _fallback_grad(_checks_types, (x.copy(),), 0)
    t = np.tanh(x)
    np.testing.assert_allclose(g, t + x * (1 - t ** 2), rtol=1e-12)


def _clipped_square(x):
    return x * x


srcgrad.defvjp(_clipped_square, lambda g, ans, x: g * np.clip(2 * x, -1.0, 1.0))   # the user's


def _uses_a_user_rule(x):
    _unused = 0
    del _unused                                  # not compiled: the eager engine runs it
    return np.sum(_clipped_square(x))


def _uses_a_user_rule_compiled(x):
    return np.sum(_clipped_square(x))


def test_the_eager_run_uses_the_users_rule_as_the_compiler_does():
    x = np.array([0.2, -1.0, 2.0])
    want = np.clip(2 * x, -1.0, 1.0)
    np.testing.assert_allclose(srcgrad.grad(_uses_a_user_rule_compiled, strict=True)(x), want)
    np.testing.assert_allclose(_fallback_grad(_uses_a_user_rule, (x.copy(),), 0), want)


def test_a_rule_written_for_hips_autograd_is_refused_when_given():
    with pytest.raises(TypeError, match=r"rule\(g, ans, \*inputs"):
        srcgrad.defvjp(_clipped_square, lambda ans, x: lambda g: g * 2 * x)


LAST = None
HISTORY: list = []
CACHE: dict = {}


def _keeps_what_it_computed(x):
    global LAST
    _unused = 0
    del _unused                                  # not compiled: the eager engine runs it
    y = np.sin(x)
    LAST = y
    HISTORY.append(np.sum(y))
    CACHE["y"] = y
    return np.sum(y ** 2)


def test_what_the_run_leaves_in_globals_is_what_numpy_leaves():
    x = np.array([0.5, -1.0, 2.0])
    g = _fallback_grad(_keeps_what_it_computed, (x.copy(),), 0)
    np.testing.assert_allclose(g, 2 * np.sin(x) * np.cos(x), rtol=1e-12)
    assert type(LAST) is np.ndarray and type(CACHE["y"]) is np.ndarray
    assert type(HISTORY[-1]) is np.float64
    np.testing.assert_allclose(LAST, np.sin(x))
