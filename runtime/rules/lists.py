"""The list family of the rule table: joining a Python list of arrays built at run time.

The eager engine never needs these: on Tensors, ``np.stack(hs)`` of a list is a variadic
``stack`` with one input per Tensor.  Compiled code does not know how long a list built in a
loop will be, so the compiler lowers ``np.stack(hs)``, ``np.concatenate(hs)`` and ``sum(hs)``
of such a list to these primitives, whose one input is the list and whose rules return a list
(one gradient per element).  They are tested like every other rule (``tests/sweeps/test_rules.py``).
"""

from __future__ import annotations

import builtins

import numpy as np

from srcgrad.runtime.rules.core import along
from srcgrad.runtime.rules.primitives import defjvp, defvjp, helper, primitive, unbroadcast


@helper
def unstack(g, xs=None, axis=0):
    """The gradient of each element of ``np.stack(xs, axis)``: the slices of ``g`` on
    ``axis``; an element that is itself a list (``np.array([[a, 2 * a] for a in x])``) gets
    a list, level by level, as the gradient of a list must be."""
    def like(part, x):
        if isinstance(x, (list, tuple)):
            return type(x)(like(p, e) for p, e in zip(part, x))
        return part
    parts = list(np.moveaxis(g, axis, 0))
    return parts if xs is None else [like(p, x) for p, x in zip(parts, xs)]


@helper
def split_like(g, xs, axis=0):
    """The gradient of each array of ``np.concatenate(xs, axis)``: ``g`` cut where they join."""
    ends = np.cumsum([0] + [np.shape(x)[axis] for x in xs]).tolist()
    return [g[along(axis, slice(a, b))] for a, b in zip(ends[:-1], ends[1:])]   # any array


@helper
def spread(g, xs):
    """The gradient of each term of ``sum(xs)``: ``g``, with broadcasting undone."""
    return [unbroadcast(g, np.shape(x)) if np.ndim(g) >= np.ndim(x) else g for x in xs]


@primitive(nin=1)
def stack_list(xs, axis=0):
    return np.stack(xs, axis=axis)


@primitive(nin=1)
def array_list(xs):
    """``np.array(xs)`` of a list built at run time: ``np.stack`` along a new first axis,
    except that an empty list gives NumPy's ``array([])`` (where ``np.stack([])`` raises)."""
    return np.stack(xs) if len(xs) else np.array(xs)


@primitive(nin=1)
def concatenate_list(xs, axis=0):
    return np.concatenate(xs, axis=axis)


@primitive(nin=1)
def sum_list(xs):
    return builtins.sum(xs)


defvjp(stack_list, lambda g, ans, xs, axis=0: unstack(g, xs, axis=axis))
defvjp(array_list, lambda g, ans, xs: unstack(g, xs))
defvjp(concatenate_list, lambda g, ans, xs, axis=0: split_like(g, xs, axis=axis))
defvjp(sum_list, lambda g, ans, xs: spread(g, xs))
for _f in (stack_list, array_list, concatenate_list, sum_list):
    defjvp(_f, linear=True)             # of the list of tangents (None: zeros)

PRINTED_AS = {stack_list: np.stack, array_list: np.array, concatenate_list: np.concatenate,
              sum_list: builtins.sum}
"""How generated code writes each of them: the function the user called."""
