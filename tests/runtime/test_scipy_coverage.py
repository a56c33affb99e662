"""SciPy's functions with the rules added for them: ``scipy.special``'s entropy family and
log functions, ``scipy.linalg``'s solves and factorizations, ``scipy.signal``'s
correlations.  Each is checked compiled (strict) == default mode's eager run == central
finite differences == ``jax.scipy`` where JAX has the function, over float64 and float32
arguments; arguments not modelled are a CompileError at the call's line.
"""

from __future__ import annotations

import importlib.util
import warnings

import numpy as np
import pytest
from compiled_helpers import define
from conftest import numerical_grad

import srcgrad
from srcgrad.errors import CompileError
from srcgrad.transforms.fallback import eager_transform

pytestmark = pytest.mark.skipif(importlib.util.find_spec("scipy") is None,
                                reason="SciPy is not installed")
HAS_JAX = importlib.util.find_spec("jax") is not None

R = np.random.default_rng(11)


def _u(lo, hi, *shape):
    return R.uniform(lo, hi, shape)


def _spd(n, skew=0.0):
    """A symmetric positive definite matrix, plus ``skew`` times a random matrix (what a
    one-triangle reader ignores, or not)."""
    a = R.normal(size=(n, n))
    return a @ a.T + n * np.eye(n) + skew * R.normal(size=(n, n))


# (body of f(a, b) — its value is np.sum(body ** 2) —, the arguments, which to differentiate,
#  the JAX spelling of the body (None: JAX has no such function))
SPECIAL = [
    ("sp.xlog1py(a, b)", [_u(-2, 2, 4), _u(-0.5, 2, 4)], [0, 1], "jsp.xlog1py(a, b)"),
    ("sp.xlog1py(a, b)", [_u(-2, 2, 3, 1), _u(0.1, 2, 4)], [0, 1], "jsp.xlog1py(a, b)"),
    ("sp.entr(a)", [_u(0.1, 3, 5)], [0], "jsp.entr(a)"),
    ("sp.rel_entr(a, b)", [_u(0.1, 3, 4), _u(0.1, 3, 4)], [0, 1], "jsp.rel_entr(a, b)"),
    ("sp.kl_div(a, b)", [_u(0.1, 3, 2, 3), _u(0.1, 3, 3)], [0, 1], "jsp.kl_div(a, b)"),
    ("sp.log_expit(a)", [_u(-30, 8, 6)], [0], "jax.nn.log_sigmoid(a)"),
    ("sp.expm1(a)", [_u(-2, 2, 4)], [0], "jnp.expm1(a)"),
    ("sp.log1p(a)", [_u(-0.5, 2, 4)], [0], "jnp.log1p(a)"),
    ("sp.boxcox(a, b)", [_u(0.2, 3, 4), np.array([0.5, 0.0, -1.2, 2.0])], [0, 1], None),
    ("sp.logsumexp(a, b=b, return_sign=True)[0]", [_u(-1, 1, 3, 4), _u(-1, 2, 3, 4)], [0, 1],
     "jsp.logsumexp(a, b=b, return_sign=True)[0]"),
    ("np.prod(sp.logsumexp(a, axis=1, b=b, keepdims=True, return_sign=True), axis=0)",
     [_u(-1, 1, 3, 4), np.array([[1.0, -2.0, 0.5, 0.1], [-1.0, -0.5, 0.2, 0.3],
                                 [2.0, 1.0, -3.0, 0.5]])], [0, 1], None),
    ("sp.logsumexp(a, axis=0, return_sign=True)[0] * sp.logsumexp(a, return_sign=True)[1]",
     [_u(-1, 1, 3, 4)], [0], "jsp.logsumexp(a, axis=0)"),
]
LINALG = [
    ("sl.inv(a)", [R.normal(size=(4, 4))], [0], "jsl.inv(a)"),
    ("sl.inv(a, assume_a='pos')", [_spd(3, 0.4)], [0], None),
    ("sl.inv(a, assume_a='pos', lower=True)", [_spd(3, 0.4)], [0], None),
    ("sl.det(a)", [R.normal(size=(4, 4))], [0], "jsl.det(a)"),
    ("sl.solve(a, b)", [R.normal(size=(4, 4)), R.normal(size=(4, 2))], [0, 1],
     "jsl.solve(a, b)"),
    ("sl.solve(a, b)", [R.normal(size=(3, 3)), R.normal(size=3)], [0, 1], "jsl.solve(a, b)"),
    ("sl.solve(a, b, assume_a='pos')", [_spd(4, 0.3), R.normal(size=(4, 2))], [0, 1], None),
    ("sl.solve(a, b, assume_a='sym', lower=True)", [_spd(3, 0.3), R.normal(size=3)], [0, 1],
     None),
    ("sl.cholesky(a)", [_spd(4, 0.3)], [0], None),
    ("sl.cholesky(a, lower=True)", [_spd(4, 0.3)], [0], None),
    ("sl.cholesky(a + a.T)", [_spd(3)], [0], "jsl.cholesky(a + a.T)"),
    ("sl.norm(a) + sl.norm(a, 1) + sl.norm(a, axis=0)", [R.normal(size=(3, 4))], [0],
     "jnp.linalg.norm(a) + jnp.linalg.norm(a, 1) + jnp.linalg.norm(a, axis=0)"),
    ("sl.pinv(a)", [R.normal(size=(5, 3))], [0], "jnp.linalg.pinv(a)"),
    ("sl.expm(0.4 * a)", [R.normal(size=(4, 4))], [0], "jsl.expm(0.4 * a)"),
    ("sl.block_diag(a, b, 2.0 * a[0])", [R.normal(size=(2, 3)), R.normal(size=(1, 2))], [0, 1],
     "jsl.block_diag(a, b, 2.0 * a[0])"),
    ("sl.eigh(a)[0]", [_spd(4, 0.3)], [0], None),
    ("sl.eigh(a + a.T)[1] * a[:, :1]", [_spd(4)], [0], None),
    ("sl.eigh(a, lower=False)[1][:, 1:] * a[:, 1:]", [_spd(4, 0.3)], [0], None),
    ("sl.eigh(a, eigvals_only=True)", [_spd(3, 0.3)], [0], None),
    ("sl.eigvalsh(a + a.T)", [_spd(3)], [0], "jsl.eigh(a + a.T, eigvals_only=True)"),
    ("sl.svd(a, full_matrices=False)[0] * a[:, :1]", [R.normal(size=(5, 3))], [0], None),
    ("sl.svd(a, full_matrices=False)[1]", [R.normal(size=(3, 5))], [0],
     "jsl.svd(a, full_matrices=False)[1]"),
    ("sl.svd(a)[2] * a[:1]", [R.normal(size=(3, 3))], [0], None),
    ("sl.svdvals(a)", [R.normal(size=(4, 3))], [0], None),
    ("sl.svd(a, compute_uv=False)", [R.normal(size=(4, 3))], [0], None),
    ("sl.qr(a, mode='economic')[0] * a", [R.normal(size=(5, 3))], [0],
     "jsl.qr(a, mode='economic')[0] * a"),
    ("sl.qr(a, mode='economic')[1]", [R.normal(size=(5, 3))], [0],
     "jsl.qr(a, mode='economic')[1]"),
    ("sl.qr(a)[1] + sl.qr(a, mode='r')[0]", [R.normal(size=(3, 4))], [0], None),
    ("sl.lstsq(a, b)[0]", [R.normal(size=(5, 3)), R.normal(size=(5, 2))], [0, 1], None),
    ("sl.lu_factor(a)[0]", [R.normal(size=(4, 4))], [0], "jsl.lu_factor(a)[0]"),
    ("sl.lu_solve(sl.lu_factor(a), b)", [R.normal(size=(4, 4)), R.normal(size=(4, 2))], [0, 1],
     "jsl.lu_solve(jsl.lu_factor(a), b)"),
    ("sl.lu_solve(sl.lu_factor(a), b)", [R.normal(size=(3, 3)), R.normal(size=3)], [0, 1],
     "jsl.lu_solve(jsl.lu_factor(a), b)"),
    ("sl.lstsq(a, b)[1] + sl.lstsq(a, b)[3][0]", [R.normal(size=(5, 3)), R.normal(size=5)],
     [0, 1], None),
]
SIGNAL = []
for _s1, _s2 in [((5,), (2,)), ((2,), (5,)), ((4, 3), (2, 2)), ((6, 5), (3, 4))]:
    for _mode in ("full", "same", "valid"):
        SIGNAL.append((f"ss.correlate(a, b, mode={_mode!r})", [_u(-1, 1, *_s1), _u(-1, 1, *_s2)],
                       [0, 1], f"jss.correlate(a, b, mode={_mode!r})"))
        if len(_s1) == 2:
            for _fn in ("convolve2d", "correlate2d"):
                SIGNAL.append((f"ss.{_fn}(a, b, {_mode!r})", [_u(-1, 1, *_s1),
                                                              _u(-1, 1, *_s2)], [0, 1],
                               f"jss.{_fn}(a, b, {_mode!r})"))
SIGNAL.append(("ss.correlate2d(a, b, 'valid')", [_u(-1, 1, 2, 3), _u(-1, 1, 4, 5)], [0, 1],
               None))
SIGNAL.append(("ss.correlate(a, b, method='direct') + ss.correlate(a, b, method='fft')",
               [_u(-1, 1, 6), _u(-1, 1, 3)], [0, 1], None))
CASES = SPECIAL + LINALG + SIGNAL


def _namespace():
    import scipy.linalg as sl
    import scipy.signal as ss
    import scipy.special as sp
    return {"np": np, "sp": sp, "sl": sl, "ss": ss}


def _function(body: str, n: int):
    params = ", ".join("ab"[:n])
    return define(f"def f({params}):\n    return np.sum(({body}) ** 2)\n", _namespace())


def _jax_grad(body: str, args, i):
    import jax
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import jax.scipy.linalg as jsl
    import jax.scipy.signal as jss
    import jax.scipy.special as jsp
    params = ", ".join("ab"[:len(args)])
    f = define(f"def f({params}):\n    return jnp.sum(({body}) ** 2)\n",
               {"jax": jax, "jnp": jnp, "jsl": jsl, "jss": jss, "jsp": jsp})
    return np.asarray(jax.grad(f, argnums=i)(*[jnp.asarray(a) for a in args]))


def _fd(f, args, i):
    arrays = [np.array(a, dtype=np.float64) for a in args]
    return numerical_grad(lambda *xs: float(f(*xs)), arrays, i)


@pytest.mark.parametrize("body,args,wrt,jax_body", CASES, ids=[c[0] for c in CASES])
def test_compiled_eager_differences_and_jax_agree(body, args, wrt, jax_body):
    f = _function(body, len(args))
    for i in wrt:
        saved = [a.copy() for a in args]
        g = srcgrad.grad(f, wrt=i, strict=True)(*args)
        for a, s in zip(args, saved):
            np.testing.assert_array_equal(a, s)          # nothing the caller passed changes
        assert np.shape(g) == np.shape(args[i]), body
        np.testing.assert_allclose(g, _fd(f, args, i), rtol=1e-5, atol=1e-6,
                                   err_msg=f"{body} wrt {i}")
        eager = eager_transform(f, "grad", [a.copy() for a in args], (i,), True)
        np.testing.assert_allclose(eager, g, rtol=1e-9, atol=1e-11, err_msg=body)
        default = srcgrad.grad(f, wrt=i)(*args)
        np.testing.assert_allclose(default, g, rtol=1e-12, atol=1e-14, err_msg=body)
        if jax_body is not None and HAS_JAX:
            np.testing.assert_allclose(g, _jax_grad(jax_body, args, i), rtol=1e-6, atol=1e-8,
                                       err_msg=f"jax: {body} {i}")
    low = [a.astype(np.float32) for a in args]
    g32 = srcgrad.grad(f, wrt=wrt[0], strict=True)(*low)
    assert g32.dtype == np.float32, body


@pytest.mark.parametrize("body,args,wrt,jax_body", [
    c for c in LINALG if c[0].startswith(("sl.inv(a)", "sl.solve(a, b)", "sl.expm",
                                          "sl.cholesky(a)", "sl.det", "sl.lu_"))])
def test_forward_mode_matches_reverse(body, args, wrt, jax_body):
    f = _function(body, len(args))
    for i in wrt:
        g = srcgrad.grad(f, wrt=i, strict=True)(*args)
        t = R.normal(size=np.shape(args[i]))
        tangents = [np.zeros_like(a) for a in args]
        tangents[i] = t
        _, out = srcgrad.jvp(f, tuple(args), tuple(tangents))
        np.testing.assert_allclose(out, np.sum(g * t), rtol=1e-7, atol=1e-9)


REFUSED = [
    ("sl.solve(a, b, overwrite_a=True)", "overwrite_a"),
    ("sl.solve(a, b, assume_a='banded')", "assume_a"),
    ("sl.solve(a, b, transposed=True)", "transposed"),
    ("sl.inv(a, overwrite_a=True)", "overwrite_a"),
    ("sl.eigh(a, b)[0]", "b=None"),
    ("sl.eigh(a, subset_by_index=[0, 1])[0]", "subset"),
    ("sl.svd(a, lapack_driver='gesvd')[1]", "gesdd"),
    ("sl.qr(a, pivoting=True)[1]", "pivoting"),
    ("sl.qr(a, mode='raw')[1]", "economic"),
    ("sl.pinv(a, return_rank=True)[0]", "return_rank"),
    ("sl.lstsq(a, b, lapack_driver='gelsy')[0]", "gelsd"),
    ("ss.convolve2d(a, b, boundary='wrap')", "boundary"),
    ("ss.correlate2d(a, b, fillvalue=1.0)", "fillvalue"),
    ("sl.lu_solve(sl.lu_factor(a), b, trans=1)", "trans=0"),
    ("sl.sqrtm(a)", "scipy.linalg.sqrtm"),
    ("sp.exprel(a)", "scipy.special.exprel"),
    ("ss.lfilter(b[0], [1.0], a[0])", "scipy.signal.lfilter"),
]


@pytest.mark.parametrize("body,says", REFUSED, ids=[c[0] for c in REFUSED])
def test_arguments_not_modelled_are_refused_at_the_line(body, says):
    f = _function(body, 2)
    a, b = _spd(3, 0.2), _spd(3)
    with pytest.raises(CompileError, match=says) as info:
        srcgrad.grad(f, strict=True)(a, b)
    assert "line 2" in str(info.value) or ":2" in str(info.value)
    with pytest.raises(CompileError, match=says.split("=")[0]):       # default mode too
        srcgrad.grad(f)(a, b)


def test_batched_and_full_factors_are_refused_when_they_run():
    f = _function("sl.inv(a)", 1)
    with pytest.raises(CompileError, match="2-D"):
        srcgrad.grad(f, strict=True)(R.normal(size=(2, 3, 3)))
    g = _function("sl.svd(a)[0]", 1)                   # full_matrices=True of a tall matrix
    with pytest.raises(CompileError, match="full_matrices"):
        srcgrad.grad(g, strict=True)(R.normal(size=(4, 3)))
    np.testing.assert_allclose(srcgrad.grad(g, strict=True)(np.eye(3) + 0.1),   # square: fine
                               _fd(g, [np.eye(3) + 0.1], 0), rtol=1e-5, atol=1e-6)


def test_a_refusal_on_a_branch_not_taken_does_not_stop_the_other():
    f = define("def f(a, flag):\n"
               "    if flag:\n"
               "        return np.sum(sl.qr(a, pivoting=True)[1])\n"
               "    return np.sum(sl.inv(a) ** 2)\n", _namespace())
    a = _spd(3)
    g = srcgrad.grad(f, strict=True)(a, False)
    np.testing.assert_allclose(g, _fd(lambda x: f(x, False), [a], 0), rtol=1e-5, atol=1e-6)
    with pytest.raises(CompileError, match=r"pivoting(.|\n)*line 3"):
        srcgrad.grad(f, strict=True)(a, True)


def test_second_order_through_the_new_rules():
    f = define("def f(a):\n"
               "    x = sl.solve(a + 3.0 * np.eye(3), a[0]) + sl.cholesky(a @ a.T)[0]\n"
               "    return np.sum(x) + np.sum(sp.xlog1py(a, a * a)) + sl.det(sl.expm(0.2 * a))\n",
               _namespace())
    a = R.uniform(0.1, 0.5, (3, 3)) + np.eye(3)
    h = srcgrad.hessian(f, strict=True)(a).reshape(9, 9)
    g = srcgrad.grad(f, strict=True)
    numeric = np.array([((g(a + d) - g(a - d)) / 2e-5).ravel()
                        for d in 1e-5 * np.eye(9).reshape(9, 3, 3)])
    np.testing.assert_allclose(h, numeric, rtol=1e-5, atol=1e-6)


def test_second_order_through_lu_runs_in_default_mode():
    """The pivots of lu_factor are data the compiled second pass cannot keep constant: strict
    mode refuses it, default mode's eager run differentiates it twice."""
    f = define("def f(a):\n"
               "    return np.sum(sl.lu_solve(sl.lu_factor(a), a[1]) ** 2)\n", _namespace())
    a = R.uniform(0.1, 0.5, (3, 3)) + np.eye(3)
    g = srcgrad.grad(f, strict=True)
    numeric = np.array([((g(a + d) - g(a - d)) / 2e-5).ravel()
                        for d in 1e-5 * np.eye(9).reshape(9, 3, 3)])
    with pytest.raises(CompileError):
        srcgrad.hessian(f, strict=True)(a)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_allclose(srcgrad.hessian(f)(a).reshape(9, 9), numeric, rtol=1e-5,
                                   atol=1e-6)
