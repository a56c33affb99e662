"""The NumPy (and scipy.special) functions users reach for most, called as users spell
them: compiled (strict) == eager == central finite differences in float64, a float32 gradient
for float32 arguments, JAX's gradient where JAX has the function, and clear refusals for the
arguments that are not modelled.
"""

from __future__ import annotations

import importlib.util
import types

import numpy as np
import pytest
from compiled_helpers import define
from conftest import numerical_grad

import srcgrad
from srcgrad.transforms.fallback import eager_transform

HAS_SCIPY = importlib.util.find_spec("scipy") is not None
HAS_JAX = importlib.util.find_spec("jax") is not None
if HAS_JAX:
    import jax
    jax.config.update("jax_enable_x64", True)

W = np.random.default_rng(99).standard_normal((3, 4))
IDX = np.array([[0, 0], [1, 3], [2, 2]])

# (body of f(x) for x of shape (3, 4), whether to check it against JAX too: a few only, as JAX
# is slow to start each function; tests/sweeps/test_oracle_sweep.py sweeps them all against oracles)
CASES = [
    ("np.sum(np.amax(x, axis=0) * W[0])", False), ("np.amin(x)", False),
    ("np.sum(np.fmax(x, 0.1) * W)", False), ("np.sum(np.fmin(x, x[0]) * W)", False),
    ("np.sum(np.nanmax(x, axis=1) * W[:, 0])", False), ("np.nanmin(x, axis=None)", False),
    ("np.sum(np.nansum(x, axis=0) * W[0])", False),
    ("np.sum(np.nanmean(x, axis=1, keepdims=True))", False),
    ("np.nanvar(x) + np.nanstd(x, axis=0, ddof=1).sum()", False),
    ("np.sum(np.nanprod(x, axis=(0, 1)))", False), ("np.sum(np.nancumsum(x, axis=1) * W)", False),
    ("np.sum(np.cumprod(x, axis=1) * W)", True), ("np.sum(np.cumprod(x) ** 2)", False),
    ("np.sum(np.ptp(x, axis=0) * W[0])", False), ("np.sum(np.sinc(x) * W)", False),
    ("np.sum(np.nan_to_num(x, nan=1.0) * W)", False),
    ("np.sum(np.average(x, axis=1, weights=W[0] ** 2 + 0.5) ** 2)", True),
    ("np.sum(np.average(x, weights=W ** 2 + 0.5))", False),
    ("np.sum(np.average(x, axis=0) ** 2)", False),
    ("np.sum(np.cov(x) * W[:, :3])", False),
    ("np.sum(np.cov(x, rowvar=False, ddof=0)[:3] * W)", False),
    ("np.sum(np.cov(x[0], bias=True))", False),
    ("np.sum(np.corrcoef(x) * W[:, :3])", True),
    ("np.sum(np.select([x > 0, x < -0.5], [x ** 2, x * 3], default=x))", True),
    ("np.sum(np.select([x > 0], [x]))", False),
    ("np.median(x) + np.sum(np.median(x, axis=1) * W[:, 0])", True),
    ("np.sum(np.quantile(x, 0.3, axis=0, keepdims=True))", False),
    ("np.percentile(x, 75.0)", False),
    ("np.sum(np.quantile(x, [0.2, 0.9], axis=1) * W[:2, :3])", False),
    ("np.sum(np.median(x, axis=(1, 0), keepdims=True))", False),
    ("np.sum(np.percentile(x[None], [10.0, 50.0], axis=(0, 2)) * W[:2, :3])", False),
    ("np.sum(np.atleast_2d(x[0]) * W[0])", False), ("np.sum(np.atleast_3d(x) ** 2)", False),
    ("np.sum(np.atleast_1d(x[0, 0]) ** 2)", False),
    ("np.sum(np.append(x, x[0]) ** 2)", False),
    ("np.sum(np.append(x, x[:1], axis=0) ** 2)", False),
    ("np.sum(np.split(x, 2, axis=1)[1] * W[:, :2])", False),
    ("np.sum(np.array_split(x, 3, axis=1)[0] * W[:, :2])", False),
    ("np.sum(np.hsplit(x, [1, 3])[1] ** 2)", False), ("np.sum(np.vsplit(x, 3)[2] ** 3)", False),
    ("sum(np.sum(p) * (k + 1) for k, p in enumerate(np.split(x, 2, axis=1)))", False),
    ("np.sum(np.dsplit(x[:, :, None] * x[:, None, :2], 2)[1] ** 2)", False),
    ("np.sum(np.hstack([x, x ** 2]) * np.hstack([W, W]))", False),
    ("np.sum(np.vstack((x[0], x)) ** 2)", False), ("np.sum(np.dstack([x, x]) ** 2)", False),
    ("np.sum(np.column_stack([x[0], x[1] ** 2]) ** 2)", True),
    ("np.sum(np.hstack([x[0], 2.0]) ** 2) + np.sum(np.append(x[1], [1.0, 2.0]) ** 2)", False),
    ("np.sum(np.split(x[0], [1, -1, 9])[1] * W[0, :2])", False),
    ("np.sum(np.diff(x, axis=0) * W[:2])", False),
    ("np.sum(np.diff(x, n=2, prepend=0.5) ** 2)", False),
    ("np.sum(np.gradient(x, axis=1) * W)", True),
    ("np.sum(np.gradient(x, 0.5, axis=0, edge_order=2) * W)", False),
    ("np.sum(np.gradient(x[0]) * W[0])", False),
    ("np.sum(np.pad(x, 1) ** 2 * 0.5)", False),
    ("np.sum(np.pad(x, ((1, 0), (2, 1)), mode='reflect') * np.pad(W, ((1, 0), (2, 1))))", True),
    ("np.sum(np.pad(x, 2, mode='wrap') ** 2)", False),
    ("np.sum(np.pad(x, ((0, 3), (1, 1)), mode='symmetric') ** 2)", False),
    ("np.sum(np.pad(x, 1, mode='edge') ** 2)", False),
    ("np.sum(np.pad(x, 1, mode='constant', constant_values=2.0) ** 2)", False),
    ("np.sum(np.rot90(x) * W.T)", False), ("np.sum(np.rot90(x, 3, axes=(1, 0)) * W.T)", False),
    ("np.sum(np.fliplr(x) * W)", False), ("np.sum(np.flipud(x) * W)", False),
    ("np.sum(np.rollaxis(x[None], 2, 1) ** 2 * 2)", False),
    ("np.sum(np.roll(x, (1, 2), (0, 1)) * W)", False), ("np.sum(np.roll(x, 5) * W)", False),
    ("np.sum(np.moveaxis(x[None], 0, -1) ** 2)", False),
    ("np.sum(np.sort(x, axis=0) * W)", False), ("np.sum(np.sort(x, axis=None) * W[0, 0])", False),
    ("np.sum(np.partition(x, 1, axis=1) * W)", False),
    ("np.sum(np.take(x, [0, 2, 2]))", False), ("np.sum(np.take(x, [3, 3], axis=1) * 2)", False),
    ("np.sum(np.take_along_axis(x, IDX, axis=1) * W[:, :2])", False),
]
SCIPY_CASES = [
    ("np.sum(sp.expit(x) * W) + np.sum(expit(2 * x))", False),
    ("np.sum(sp.logit(sp.expit(x)) * W)", False),
    ("np.sum(sp.erf(x) * W + sp.erfc(x) ** 2)", False),
    ("np.sum(sp.gammaln(x ** 2 + 1) * W)", True),
    ("np.sum(sp.digamma(x ** 2 + 1) * W)", False),
    ("np.sum(sp.logsumexp(x, axis=1) * W[:, 0]) + sp.logsumexp(x)", False),
    ("np.sum(sp.softmax(x, axis=0) * W) + np.sum(sp.log_softmax(x, axis=1) * W)", False),
]
EAGER_MISSES = {"logsumexp", "softmax"}   # plain-Python SciPy functions: not seen by the fallback


def _namespace():
    env = {"np": np, "W": W, "IDX": IDX}
    if HAS_SCIPY:
        import scipy.special as sp
        env.update(sp=sp, expit=sp.expit)
    return env


def _function(body):
    return define(f"def f(x):\n    return {body}\n", _namespace())


def _check(body, jax_has):
    f = _function(body)
    x = np.random.default_rng(len(body)).standard_normal((3, 4))
    saved = x.copy()
    compiled = srcgrad.grad(f, strict=True)
    g = compiled(x)
    np.testing.assert_array_equal(x, saved)
    assert g.dtype == np.float64 and g.shape == x.shape
    fd = numerical_grad(lambda z: float(f(z)), [x.copy()], 0)
    np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-6, err_msg=body)
    if not any(name in body for name in EAGER_MISSES):
        eager = eager_transform(f, "grad", [x.copy()], (0,), False)[0]
        np.testing.assert_allclose(g, eager, rtol=1e-9, atol=1e-12, err_msg=body)
    g32 = compiled(x.astype(np.float32))
    assert g32.dtype == np.float32, body
    np.testing.assert_allclose(g32, g, rtol=2e-3, atol=2e-3, err_msg=body)
    if jax_has and HAS_JAX:
        env = {**f.__globals__, "np": importlib.import_module("jax.numpy")}
        if HAS_SCIPY:
            jsp = importlib.import_module("jax.scipy.special")
            env.update(sp=jsp, expit=jsp.expit)
        rebound = types.FunctionType(f.__code__, env, f.__name__)
        np.testing.assert_allclose(g, np.asarray(jax.grad(rebound)(x)), rtol=1e-7, atol=1e-9,
                                   err_msg=f"jax: {body}")


@pytest.mark.parametrize("body,jax_has", CASES, ids=[c[0] for c in CASES])
def test_numpy_spelling_compiles_to_the_right_gradient(body, jax_has):
    _check(body, jax_has)


@pytest.mark.skipif(not HAS_SCIPY, reason="SciPy is not installed")
@pytest.mark.parametrize("body,jax_has", SCIPY_CASES, ids=[c[0] for c in SCIPY_CASES])
def test_scipy_special_compiles_to_the_right_gradient(body, jax_has):
    _check(body, jax_has)


REFUSED = [
    "np.sum(np.pad(x, 1, mode='linear_ramp'))",
    "np.sum(np.pad(x, 1, mode='reflect', reflect_type='odd'))",
    "np.sum(np.pad(x, 1, constant_values=x[0, 0]))",
    "np.sum(np.average(x, axis=0, returned=True)[0])",
    "np.sum(np.nan_to_num(x, copy=False))",
    "np.sum(np.nan_to_num(x, nan=x[0, 0]))",
    "np.sum(np.diff(x, prepend=x[:, :1]))",
    "np.sum(np.split(x, x.shape[0] - 1)[0])",
    "np.sum(np.gradient(x, np.arange(4.0), axis=1))",
    "np.quantile(x, [[0.2], [0.5]]).sum()",
    "np.quantile(x, x[0, 0] ** 2)",
    "np.quantile(x, 0.2, method='nearest')",
    "np.median(x, overwrite_input=True)",
    "np.sum(np.cov(x, aweights=np.ones(4)))",
    "np.sum(np.sort(x, order='a'))",
    "np.sum(np.take(x, [5], mode='wrap'))",
]


@pytest.mark.parametrize("body", REFUSED)
def test_arguments_not_modelled_are_refused(body):
    f = _function(body)
    x = np.random.default_rng(0).standard_normal((3, 4))
    with pytest.raises(srcgrad.CompileError):
        srcgrad.grad(f, strict=True)(x)
    with pytest.raises((TypeError, RuntimeError, ValueError)):   # the eager run refuses too
        eager_transform(f, "grad", [x], (0,), False)


def test_unpacking_and_several_results():
    f = define("""
        def f(x):
            a, b = np.split(x, 2)
            c, d = np.atleast_2d(a, b)
            gx, gy = np.gradient(np.transpose(c) * d, axis=(0, 1))
            return np.sum(a * b) + np.sum(gx + gy)
        """, {"np": np})
    x = np.random.default_rng(3).standard_normal(4)
    g = srcgrad.grad(f, strict=True)(x)
    np.testing.assert_allclose(g, numerical_grad(lambda z: float(f(z)), [x.copy()], 0),
                               rtol=1e-6, atol=1e-8)


def test_uneven_split_raises_as_numpy_does():
    f = _function("np.sum(np.split(x, 3, axis=1)[0])")
    with pytest.raises(ValueError, match="equal division"):
        srcgrad.grad(f, strict=True)(np.ones((3, 4)))
