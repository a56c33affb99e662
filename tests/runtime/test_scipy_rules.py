"""SciPy's special functions, distributions and ``signal.convolve``, called as users spell
them: compiled (strict) == central finite differences, == HIPS autograd's
``autograd.scipy`` where it has the function (the same code, its globals re-bound), == the
eager run for the ufuncs (the eager run meets them through ``__array_ufunc__``), a float32
gradient for float32 arguments, and a CompileError where no derivative exists.
"""

from __future__ import annotations

import importlib.util
import types

import numpy as np
import pytest
from compiled_helpers import define
from conftest import numerical_grad

import srcgrad
from srcgrad.errors import CompileError
from srcgrad.transforms.fallback import eager_transform

pytestmark = pytest.mark.skipif(importlib.util.find_spec("scipy") is None,
                                reason="SciPy is not installed")
HAS_AUTOGRAD = importlib.util.find_spec("autograd") is not None

R = np.random.default_rng(8)


def _u(lo, hi, *shape):
    return R.uniform(lo, hi, shape) if shape else float(R.uniform(lo, hi))


# (body of f(*args) (argument names a, b, c, d), the arguments, which to differentiate,
#  whether autograd.scipy has it, whether the eager run sees it)
UFUNCS = [
    ("sp.j0(a)", [_u(0.5, 9, 4)], [0], True), ("sp.j1(a)", [_u(0.5, 9, 3, 2)], [0], True),
    ("sp.y0(a)", [_u(0.5, 9, 4)], [0], True), ("sp.y1(a)", [_u(0.5, 9)], [0], True),
    ("sp.i0(a)", [_u(-4, 4, 4)], [0], True), ("sp.i1(a)", [_u(-4, 4, 4)], [0], True),
    ("sp.i0e(a)", [_u(-4, 4, 4)], [0], False), ("sp.i1e(a)", [_u(-4, 4, 4)], [0], False),
    ("sp.k0(a)", [_u(0.3, 4, 4)], [0], False), ("sp.k1(a)", [_u(0.3, 4, 4)], [0], False),
    ("sp.k0e(a)", [_u(0.3, 4, 4)], [0], False), ("sp.k1e(a)", [_u(0.3, 4, 4)], [0], False),
    ("sp.jv(b, a)", [_u(0.5, 9, 3, 1), _u(0.5, 3, 4)], [0], False),
    ("sp.jn(2, a)", [_u(0.5, 9, 4)], [0], True), ("sp.yn(3, a)", [_u(1, 9, 4)], [0], True),
    ("sp.yv(b, a)", [_u(0.5, 9, 4), _u(0.5, 3)], [0], False),
    ("sp.iv(b, a)", [_u(0.5, 6, 3, 1), _u(1, 20, 4)], [0], False),   # autograd: no unbroadcast
    ("sp.iv(b, a)", [_u(0.5, 6, 4), _u(1, 20, 4)], [0], True),
    ("sp.ive(b, a)", [_u(-6, 6, 4), np.array([1.0, 2.0, 3.0, 0.0])], [0], True),
    ("sp.kv(b, a)", [_u(0.5, 4, 4), _u(0, 3, 4)], [0], False),
    ("sp.kve(b, a)", [_u(0.5, 4, 4), 1.5], [0], False),
    ("sp.gamma(a)", [_u(0.3, 3, 4)], [0], True), ("sp.rgamma(a)", [_u(0.3, 3, 4)], [0], True),
    ("sp.erfinv(a)", [_u(-0.9, 0.9, 4)], [0], True),
    ("sp.erfcinv(a)", [_u(0.1, 1.9, 4)], [0], True),
    ("sp.ndtr(a)", [_u(-3, 3, 4)], [0], False), ("sp.log_ndtr(a)", [_u(-9, 3, 4)], [0], False),
    ("sp.ndtri(a)", [_u(0.05, 0.95, 4)], [0], False),
    ("sp.beta(a, b)", [_u(0.5, 3, 3, 1), _u(0.5, 3, 4)], [0, 1], True),
    ("sp.betaln(a, b)", [_u(0.5, 3, 4), _u(0.5, 3)], [0, 1], True),
    ("sp.xlogy(a, b)", [_u(-2, 2, 4), _u(0.2, 3, 4)], [0, 1], False),
    ("sp.gammainc(b, a)", [_u(0.2, 4, 4), _u(0.5, 3, 4)], [0], True),
    ("sp.gammaincc(b, a)", [_u(0.2, 4, 4), 1.0], [0], True),
    ("sp.betainc(b, c, a)", [_u(0.1, 0.9, 4), _u(0.8, 3, 4), _u(0.8, 3, 4)], [0], True),
    ("sp.gammasgn(a)", [_u(-2.5, 2.5, 4)], [0], True),
]
FUNCTIONS = [
    ("sp.polygamma(1, a)", [_u(0.5, 3, 4)], [0], True),
    ("sp.multigammaln(a, 3)", [_u(2, 5, 4)], [0], True),
    ("sp.multigammaln(a, 1)", [_u(2, 5)], [0], True),
    ("sp.logsumexp(a, b=b)", [_u(-1, 1, 4), _u(0.5, 2, 4)], [0, 1], False),
    ("sp.logsumexp(a, axis=0, b=b, keepdims=True)", [_u(-1, 1, 3, 4), _u(0.5, 2, 1, 4)],
     [0, 1], False),
    ("sp.logsumexp(a, axis=1, b=b)", [_u(-1, 1, 3, 4), _u(0.5, 2, 3, 4)], [0, 1], False),
    ("sp.logsumexp(a, axis=(0, 1), keepdims=True)", [_u(-1, 1, 3, 4)], [0], True),
    ("stats.norm.logpdf(a)", [_u(-2, 2, 4)], [0], True),
    ("stats.norm.cdf(a, scale=b)", [_u(-2, 2, 4), 1.7], [0, 1], False),
    ("stats.poisson.pmf(a, b)", [np.array([0.0, 1.0, 3.0, 2.0]), _u(0.5, 4, 4)], [1], True),
    ("stats.poisson.logpmf(a, b)", [np.array([[0.0], [4.0]]), _u(0.5, 4, 3)], [1], True),
    ("stats.poisson.cdf(a, b)", [np.array([0.0, 1.0, 3.0, 2.0]), _u(0.5, 4, 4)], [1], True),
    ("stats.poisson.sf(a, b)", [np.array([0.0, 1.0, 3.0]), _u(0.5, 4, 3)], [1], False),
    ("stats.dirichlet.pdf(a / np.sum(a), b)", [_u(0.2, 1, 4), _u(1.2, 3, 4)], [0, 1], True),
    ("stats.dirichlet.logpdf(a / np.sum(a), b)", [_u(0.2, 1, 4), _u(1.2, 3, 4)], [0, 1], True),
    ("signal.convolve(a, b, method='direct')", [_u(-1, 1, 5), _u(-1, 1, 3)], [0, 1], False),
]
for _dist, _args, _ag in [
        ("norm", [_u(-2, 2, 4, 3), _u(-1, 1, 1, 3), _u(0.5, 2, 4, 1)], True),
        ("t", [_u(-2, 2, 4, 3), _u(2.1, 6, 1, 3), _u(-1, 1, 4, 3), _u(0.5, 2, 4, 1)], True),
        ("chi2", [_u(0.5, 4, 4), _u(1.5, 4, 4)], False),
        ("gamma", [_u(0.5, 4, 4), _u(1.5, 4, 4)], True),
        ("beta", [_u(0.1, 0.9, 4), _u(1.2, 3, 4), _u(1.2, 3, 4)], True)]:
    _names = "abcd"[:len(_args)]
    for _m in ("pdf", "logpdf", "cdf", "logcdf", "sf", "logsf"):
        _wrt = list(range(len(_args))) if _m in ("pdf", "logpdf") else [0] + (
            [len(_args) - 2, len(_args) - 1] if len(_args) == 4 or _dist == "norm" else [])
        _has = _ag and (_m in ("pdf", "logpdf") or _dist == "norm")
        FUNCTIONS.append((f"stats.{_dist}.{_m}({', '.join(_names)})", _args, _wrt, _has))
for _s1, _s2 in [((4,), (2,)), ((2,), (5,)), ((4, 3), (2, 2)), ((6, 7), (4, 2)),
                 ((4, 3), (4, 1)), ((3, 4, 2), (2, 2, 2))]:
    for _mode in ("full", "same", "valid"):
        FUNCTIONS.append((f"signal.convolve(a, b, mode={_mode!r})",
                          [_u(-1, 1, *_s1), _u(-1, 1, *_s2)], [0, 1], True))


def _namespace(oracle: bool = False) -> dict:
    if oracle:
        import autograd.numpy as anp
        import autograd.scipy.signal as asignal
        import autograd.scipy.special as asp
        import autograd.scipy.stats as astats
        return {"np": anp, "sp": asp, "stats": astats, "signal": asignal}
    import scipy.signal as signal
    import scipy.special as sp
    import scipy.stats as stats
    return {"np": np, "sp": sp, "stats": stats, "signal": signal}


def _function(body: str, n: int):
    params = ", ".join("abcd"[:n])
    return define(f"def f({params}):\n    return np.sum(({body}) ** 2)\n", _namespace())


def _copies(args):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def _fd(f, args, i):
    arrays = [np.array(a, dtype=np.float64) for a in args]
    g = numerical_grad(lambda *xs: float(f(*[x if x.ndim else float(x) for x in xs])),
                       arrays, i)
    return g if isinstance(args[i], np.ndarray) else float(g)


def _check(body, args, wrt, autograd_has, eager):
    f = _function(body, len(args))
    for i in wrt:
        saved = _copies(args)
        g = srcgrad.grad(f, wrt=i, strict=True)(*args)
        for a, s in zip(args, saved):
            np.testing.assert_array_equal(a, s)
        assert np.shape(g) == np.shape(args[i]) and type(g) is type(args[i]), body
        np.testing.assert_allclose(g, _fd(f, args, i), rtol=1e-5, atol=1e-6,
                                   err_msg=f"{body} wrt {i}")
        if autograd_has and HAS_AUTOGRAD:
            import autograd
            rebound = types.FunctionType(f.__code__, {**f.__globals__, **_namespace(True)})
            np.testing.assert_allclose(g, autograd.grad(rebound, i)(*_copies(args)),
                                       rtol=1e-7, atol=1e-9, err_msg=f"autograd: {body} {i}")
        if eager:
            got = eager_transform(f, "grad", _copies(args), (i,), True)
            np.testing.assert_allclose(got, g, rtol=1e-10, atol=1e-12, err_msg=body)
    if all(isinstance(a, np.ndarray) for a in args):
        low = [a.astype(np.float32) for a in args]
        g32 = srcgrad.grad(f, wrt=wrt[0], strict=True)(*low)
        assert g32.dtype == np.float32, body
        g64 = srcgrad.grad(f, wrt=wrt[0], strict=True)(*[a.astype(np.float64) for a in low])
        np.testing.assert_allclose(g32, g64, rtol=2e-2, atol=2e-3 * np.max(np.abs(g64)))


@pytest.mark.parametrize("body,args,wrt,autograd_has", UFUNCS, ids=[c[0] for c in UFUNCS])
def test_special_ufunc(body, args, wrt, autograd_has):
    _check(body, args, wrt, autograd_has, eager=True)


@pytest.mark.parametrize("body,args,wrt,autograd_has", FUNCTIONS,
                         ids=[c[0] for c in FUNCTIONS])
def test_scipy_function(body, args, wrt, autograd_has):
    _check(body, args, wrt, autograd_has, eager=False)


def test_gammasgn_and_poisson_counts_have_no_gradient():
    f = _function("sp.gammasgn(a) * a + stats.poisson.cdf(b, 2.0)", 2)
    x, k = np.array([-1.5, 0.5, 2.5]), np.array([0.0, 1.0, 2.0])
    import scipy.special as sp
    import scipy.stats as stats
    value = sp.gammasgn(x) * x + stats.poisson.cdf(k, 2.0)
    np.testing.assert_allclose(srcgrad.grad(f, strict=True)(x, k), 2 * value * sp.gammasgn(x))
    np.testing.assert_array_equal(srcgrad.grad(f, wrt=1, strict=True)(x, k), 0.0)


REFUSED = [
    ("sp.iv(b, a)", 1, "order v"), ("sp.jv(b, a)", 1, "order v"),
    ("sp.yn(b, a)", 1, "order v"), ("sp.ive(b, a)", 1, "order v"),
    ("sp.gammainc(b, a)", 1, "respect to a"), ("sp.betainc(b, b, a)", 1, "respect to a"),
    ("stats.t.cdf(a, b)", 1, "respect to df"), ("stats.gamma.logcdf(a, b)", 1, "to a"),
    ("stats.beta.sf(a, b, b)", 1, "respect to a"),
    ("stats.poisson.pmf(a, b)", 0, "count k"), ("stats.poisson.logpmf(a, b)", 0, "count k"),
]


@pytest.mark.parametrize("body,wrt,says", REFUSED, ids=[c[0] for c in REFUSED])
def test_no_derivative_is_refused(body, wrt, says):
    f = _function(body, 2)
    with pytest.raises(CompileError, match=says):
        srcgrad.grad(f, wrt=wrt, strict=True)(np.array([1.0, 2.0]), np.array([1.5, 2.5]))
    other = 1 - wrt                         # the other argument compiles
    g = srcgrad.grad(f, wrt=other, strict=True)(np.array([0.5, 0.25]), np.array([1.5, 2.5]))
    assert np.all(np.isfinite(g))


@pytest.mark.parametrize("body", [
    "sp.logsumexp(a, b=b, return_sign=bool(b[0]))[0]", "sp.multigammaln(a, int(b[0]))",
    "sp.polygamma(b, a)", "signal.convolve(a, b, mode=str(b))",
    "signal.convolve(a, b, method='other')", "stats.poisson.pmf(a, b, loc=1)",
    "sp.iv(1.0, a, out=b)", "sp.j0([a, b])",
])
def test_arguments_not_modelled_are_refused(body):
    f = _function(body, 2)
    with pytest.raises(CompileError):
        srcgrad.grad(f, strict=True)(np.array([2.0, 3.0]), np.array([1.0, 2.0]))


def test_the_eager_run_refuses_an_order_gradient_too():
    f = _function("sp.iv(b, a) + sp.gammainc(b, a)", 2)
    x, v = np.array([0.5, 1.5]), np.array([1.0, 2.5])
    g = srcgrad.grad(f, strict=True)(x, v)             # compiles (and binds SciPy's ufuncs)
    np.testing.assert_allclose(eager_transform(f, "grad", [x, v], (0,), True), g, rtol=1e-12)
    with pytest.raises(TypeError, match="no closed form"):
        eager_transform(f, "grad", [x, v], (1,), True)
    with pytest.raises(CompileError, match="no closed form"):     # what the fallback says
        srcgrad.grad(f, wrt=1, strict=False)(x, v)
