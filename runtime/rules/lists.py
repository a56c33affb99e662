"""The list family of the rule table: joining a Python list of arrays built at run time.

The eager engine never needs these: on Tensors, ``np.stack(hs)`` of a list is a variadic
``stack`` with one input per Tensor.  Compiled code does not know how long a list built in a
loop will be, so the compiler lowers ``np.stack(hs)``, ``np.concatenate(hs)`` and ``sum(hs)``
of such a list to these primitives, whose one input is the list and whose rules return a list
(one gradient per element).  They are tested like every other rule (``tests/test_rules.py``).
"""

from __future__ import annotations

import builtins

import numpy as np

from srcgrad.runtime.primitives import defvjp, helper, primitive, unbroadcast


@helper
def unstack(g, axis=0):
    """The gradient of each array of ``np.stack(xs, axis)``: the slices of ``g`` on ``axis``."""
    return list(np.moveaxis(g, axis, 0))


@helper
def split_like(g, xs, axis=0):
    """The gradient of each array of ``np.concatenate(xs, axis)``: ``g`` cut where they join."""
    ends = np.cumsum([np.shape(x)[axis] for x in xs])
    return np.split(g, ends[:-1].tolist(), axis=axis)


@helper
def spread(g, xs):
    """The gradient of each term of ``sum(xs)``: ``g``, with broadcasting undone."""
    return [unbroadcast(g, np.shape(x)) if np.ndim(g) >= np.ndim(x) else g for x in xs]


@primitive(nin=1)
def stack_list(xs, axis=0):
    return np.stack(xs, axis=axis)


@primitive(nin=1)
def concatenate_list(xs, axis=0):
    return np.concatenate(xs, axis=axis)


@primitive(nin=1)
def sum_list(xs):
    return builtins.sum(xs)


defvjp(stack_list, lambda g, ans, xs, axis=0: unstack(g, axis=axis))
defvjp(concatenate_list, lambda g, ans, xs, axis=0: split_like(g, xs, axis=axis))
defvjp(sum_list, lambda g, ans, xs: spread(g, xs))

PRINTED_AS = {stack_list: np.stack, concatenate_list: np.concatenate, sum_list: builtins.sum}
"""How generated code writes each of them: the function the user called."""
