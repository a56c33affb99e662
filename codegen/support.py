"""Small functions the generated modules call (their source is copied into each module)."""

from __future__ import annotations

import numpy as np


def match_input(g, x):
    """The gradient ``g`` shaped as the input ``x``: its shape and float dtype, or a float."""
    if isinstance(x, float):
        return float(g)
    if not (hasattr(x, "dtype") and x.dtype.kind in "fc"):
        return None                          # ints, bools, data: no gradient
    if not hasattr(g, "shape") or g.shape != x.shape:
        return np.full(x.shape, g, dtype=x.dtype)      # a scalar standing for the array
    if g.dtype != x.dtype:
        g = g.astype(x.dtype)
    return g


def zero_gradient(x):
    """The gradient of an input the result does not depend on (None for non-floats)."""
    if isinstance(x, float):
        return 0.0
    if hasattr(x, "dtype") and x.dtype.kind in "fc":
        return np.zeros_like(x)
    return None
