"""Small functions the generated modules call (their source is copied into each module)."""

from __future__ import annotations

import numpy as np


def match_input(g, x):
    """The gradient ``g`` shaped as the input ``x``: its shape and float dtype, or a float."""
    if isinstance(x, float):
        return float(g) if type(x) is float else type(x)(g)      # np.float64 stays one
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


def callee_gradient(g, x):
    """A helper's gradient for its argument ``x``; None (an int argument, an unused one) is
    a zero of ``x``'s shape, so that the caller can add to it."""
    if g is not None:
        return g
    shape = np.shape(x)
    return np.zeros(shape) if shape else 0.0


# A list's gradient is a list with one entry per element; ``None`` stands for a zero entry, so
# that a list of zeros costs one pointer an element.  Appending pops its element's gradient.

def pop_gradient(d_list, x):
    """The gradient of ``x``, the last element appended to a list: popped from ``d_list``."""
    g = d_list.pop()
    if g is None and isinstance(x, tuple):      # a tuple's adjoint is read item by item
        return tuple(zero_gradient(v) for v in x)
    return zero_gradient(x) if g is None else g


def item_gradient(d_list, i, x):
    """The gradient of ``x``, the element ``i`` of a list, read from the list's gradient."""
    g = d_list[i]
    if g is None and isinstance(x, tuple):
        return tuple(zero_gradient(v) for v in x)
    return zero_gradient(x) if g is None else g


def add_at(d_list, index, g):
    """Add ``g``, the gradient of ``xs[index]`` (an element, or a list for a slice)."""
    if isinstance(index, slice):
        part = d_list[index]
        d_list[index] = add_lists(part, g)
    else:
        d_list[index] = g if d_list[index] is None else d_list[index] + g
    return d_list


def add_lists(a, b):
    """The sum of two list gradients, element by element."""
    return [y if x is None else x if y is None else x + y for x, y in zip(a, b)]


def own_lists(g):
    """The caller's cotangent, its lists copied: the adjoint pops from them."""
    if isinstance(g, list):
        return list(g)
    if isinstance(g, tuple):
        return tuple(own_lists(x) for x in g)
    return g
