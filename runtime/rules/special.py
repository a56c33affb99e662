"""``scipy.special`` when SciPy is installed: ``expit``, ``logit``, ``erf``, ``erfc``,
``gammaln``, ``digamma`` (and ``polygamma`` for its derivatives), ``logsumexp``, ``softmax``
and ``log_softmax``.

SciPy is optional: the rules below register without it, and their primitives import
``scipy.special`` only when they run.  :func:`bind_scipy` routes SciPy's own functions to
them once SciPy is imported (a program that calls ``scipy.special`` has imported it): the
compiler calls it when it meets a SciPy function.
"""

from __future__ import annotations

import math
import sys

import numpy as np

from srcgrad.runtime.primitives import (
    NUMPY_BINDINGS,
    Primitive,
    bind_numpy,
    defvjp,
    primitive,
)
from srcgrad.runtime.rules.elementwise import sigmoid
from srcgrad.runtime.rules.reductions import log_softmax, logsumexp, softmax

__all__ = ["erf", "erfc", "gammaln", "digamma", "polygamma", "logit", "bind_scipy",
           "SCIPY_NAMES"]

_TWO_OVER_ROOT_PI = 2.0 / math.sqrt(math.pi)


@primitive(elementwise=True, dtype_rule="float")
def erf(x):
    """``scipy.special.erf``."""
    from scipy import special
    return special.erf(x)


@primitive(elementwise=True, dtype_rule="float")
def erfc(x):
    """``scipy.special.erfc``."""
    from scipy import special
    return special.erfc(x)


@primitive(elementwise=True, dtype_rule="float")
def gammaln(x):
    """``scipy.special.gammaln``: log |Γ(x)|."""
    from scipy import special
    return special.gammaln(x)


@primitive(elementwise=True, dtype_rule="float")
def digamma(x):
    """``scipy.special.digamma``: the derivative of ``gammaln``."""
    from scipy import special
    return special.digamma(x)


@primitive(elementwise=True, dtype_rule="float")
def polygamma(x, *, n):
    """``scipy.special.polygamma(n, x)``: the n-th derivative of ``digamma``, in x's dtype."""
    from scipy import special
    out = special.polygamma(n, x)
    return out.astype(np.result_type(x, np.float32)) if hasattr(out, "astype") else out


@primitive(elementwise=True, dtype_rule="float")
def logit(x):
    """``scipy.special.logit``: log(x / (1 - x))."""
    from scipy import special
    return special.logit(x)


defvjp(erf, lambda g, ans, x: g * _TWO_OVER_ROOT_PI * np.exp(-x * x))
defvjp(erfc, lambda g, ans, x: -g * _TWO_OVER_ROOT_PI * np.exp(-x * x))
defvjp(gammaln, lambda g, ans, x: g * digamma(x))
defvjp(digamma, lambda g, ans, x: g * polygamma(x, n=1))
defvjp(polygamma, lambda g, ans, x, n: g * polygamma(x, n=n + 1))
defvjp(logit, lambda g, ans, x: g / (x * (1.0 - x)))

SCIPY_NAMES = {"expit": sigmoid, "logit": logit, "erf": erf, "erfc": erfc,
               "gammaln": gammaln, "digamma": digamma, "psi": digamma,
               "logsumexp": logsumexp, "softmax": softmax, "log_softmax": log_softmax}
"""``scipy.special`` names → their primitive."""


def _logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False):
    if b is not None or return_sign:
        raise TypeError("scipy.special.logsumexp(b=, return_sign=True) is not supported by "
                        "srcgrad")
    return logsumexp(a, axis=axis, keepdims=keepdims)


def _softmax_adapter(prim):
    def call(x, axis=None):
        if axis is None:
            return np.reshape(prim(np.reshape(x, (-1,)), axis=0), np.shape(x))
        return prim(x, axis=axis)
    return call


def _eager_alias(prim: Primitive) -> Primitive:
    """``prim`` with the same function and the very same rules, for the eager binding of a
    SciPy function only: compiled code prints a primitive as the function bound to it, and
    SciPy's ufuncs cannot be printed as NumPy's (the compiler lowers SciPy's calls to ``prim``
    itself, which then prints as its own source)."""
    alias = Primitive(prim.name, prim.fn, prim.nin, broadcasts=prim.broadcasts,
                      elementwise=prim.elementwise, dtype_rule=prim.dtype_rule)
    alias.vjps, alias.argnum_vjp, alias.reads = prim.vjps, prim.argnum_vjp, prim.reads
    alias._finish()
    return alias


def bind_scipy() -> bool:
    """Route ``scipy.special``'s functions to their primitives (once SciPy is imported)."""
    special = sys.modules.get("scipy.special")
    if special is None:
        return False
    if special.erf in NUMPY_BINDINGS:
        return True
    for name, prim in SCIPY_NAMES.items():
        fun = getattr(special, name)
        alias = _eager_alias(prim)
        if name == "logsumexp":
            bind_numpy(fun, alias, _logsumexp)
        elif name in ("softmax", "log_softmax"):
            bind_numpy(fun, alias, _softmax_adapter(prim))
        else:
            bind_numpy(fun, alias, alias)
    return True
