"""A list where NumPy expects an array: ``np.mean([loss(b) for b in batches])``,
``np.var((x, x + 2))``, ``np.sum(lst)``.

NumPy converts such an argument with ``np.asarray`` before it computes: the list is stacked
along a new first axis (a nested list is stacked level by level).  The compiler does the same
for the array inputs of a NumPy function, so the function receives the array NumPy would
build; the gradient flows back to each element through the stack.  The calls that take a
list of arrays on purpose (``np.stack``, ``np.concatenate``, ``np.array``, ``np.einsum`` …)
keep their own lowering.  The lowering of lists
(:meth:`srcgrad.frontend.lists.Lists.operands`) reads here which arguments are array operands.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from srcgrad.frontend.tables import constructs as T
from srcgrad.runtime.rules.primitives import NUMPY_BINDINGS, Primitive

__all__ = ["array_inputs"]


def array_inputs(f: Any) -> int:
    """How many leading positional arguments of ``f`` are array operands (0: ``f`` takes
    lists on purpose, or is unknown here)."""
    if T.SPECIAL_CALLS.get(f) is not None:
        return 0
    if isinstance(f, Primitive):
        return 0                     # the rule table's own primitives take what they take
    if isinstance(f, np.ufunc):
        return f.nin
    binding = NUMPY_BINDINGS.get(f)
    return binding[0].nin if binding else 0


_array_inputs = array_inputs        # the eager fallback's name for it
