"""Helpers of forward-mode code: a zero tangent, and a tangent shaped as its primal.

Generated jvp functions call these; they are primitives so that a jvp function's source can
itself be differentiated (``grad`` of a ``jvp``, ``hessian`` as reverse over forward).
"""

from __future__ import annotations

import numpy as np

from srcgrad.runtime.rules.primitives import defjvp, defvjp, primitive, sum_to

__all__ = ["zero_tangent", "match_tangent"]


@primitive(nin=1)
def zero_tangent(x):
    """The tangent of a value that does not depend on the inputs: zeros shaped as ``x``
    (0.0 for a number, a list or tuple of zeros for one, None for what holds no numbers)."""
    if isinstance(x, (bool, int, float)):
        return 0.0
    if isinstance(x, (list, tuple)):
        items = [zero_tangent(v) for v in x]
        return items if isinstance(x, list) else tuple(items)
    if isinstance(x, dict):
        return {k: zero_tangent(v) for k, v in x.items()}
    if hasattr(x, "dtype") and hasattr(x, "shape"):
        kind = x.dtype.kind
        return np.zeros(x.shape, dtype=x.dtype if kind in "fc" else np.float64)
    return None


@primitive(nin=2)
def match_tangent(t, x):
    """The tangent ``t`` of the value ``x`` in ``x``'s form: a float for a Python float, an
    array of ``x``'s shape and float dtype otherwise."""
    if isinstance(x, float):
        return float(t) if type(x) is float else type(x)(t)
    if isinstance(x, (list, tuple)):                 # a list of values: item by item
        return type(x)(match_tangent(u, v) for u, v in zip(t, x))
    shape = np.shape(x)
    dtype = getattr(x, "dtype", None)
    t = t if hasattr(t, "dtype") else np.asarray(t)        # an array of any library stays one
    if t.shape != shape:
        t = np.broadcast_to(t, shape)
    if dtype is not None and dtype.kind in "fc" and t.dtype != dtype:
        t = t.astype(dtype)
    return t


defvjp(zero_tangent, None)
defvjp(match_tangent, lambda g, ans, t, x: sum_to(g, shape=np.shape(t)), None)
defjvp(match_tangent, linear=True)           # in t; x is not differentiated
