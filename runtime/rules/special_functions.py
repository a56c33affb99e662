"""More of ``scipy.special``'s ufuncs: the gamma family (``gamma``, ``rgamma``, ``gammasgn``,
``beta``, ``betaln``, the regularized incomplete ``gammainc``/``gammaincc``/``betainc``), the
inverse error functions, the normal CDF (``ndtr``, ``log_ndtr``, ``ndtri``) and ``xlogy``.

The incomplete functions are differentiated with respect to ``x`` only: their shape
parameters have no closed-form derivative, and a gradient that reaches one is refused.
``gammasgn`` is piecewise constant: no gradient.  As in :mod:`.bessel`, each function is a
primitive printing its own source, and ``bind_scipy`` routes SciPy's ufunc to it eagerly.
"""

from __future__ import annotations

import math

import numpy as np

from srcgrad.runtime.rules.bessel import refuse_gradient
from srcgrad.runtime.rules.nn import normal_cdf
from srcgrad.runtime.rules.primitives import defvjp, primitive

__all__ = ["SPECIAL_UFUNCS"]

_HALF_ROOT_PI = math.sqrt(math.pi) / 2.0
_ROOT_TWO_PI = math.sqrt(2.0 * math.pi)
_LOG_ROOT_TWO_PI = 0.5 * math.log(2.0 * math.pi)


def _unary(fn):
    return primitive(fn, elementwise=True, dtype_rule="float")


def _binary(fn):
    return primitive(fn, nin=2, elementwise=True, broadcasts=True, dtype_rule="float")


@_unary
def gamma(x):
    """``scipy.special.gamma``."""
    from scipy import special
    return special.gamma(x)


@_unary
def rgamma(x):
    """``scipy.special.rgamma``: 1 / gamma(x)."""
    from scipy import special
    return special.rgamma(x)


@_unary
def gammasgn(x):
    """``scipy.special.gammasgn``: the sign of gamma(x) (no gradient)."""
    from scipy import special
    return special.gammasgn(x)


@_unary
def erfinv(x):
    """``scipy.special.erfinv``."""
    from scipy import special
    return special.erfinv(x)


@_unary
def erfcinv(x):
    """``scipy.special.erfcinv``."""
    from scipy import special
    return special.erfcinv(x)


@_unary
def ndtr(x):
    """``scipy.special.ndtr``: the standard normal CDF."""
    from scipy import special
    return special.ndtr(x)


@_unary
def log_ndtr(x):
    """``scipy.special.log_ndtr``: log of the standard normal CDF."""
    from scipy import special
    return special.log_ndtr(x)


@_unary
def ndtri(x):
    """``scipy.special.ndtri``: the inverse of ``ndtr``."""
    from scipy import special
    return special.ndtri(x)


@_binary
def beta(a, b):
    """``scipy.special.beta``."""
    from scipy import special
    return special.beta(a, b)


@_binary
def betaln(a, b):
    """``scipy.special.betaln``: log |beta(a, b)|."""
    from scipy import special
    return special.betaln(a, b)


@_binary
def xlogy(x, y):
    """``scipy.special.xlogy``: x * log(y), 0 where x == 0."""
    from scipy import special
    return special.xlogy(x, y)


@_binary
def gammainc(a, x):
    """``scipy.special.gammainc``: the regularized lower incomplete gamma function."""
    from scipy import special
    return special.gammainc(a, x)


@_binary
def gammaincc(a, x):
    """``scipy.special.gammaincc``: the regularized upper incomplete gamma function."""
    from scipy import special
    return special.gammaincc(a, x)


@primitive(nin=3, elementwise=True, broadcasts=True, dtype_rule="float")
def betainc(a, b, x):
    """``scipy.special.betainc``: the regularized incomplete beta function."""
    from scipy import special
    return special.betainc(a, b, x)



def _refused(g, name: str, what: str) -> None:
    """(All rules of a primitive name its inputs alike: what a node saves goes by name.)"""
    return refuse_gradient(g, f"the derivative of scipy.special.{name} with respect to {what} "
                           "has no closed form")


def _digamma(x):
    from srcgrad.runtime.rules.special import digamma
    return digamma(x)


def _gamma_density(a, x):
    """d gammainc(a, x) / dx = x**(a-1) exp(-x) / gamma(a)."""
    from srcgrad.runtime.rules.special import gammaln
    return np.power(x, a - 1.0) * np.exp(-x - gammaln(a))


defvjp(gamma, lambda g, ans, x: g * ans * _digamma(x))
defvjp(rgamma, lambda g, ans, x: -g * ans * _digamma(x))
defvjp(gammasgn, None)
defvjp(erfinv, lambda g, ans, x: g * _HALF_ROOT_PI * np.exp(ans * ans))
defvjp(erfcinv, lambda g, ans, x: -g * _HALF_ROOT_PI * np.exp(ans * ans))
defvjp(ndtr, *normal_cdf.vjps)        # Φ: one rule with nn.normal_cdf (NumPy only)
defvjp(log_ndtr, lambda g, ans, x: g * np.exp(-0.5 * x * x - _LOG_ROOT_TWO_PI - ans))
defvjp(ndtri, lambda g, ans, x: g * _ROOT_TWO_PI * np.exp(0.5 * ans * ans))
defvjp(beta, lambda g, ans, a, b: g * ans * (_digamma(a) - _digamma(a + b)),
       lambda g, ans, a, b: g * ans * (_digamma(b) - _digamma(a + b)))
defvjp(betaln, lambda g, ans, a, b: g * (_digamma(a) - _digamma(a + b)),
       lambda g, ans, a, b: g * (_digamma(b) - _digamma(a + b)))
defvjp(xlogy, lambda g, ans, x, y: g * np.log(y), lambda g, ans, x, y: g * x / y)
defvjp(gammainc, lambda g, ans, a, x: _refused(g, "gammainc(a, x)", "a"),
       lambda g, ans, a, x: g * _gamma_density(a, x))
defvjp(gammaincc, lambda g, ans, a, x: _refused(g, "gammaincc(a, x)", "a"),
       lambda g, ans, a, x: -g * _gamma_density(a, x))
defvjp(betainc, lambda g, ans, a, b, x: _refused(g, "betainc(a, b, x)", "a"),
       lambda g, ans, a, b, x: _refused(g, "betainc(a, b, x)", "b"),
       lambda g, ans, a, b, x: g * np.power(x, a - 1.0) * np.power(1.0 - x, b - 1.0)
       * np.exp(-betaln(a, b)))

SPECIAL_UFUNCS = {"gamma": gamma, "rgamma": rgamma, "gammasgn": gammasgn, "erfinv": erfinv,
                  "erfcinv": erfcinv, "ndtr": ndtr, "log_ndtr": log_ndtr, "ndtri": ndtri,
                  "beta": beta, "betaln": betaln, "xlogy": xlogy, "gammainc": gammainc,
                  "gammaincc": gammaincc, "betainc": betainc}
"""``scipy.special`` names → their primitive (ufuncs)."""
