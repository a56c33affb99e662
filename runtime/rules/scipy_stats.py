"""``scipy.stats`` distributions: the values SciPy computes, and their exact derivatives.

``continuous(x, *shapes, loc, scale, dist=, method=)`` is ``scipy.stats.<dist>.<method>`` for
``norm``, ``t``, ``chi2``, ``gamma`` and ``beta`` and the methods ``pdf``, ``logpdf``,
``cdf``, ``logcdf``, ``sf`` and ``logsf``.  With ``z = (x - loc) / scale`` every method is a
function of ``z`` (over ``scale`` for the density), so ``x``, ``loc`` and ``scale`` share one
rule built from the density and its score ``d logpdf / dz``.  Shape parameters are
differentiated in ``pdf``/``logpdf`` (closed forms with ``digamma``); through a CDF they have
none, and a gradient that reaches one is refused.

``poisson(k, mu, method=)`` (``pmf``, ``logpmf``, ``cdf``, ``sf``, ``logcdf``, ``logsf``) is
differentiated in ``mu``; in ``k`` the CDFs are step functions (a zero gradient, as
``np.floor``) and the pmf is not differentiable (refused).  ``dirichlet(x, alpha,
method=)`` (``pdf``, ``logpdf``) in both.  See :mod:`srcgrad.frontend.tables.scipy_calls` for the
calls.
"""

from __future__ import annotations

import math

import numpy as np

from srcgrad.runtime.rules.bessel import refuse_gradient
from srcgrad.runtime.rules.primitives import defjvp, defvjp, defvjp_argnum, helper, primitive
from srcgrad.runtime.rules.special import digamma

__all__ = ["CONTINUOUS", "DISCRETE", "continuous", "poisson", "dirichlet"]

CONTINUOUS = {"norm": (), "t": ("df",), "chi2": ("df",), "gamma": ("a",), "beta": ("a", "b")}
"""Distributions → the names of their shape parameters (SciPy's order)."""
METHODS = ("pdf", "logpdf", "cdf", "logcdf", "sf", "logsf")
DISCRETE = {"poisson": ("pmf", "logpmf", "cdf", "sf", "logcdf", "logsf")}

_LOG_ROOT_TWO_PI = 0.5 * math.log(2.0 * math.pi)
_LOG_TWO = math.log(2.0)


@primitive(nin=None, broadcasts=True, dtype_rule="float")
def continuous(*args, dist, method):
    """``scipy.stats.<dist>.<method>(x, *shapes, loc, scale)``."""
    from scipy import stats
    return getattr(getattr(stats, dist), method)(*args)


def _score(dist, z, shapes):
    """d logpdf(z) / dz of the standard distribution (loc 0, scale 1)."""
    if dist == "norm":
        return -z
    if dist == "t":
        (df,) = shapes
        return -(df + 1.0) * z / (df + z * z)
    if dist == "chi2":
        (df,) = shapes
        return (0.5 * df - 1.0) / z - 0.5
    if dist == "gamma":
        (a,) = shapes
        return (a - 1.0) / z - 1.0
    a, b = shapes                                                         # beta
    return (a - 1.0) / z - (b - 1.0) / (1.0 - z)


def _shape_score(dist, k, z, shapes):
    """d logpdf(z) / d shapes[k] of the standard distribution."""
    if dist == "t":
        (df,) = shapes
        return (0.5 * (digamma(0.5 * df + 0.5) - digamma(0.5 * df)) - 0.5 / df
                - 0.5 * np.log1p(z * z / df) + (df + 1.0) * z * z / (2.0 * df * (df + z * z)))
    if dist == "chi2":
        (df,) = shapes
        return 0.5 * np.log(z) - 0.5 * _LOG_TWO - 0.5 * digamma(0.5 * df)
    if dist == "gamma":
        (a,) = shapes
        return np.log(z) - digamma(a)
    a, b = shapes                                                         # beta
    return (np.log(z) if k == 0 else np.log1p(-z)) - digamma(a if k == 0 else b) + digamma(a + b)


def _d_dx(g, ans, x, shapes, loc, scale, dist, method):
    """g times d method / dx, and z."""
    z = (x - loc) / scale
    if method in ("pdf", "logpdf"):
        score = _score(dist, z, shapes) / scale
        return (g * ans * score if method == "pdf" else g * score), z
    log_density = continuous(x, *shapes, loc, scale, dist=dist, method="logpdf")
    sign = 1.0 if method in ("cdf", "logcdf") else -1.0
    if method in ("cdf", "sf"):
        return g * sign * np.exp(log_density), z
    return g * sign * np.exp(log_density - ans), z


def _continuous_vjp(argnum, g, ans, *args, dist, method):
    x, shapes, loc, scale = args[0], args[1:-2], args[-2], args[-1]
    if 0 < argnum <= len(shapes):
        k = argnum - 1
        if method not in ("pdf", "logpdf"):
            return refuse_gradient(g, f"the derivative of scipy.stats.{dist}.{method} with "
                                   f"respect to {CONTINUOUS[dist][k]} has no closed form")
        d = _shape_score(dist, k, (x - loc) / scale, shapes)
        return np.where(ans > 0, g * ans * d, 0.0) if method == "pdf" else g * d
    dx, z = _d_dx(g, ans, x, shapes, loc, scale, dist, method)
    if argnum == 0:
        return dx
    if argnum == len(args) - 2:                                           # loc
        return -dx
    if method == "pdf":                                                   # scale
        return -dx * z - g * ans / scale
    return -dx * z - g / scale if method == "logpdf" else -dx * z


defvjp_argnum(continuous, _continuous_vjp, dtype_rule="float")


@primitive(nin=2, broadcasts=True, dtype_rule="float")
def poisson(k, mu, *, method):
    """``scipy.stats.poisson.<method>(k, mu)``."""
    from scipy import stats
    return getattr(stats.poisson, method)(k, mu)


def _poisson_vjp_mu(g, ans, k, mu, method):
    if method in ("pmf", "logpmf"):
        d = k / mu - 1.0
        return g * ans * d if method == "pmf" else np.where(np.isfinite(ans), g * d, 0.0)
    sign = -1.0 if method in ("cdf", "logcdf") else 1.0
    at = poisson(np.floor(k), mu, method="logpmf")        # d cdf / d mu = -pmf(floor(k))
    if method in ("cdf", "sf"):
        return g * sign * np.exp(at)
    return g * sign * np.exp(at - ans)


def _poisson_vjp_k(g, ans, k, mu, method):
    if method in ("pmf", "logpmf"):       # nonzero (finite) at the integers only: no slope
        return refuse_gradient(g, f"scipy.stats.poisson.{method} is not differentiable with "
                               "respect to the count k")
    return np.zeros_like(g)                # a step function of k, as np.floor


defvjp(poisson, _poisson_vjp_k, _poisson_vjp_mu)


@primitive(nin=2, dtype_rule="float")
def dirichlet(x, alpha, *, method):
    """``scipy.stats.dirichlet.<method>(x, alpha)``, x with one row per component."""
    from scipy import stats
    if np.ndim(alpha) != 1 or np.shape(x)[:1] != np.shape(alpha):
        raise ValueError("srcgrad follows scipy.stats.dirichlet with a 1-D alpha and x with "
                         "one entry (row) per component")
    return getattr(stats.dirichlet, method)(x, alpha)


@helper
def _column_shape(shape, ndim):
    """A 1-D shape with ``ndim - 1`` trailing 1-dims (alpha against x's rows)."""
    return tuple(shape) + (1,) * (ndim - 1)


@helper
def _trailing_axes(ndim):
    return tuple(range(1, ndim))


def _dirichlet_g(g, ans, method):
    """d method / d logpdf times g, as a row to broadcast against x."""
    return np.expand_dims(g * ans if method == "pdf" else g, 0)


def _dirichlet_vjp_x(g, ans, x, alpha, method):
    column = np.reshape(alpha, _column_shape(alpha.shape, x.ndim))
    return _dirichlet_g(g, ans, method) * (column - 1.0) / x


def _dirichlet_vjp_alpha(g, ans, x, alpha, method):
    column = np.reshape(alpha, _column_shape(alpha.shape, x.ndim))
    d = np.log(x) - digamma(column) + digamma(np.sum(alpha))
    return np.sum(_dirichlet_g(g, ans, method) * d, axis=_trailing_axes(x.ndim))


defvjp(dirichlet, _dirichlet_vjp_x, _dirichlet_vjp_alpha)


# Forward mode: continuous and poisson are elementwise in all their inputs (diagonal);
# dirichlet reduces over the components (the first axis of x, alpha's only one).

def _dirichlet_jvp(tangents, ans, x, alpha, method):
    tx, ta = tangents
    column = np.reshape(alpha, _column_shape(alpha.shape, x.ndim))
    moved = 0.0 * x
    if tx is not None:
        moved = moved + tx * (column - 1.0) / x
    if ta is not None:
        d = np.log(x) - digamma(column) + digamma(np.sum(alpha))
        moved = moved + np.reshape(ta, _column_shape(alpha.shape, x.ndim)) * d
    out = np.sum(moved, axis=0)                      # the tangent of logpdf
    return out * ans if method == "pdf" else out


defjvp(continuous, diagonal=True)
defjvp(poisson, diagonal=True)
defjvp(dirichlet, _dirichlet_jvp)
