"""More of ``scipy.special``'s ufuncs: the entropy family (``entr``, ``rel_entr``,
``kl_div``), ``xlog1py``, ``log_expit``, SciPy's own ``expm1`` and ``log1p`` and ``boxcox``.

SciPy computes each value; the rules are the closed forms of their derivatives.  Where SciPy
defines a value by a convention (``xlog1py(0, y)`` is 0 whatever ``y``; ``rel_entr(0, y)``
is 0 and ``kl_div(0, y)`` is ``y`` for ``y >= 0``), the rule is the derivative of that
convention: along ``y`` at ``x == 0`` the function does not change.  As in :mod:`.bessel`,
``bind_scipy`` routes SciPy's ufunc to its primitive in the eager run.
"""

from __future__ import annotations

import numpy as np

from srcgrad.runtime.rules.primitives import defvjp, primitive

__all__ = ["ENTROPY_UFUNCS"]


def _unary(fn):
    return primitive(fn, elementwise=True, dtype_rule="float")


def _binary(fn):
    return primitive(fn, nin=2, elementwise=True, broadcasts=True, dtype_rule="float")


@_binary
def xlog1py(x, y):
    """``scipy.special.xlog1py``: x * log1p(y), 0 where x == 0."""
    from scipy import special
    return special.xlog1py(x, y)


@_unary
def entr(x):
    """``scipy.special.entr``: -x log(x), 0 at 0, -inf below."""
    from scipy import special
    return special.entr(x)


@_binary
def rel_entr(x, y):
    """``scipy.special.rel_entr``: x log(x / y) (0 where x == 0 and y >= 0)."""
    from scipy import special
    return special.rel_entr(x, y)


@_binary
def kl_div(x, y):
    """``scipy.special.kl_div``: x log(x / y) - x + y (y where x == 0 and y >= 0)."""
    from scipy import special
    return special.kl_div(x, y)


@_unary
def log_expit(x):
    """``scipy.special.log_expit``: log(1 / (1 + exp(-x))), computed stably."""
    from scipy import special
    return special.log_expit(x)


@_unary
def special_expm1(x):
    """``scipy.special.expm1``: exp(x) - 1."""
    from scipy import special
    return special.expm1(x)


@_unary
def special_log1p(x):
    """``scipy.special.log1p``: log(1 + x)."""
    from scipy import special
    return special.log1p(x)


@_binary
def boxcox(x, lmbda):
    """``scipy.special.boxcox``: (x ** lmbda - 1) / lmbda, log(x) where lmbda == 0."""
    from scipy import special
    return special.boxcox(x, lmbda)


def _where_x(x, value):
    """``value`` where ``x`` is not 0, else 0: along ``y`` the convention at x == 0 is flat."""
    return np.where(x == 0, 0.0, value)


def _boxcox_lmbda(g, ans, x, lmbda):
    """d boxcox / d lmbda = (x**l log x - boxcox) / l; (log x)**2 / 2 where l == 0."""
    log_x = np.log(x)
    safe = np.where(lmbda == 0, 1.0, lmbda)
    general = (np.power(x, lmbda) * log_x - ans) / safe
    return g * np.where(lmbda == 0, 0.5 * log_x * log_x, general)


defvjp(xlog1py, lambda g, ans, x, y: g * np.log1p(y),
       lambda g, ans, x, y: g * _where_x(x, x / (1.0 + y)))
defvjp(entr, lambda g, ans, x: -g * (np.log(x) + 1.0))
defvjp(rel_entr, lambda g, ans, x, y: g * (np.log(x / y) + 1.0),
       lambda g, ans, x, y: g * _where_x(x, -x / y))
defvjp(kl_div, lambda g, ans, x, y: g * np.log(x / y),
       lambda g, ans, x, y: g * (1.0 - _where_x(x, x / y)))
defvjp(log_expit, lambda g, ans, x: g * -np.expm1(ans))          # 1 - expit(x)
defvjp(special_expm1, lambda g, ans, x: g * (ans + 1.0))
defvjp(special_log1p, lambda g, ans, x: g / (1.0 + x))
defvjp(boxcox, lambda g, ans, x, lmbda: g * np.power(x, lmbda - 1.0), _boxcox_lmbda)

ENTROPY_UFUNCS = {"xlog1py": xlog1py, "entr": entr, "rel_entr": rel_entr, "kl_div": kl_div,
                  "log_expit": log_expit, "expm1": special_expm1, "log1p": special_log1p,
                  "boxcox": boxcox}
"""``scipy.special`` names → their primitive (ufuncs)."""
