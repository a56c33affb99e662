"""A list where NumPy expects an array: ``np.mean([loss(b) for b in batches])``,
``np.var((x, x + 2))``, ``np.sum(lst)``.

NumPy converts such an argument with ``np.asarray`` before it computes: the list is stacked
along a new first axis (a nested list is stacked level by level).  The compiler does the same
for the array inputs of a NumPy function, so the function receives the array NumPy would
build; the gradient flows back to each element through the stack.  The calls that take a
list of arrays on purpose (``np.stack``, ``np.concatenate``, ``np.array``, ``np.einsum`` …)
keep their own lowering.
"""

from __future__ import annotations

import ast
from typing import Any

import numpy as np

from srcgrad.frontend.tables import constructs as T
from srcgrad.ir import Pack, Tree
from srcgrad.runtime.rules.primitives import NUMPY_BINDINGS, Primitive

__all__ = ["ListOperands"]


class ListOperands:
    """Lists given as array operands, stacked as NumPy would (mixed into the Lowerer)."""

    def numpy_call(self, f: Any, args: list, kwargs: dict, node: ast.AST) -> Any:
        count = _array_inputs(f)
        if count:
            args = [self.as_array_operand(a, node) if i < count else a
                    for i, a in enumerate(args)]
        return super().numpy_call(f, args, kwargs, node)

    def as_array_operand(self, value: Any, node: ast.AST) -> Any:
        """``value`` as the array ``np.asarray(value)`` builds, when it is a list or tuple
        that carries a gradient (a literal, a list built at run time, a pytree argument)."""
        if isinstance(value, Tree) and value.kind in (list, tuple, "list", "tuple"):
            value = Pack(list(value.children.values()), is_list=True)
        if self.is_runtime_list(value):
            return self.join_list("stack", value, 0, node)
        if not isinstance(value, Pack) or not self.carries(value):
            return value
        items = [self.as_array_operand(v, node) for v in value.items]
        if any(isinstance(v, Tree) for v in items):
            raise self.error("srcgrad cannot use a dict inside a list given to a NumPy "
                             "function", node)
        return self.prim(np.stack, items, {"axis": 0}, "array", node)


def _array_inputs(f: Any) -> int:
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
