"""``scipy.special`` when SciPy is installed: ``expit``, ``logit``, ``erf``, ``erfc``,
``gammaln``, ``digamma``, ``polygamma``, ``multigammaln``, ``logsumexp`` (``b=`` and
``return_sign=`` too),
``softmax`` and ``log_softmax``; the Bessel functions (:mod:`.bessel`) and the other ufuncs of
:mod:`.special_functions` bind here too.

SciPy is optional: the rules below register without it, and their primitives import
``scipy.special`` only when they run.  :func:`bind_scipy` routes SciPy's own functions to
them once SciPy is imported (a program that calls ``scipy.special`` has imported it): the
compiler calls it when it meets a SciPy function.
"""

from __future__ import annotations

import importlib.util
import math
import sys

import numpy as np

from srcgrad.runtime.rules.bessel import BESSEL_NAMES
from srcgrad.runtime.rules.core import unreduce
from srcgrad.runtime.rules.elementwise import MATH_PRIMITIVES, math_primitive, sigmoid
from srcgrad.runtime.rules.entropy import ENTROPY_UFUNCS
from srcgrad.runtime.rules.forward_rules import reduced
from srcgrad.runtime.rules.primitives import (
    NUMPY_BINDINGS,
    Primitive,
    bind_numpy,
    defjvp,
    defvjp,
    helper,
    primitive,
)
from srcgrad.runtime.rules.reductions import log_softmax, logsumexp, softmax
from srcgrad.runtime.rules.special_functions import SPECIAL_UFUNCS

__all__ = ["erf", "erfc", "gammaln", "digamma", "polygamma", "logit", "multigammaln",
           "logsumexp_b", "logsumexp_signed", "logsumexp_sign",
           "logsumexp_sign_of", "bind_scipy", "SCIPY_NAMES", "SCIPY_UFUNCS", "MATH_SPECIAL"]

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
    """``scipy.special.logit``: log(x / (1 - x)) (NumPy alone: ``Tensor.logit`` needs no SciPy;
    nan outside [0, 1], as SciPy and PyTorch give)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(x / (1.0 - x))


defvjp(erf, lambda g, ans, x: g * _TWO_OVER_ROOT_PI * np.exp(-x * x))
defvjp(erfc, lambda g, ans, x: -g * _TWO_OVER_ROOT_PI * np.exp(-x * x))
defvjp(gammaln, lambda g, ans, x: g * digamma(x))
defvjp(digamma, lambda g, ans, x: g * polygamma(x, n=1))
defvjp(polygamma, lambda g, ans, x, n: g * polygamma(x, n=n + 1))
defvjp(logit, lambda g, ans, x: np.where((x < 0) | (x > 1), np.nan, g / (x * (1.0 - x))))


# Python's ``math.erf``, ``erfc``, ``lgamma`` and ``gamma``: primitives that call ``math`` (its
# errors, a float) with the rules of SciPy's twins (``lgamma`` is log |Γ|, as ``gammaln``).
# The derivatives of the gamma pair need SciPy's digamma: without SciPy they stay unruled.
MATH_SPECIAL = {math.erf: erf, math.erfc: erfc}
if importlib.util.find_spec("scipy") is not None:
    MATH_SPECIAL.update({math.lgamma: gammaln, math.gamma: SPECIAL_UFUNCS["gamma"]})
for _fun, _twin in MATH_SPECIAL.items():
    MATH_PRIMITIVES[_fun] = math_primitive(_fun, _twin)


@primitive(dtype_rule="float")
def multigammaln(a, *, d):
    """``scipy.special.multigammaln(a, d)``: the log of the multivariate gamma function."""
    from scipy import special
    return special.multigammaln(a, d)


@primitive(nin=2, broadcasts=True, dtype_rule="float")
def logsumexp_b(a, b, *, axis=None, keepdims=False):
    """``scipy.special.logsumexp(a, axis, b=b, keepdims)``: log(sum(b * exp(a)))."""
    from scipy import special
    return special.logsumexp(a, axis=axis, b=b, keepdims=keepdims)


def _multigammaln_vjp(g, ans, a, d):
    total = digamma(a)                     # d/da sum_j gammaln(a - j/2) = sum_j digamma(..)
    for j in range(1, d):
        total = total + digamma(a - 0.5 * j)
    return g * total


@helper
def _broadcast_shape(s1, s2):
    """The shape two operands broadcast to."""
    return np.broadcast_shapes(tuple(s1), tuple(s2))


def _lse_weight(g, ans, a, b, axis, keepdims):
    """g and exp(a - ans), both spread over the broadcast shape of a and b."""
    shape = _broadcast_shape(a.shape, b.shape)
    return (unreduce(g, shape=shape, axis=axis, keepdims=keepdims),
            np.exp(a - unreduce(ans, shape=shape, axis=axis, keepdims=keepdims)))


def _lse_b_vjp_a(g, ans, a, b, axis=None, keepdims=False):
    spread, weight = _lse_weight(g, ans, a, b, axis, keepdims)
    return spread * b * weight


def _lse_b_vjp_b(g, ans, a, b, axis=None, keepdims=False):
    spread, weight = _lse_weight(g, ans, a, b, axis, keepdims)
    return spread * weight


@primitive(nin=2, broadcasts=True, dtype_rule="float")
def logsumexp_signed(a, b, *, axis=None, keepdims=False):
    """The first result of ``scipy.special.logsumexp(a, axis, b, keepdims,
    return_sign=True)``: log |sum(b * exp(a))|."""
    from scipy import special
    return special.logsumexp(a, axis=axis, b=b, keepdims=keepdims, return_sign=True)[0]


@primitive(nin=2, broadcasts=True, dtype_rule="float")
def logsumexp_sign(a, b, *, axis=None, keepdims=False):
    """The sign of sum(b * exp(a)) that ``logsumexp(..., return_sign=True)`` returns;
    piecewise constant, no gradient."""
    from scipy import special
    return special.logsumexp(a, axis=axis, b=b, keepdims=keepdims, return_sign=True)[1]


@primitive(dtype_rule="float")
def logsumexp_sign_of(a, *, axis=None, keepdims=False):
    """``logsumexp_sign`` without ``b``."""
    from scipy import special
    return special.logsumexp(a, axis=axis, keepdims=keepdims, return_sign=True)[1]


def _signed_vjp_b(g, ans, a, b, axis=None, keepdims=False):
    spread, weight = _lse_weight(g, ans, a, b, axis, keepdims)
    sign = unreduce(logsumexp_sign(a, b, axis=axis, keepdims=keepdims),
                    shape=_broadcast_shape(a.shape, b.shape), axis=axis, keepdims=keepdims)
    return spread * sign * weight                   # d log|s| = ds / s


def _signed_vjp_a(g, ans, a, b, axis=None, keepdims=False):
    return _signed_vjp_b(g, ans, a, b, axis, keepdims) * b


defvjp(multigammaln, _multigammaln_vjp)
defvjp(logsumexp_b, _lse_b_vjp_a, _lse_b_vjp_b)
defvjp(logsumexp_signed, _signed_vjp_a, _signed_vjp_b)
defvjp(logsumexp_sign, None, None)
defvjp(logsumexp_sign_of, None)
defjvp(logsumexp_signed, reduced(_signed_vjp_a, _signed_vjp_b))
defjvp(multigammaln, diagonal=True)
defjvp(logsumexp_b, reduced(_lse_b_vjp_a, _lse_b_vjp_b))

SCIPY_NAMES = {"expit": sigmoid, "logit": logit, "erf": erf, "erfc": erfc,
               "gammaln": gammaln, "digamma": digamma, "psi": digamma,
               "logsumexp": logsumexp, "softmax": softmax, "log_softmax": log_softmax}
"""``scipy.special`` names → their primitive (the first lowered in lowering_arrays)."""

SCIPY_UFUNCS = {**BESSEL_NAMES, **SPECIAL_UFUNCS, **ENTROPY_UFUNCS}
"""``scipy.special``'s ufuncs with a rule (lowered by
:mod:`srcgrad.frontend.tables.scipy_calls`)."""


def _logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False):
    if return_sign:
        if b is None:
            return (logsumexp(a, axis=axis, keepdims=keepdims),
                    logsumexp_sign_of(a, axis=axis, keepdims=keepdims))
        return (logsumexp_signed(a, b, axis=axis, keepdims=keepdims),
                logsumexp_sign(a, b, axis=axis, keepdims=keepdims))
    if b is not None:
        return logsumexp_b(a, b, axis=axis, keepdims=keepdims)
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
    alias.jvp_rule, alias.linear, alias.multilinear, alias.diagonal = (
        prim.jvp_rule, prim.linear, prim.multilinear, prim.diagonal)
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
    for name, prim in SCIPY_UFUNCS.items():
        alias = _eager_alias(prim)
        bind_numpy(getattr(special, name), alias, alias)
    return True
