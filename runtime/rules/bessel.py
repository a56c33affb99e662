"""``scipy.special``'s Bessel functions, differentiated with respect to ``x`` by the standard
recurrences (DLMF 10.6.1, 10.29.1, 10.29.5): ``J'_v = (J_{v-1} - J_{v+1}) / 2``, the same for
``Y``, ``I'_v = (I_{v-1} + I_{v+1}) / 2``, ``K'_v = -(K_{v-1} + K_{v+1}) / 2``; the
exponentially scaled ones (``ive = iv * exp(-|x|)``, ``kve = kv * exp(x)``) add the derivative
of their scale.

The order ``v`` has no closed-form derivative: a gradient that reaches it is refused (at
compile time, or by the eager run), never silently zero as in HIPS autograd.
Each function is a primitive of its own: compiled code prints its source (SciPy's ufuncs
cannot be printed as NumPy's), and :func:`srcgrad.runtime.rules.special.bind_scipy` routes
SciPy's ufunc to it in the eager run.
"""

from __future__ import annotations

import sys

import numpy as np

from srcgrad.runtime.rules.primitives import defvjp, primitive

__all__ = ["BESSEL_NAMES", "refuse_gradient"]


def refuse_gradient(g, what: str) -> None:
    """Called by a rule whose input has no derivative srcgrad can give (an order, a shape
    parameter of a CDF).  Compiling (``g`` a symbolic value), the error is the one the
    symbolic values' module refuses a rule with (the compiler makes it a CompileError with
    the line); in the eager run's backward pass, a TypeError."""
    error = getattr(sys.modules.get(type(g).__module__), "SymbolicError", TypeError)
    raise error(f"{what}; srcgrad does not differentiate it (keep it a constant, or do not "
                "differentiate with respect to it)")


def _order_rule(name: str):
    def rule(g, ans, v, x):
        return refuse_gradient(g, f"the derivative of scipy.special.{name}(v, x) with respect to "
                               "the order v has no closed form")
    return rule


@primitive(elementwise=True, dtype_rule="float")
def j0(x):
    """``scipy.special.j0``."""
    from scipy import special
    return special.j0(x)


@primitive(elementwise=True, dtype_rule="float")
def j1(x):
    """``scipy.special.j1``."""
    from scipy import special
    return special.j1(x)


@primitive(elementwise=True, dtype_rule="float")
def y0(x):
    """``scipy.special.y0``."""
    from scipy import special
    return special.y0(x)


@primitive(elementwise=True, dtype_rule="float")
def y1(x):
    """``scipy.special.y1``."""
    from scipy import special
    return special.y1(x)


@primitive(elementwise=True, dtype_rule="float")
def i0(x):
    """``scipy.special.i0``."""
    from scipy import special
    return special.i0(x)


@primitive(elementwise=True, dtype_rule="float")
def i1(x):
    """``scipy.special.i1``."""
    from scipy import special
    return special.i1(x)


@primitive(elementwise=True, dtype_rule="float")
def i0e(x):
    """``scipy.special.i0e``: ``i0(x) * exp(-|x|)``."""
    from scipy import special
    return special.i0e(x)


@primitive(elementwise=True, dtype_rule="float")
def i1e(x):
    """``scipy.special.i1e``: ``i1(x) * exp(-|x|)``."""
    from scipy import special
    return special.i1e(x)


@primitive(elementwise=True, dtype_rule="float")
def k0(x):
    """``scipy.special.k0``."""
    from scipy import special
    return special.k0(x)


@primitive(elementwise=True, dtype_rule="float")
def k1(x):
    """``scipy.special.k1``."""
    from scipy import special
    return special.k1(x)


@primitive(elementwise=True, dtype_rule="float")
def k0e(x):
    """``scipy.special.k0e``: ``k0(x) * exp(x)``."""
    from scipy import special
    return special.k0e(x)


@primitive(elementwise=True, dtype_rule="float")
def k1e(x):
    """``scipy.special.k1e``: ``k1(x) * exp(x)``."""
    from scipy import special
    return special.k1e(x)


@primitive(nin=2, elementwise=True, broadcasts=True, dtype_rule="float")
def jv(v, x):
    """``scipy.special.jv`` (also ``jn``)."""
    from scipy import special
    return special.jv(v, x)


@primitive(nin=2, elementwise=True, broadcasts=True, dtype_rule="float")
def yv(v, x):
    """``scipy.special.yv``."""
    from scipy import special
    return special.yv(v, x)


@primitive(nin=2, elementwise=True, broadcasts=True, dtype_rule="float")
def yn(n, x):
    """``scipy.special.yn``: ``yv`` for an integer order."""
    from scipy import special
    return special.yn(n, x)


@primitive(nin=2, elementwise=True, broadcasts=True, dtype_rule="float")
def iv(v, x):
    """``scipy.special.iv``."""
    from scipy import special
    return special.iv(v, x)


@primitive(nin=2, elementwise=True, broadcasts=True, dtype_rule="float")
def ive(v, x):
    """``scipy.special.ive``: ``iv(v, x) * exp(-|x|)``."""
    from scipy import special
    return special.ive(v, x)


@primitive(nin=2, elementwise=True, broadcasts=True, dtype_rule="float")
def kv(v, x):
    """``scipy.special.kv``."""
    from scipy import special
    return special.kv(v, x)


@primitive(nin=2, elementwise=True, broadcasts=True, dtype_rule="float")
def kve(v, x):
    """``scipy.special.kve``: ``kv(v, x) * exp(x)``."""
    from scipy import special
    return special.kve(v, x)


defvjp(j0, lambda g, ans, x: -g * j1(x))
defvjp(j1, lambda g, ans, x: g * (j0(x) - jv(2, x)) * 0.5)
defvjp(y0, lambda g, ans, x: -g * y1(x))
defvjp(y1, lambda g, ans, x: g * (y0(x) - yn(2, x)) * 0.5)
defvjp(i0, lambda g, ans, x: g * i1(x))
defvjp(i1, lambda g, ans, x: g * (i0(x) + iv(2, x)) * 0.5)
defvjp(i0e, lambda g, ans, x: g * (i1e(x) - np.sign(x) * ans))
defvjp(i1e, lambda g, ans, x: g * ((i0e(x) + ive(2, x)) * 0.5 - np.sign(x) * ans))
defvjp(k0, lambda g, ans, x: -g * k1(x))
defvjp(k1, lambda g, ans, x: -g * (k0(x) + kv(2, x)) * 0.5)
defvjp(k0e, lambda g, ans, x: g * (ans - k1e(x)))
defvjp(k1e, lambda g, ans, x: g * (ans - (k0e(x) + kve(2, x)) * 0.5))
defvjp(jv, _order_rule("jv"), lambda g, ans, v, x: g * (jv(v - 1, x) - jv(v + 1, x)) * 0.5)
defvjp(yv, _order_rule("yv"), lambda g, ans, v, x: g * (yv(v - 1, x) - yv(v + 1, x)) * 0.5)
defvjp(yn, _order_rule("yn"), lambda g, ans, v, x: g * (yn(v - 1, x) - yn(v + 1, x)) * 0.5)
defvjp(iv, _order_rule("iv"), lambda g, ans, v, x: g * (iv(v - 1, x) + iv(v + 1, x)) * 0.5)
defvjp(ive, _order_rule("ive"), lambda g, ans, v, x:
       g * ((ive(v - 1, x) + ive(v + 1, x)) * 0.5 - np.sign(x) * ans))
defvjp(kv, _order_rule("kv"), lambda g, ans, v, x: -g * (kv(v - 1, x) + kv(v + 1, x)) * 0.5)
defvjp(kve, _order_rule("kve"), lambda g, ans, v, x:
       g * (ans - (kve(v - 1, x) + kve(v + 1, x)) * 0.5))

BESSEL_NAMES = {"j0": j0, "j1": j1, "y0": y0, "y1": y1, "i0": i0, "i1": i1, "i0e": i0e,
                "i1e": i1e, "k0": k0, "k1": k1, "k0e": k0e, "k1e": k1e, "jv": jv, "jn": jv,
                "yv": yv, "yn": yn, "iv": iv, "ive": ive, "kv": kv, "kve": kve}
"""``scipy.special`` names → their primitive (ufuncs: the eager run meets them as such)."""
