"""The arguments of a forward-mode call: primals and tangents checked as JAX checks them, the
tangent an int or other data leaf carries (zero), defaults filled in, private copies of what
the function writes into.  Shared by :mod:`srcgrad.transforms.jvp` and
:mod:`srcgrad.transforms.jacobians`.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from srcgrad.transforms import pytree

__all__ = ["carries", "sequence", "with_defaults", "tangent_of_data", "data_zero",
           "check_tangents", "private"]


def carries(value: Any) -> bool:
    """Whether an argument carries a tangent: a real float, an array of them, or a pytree
    with such a leaf."""
    leaves, _ = pytree.flatten(value)
    return any(pytree.differentiable(v) for v in leaves)


def sequence(value: Any, what: str) -> tuple:
    if not isinstance(value, (tuple, list)):
        raise TypeError(f"jvp {what} must be a tuple or list with one entry per argument, "
                        f"not {type(value).__name__}")
    return tuple(value)


def with_defaults(fun: Callable, args: tuple) -> tuple:
    """The arguments with the defaults of the positional parameters not given, as the call
    ``fun(*args)`` binds them (unchanged when a parameter without a default is missing)."""
    try:
        params = list(inspect.signature(fun).parameters.values())[len(args):]
    except (TypeError, ValueError):
        return args
    if not params or any(p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) or
                         p.default is inspect.Parameter.empty for p in params):
        return args
    return args + tuple(p.default for p in params)


def tangent_of_data(value: Any) -> Any:
    """The tangent an int, bool or other data leaf carries: zero (JAX's float0), whatever
    the caller passed for it."""
    if pytree.differentiable(value):
        return pytree.zero_like(value)
    if isinstance(value, np.ndarray) and value.dtype.kind in "biu":
        return np.zeros(value.shape)
    return 0.0 if isinstance(value, (bool, int, np.integer, np.bool_)) else value


def data_zero(primal: Any, tangent: Any) -> Any:
    """``tangent`` with a zero for every leaf of ``primal`` that is not real floating point."""
    p_leaves, tree = pytree.flatten(primal)
    t_leaves = pytree.flatten(tangent)[0]
    return pytree.unflatten(tree, [t if pytree.differentiable(p) else tangent_of_data(p)
                                   for p, t in zip(p_leaves, t_leaves)])


def check_tangents(primals: tuple, tangents: tuple) -> None:
    """As JAX: each float leaf's tangent has the primal's shape (and no structure else)."""
    for k, (p, t) in enumerate(zip(primals, tangents)):
        if t is None:                        # a default: no tangent
            continue
        p_leaves, p_tree = pytree.flatten(p)
        t_leaves, t_tree = pytree.flatten(t)
        if repr(p_tree) != repr(t_tree):
            raise TypeError(f"jvp tangent {k} does not have the structure of its primal")
        for a, b in zip(p_leaves, t_leaves):
            if pytree.differentiable(a) and np.shape(a) != np.shape(b):
                raise ValueError(f"jvp tangent {k} has shape {np.shape(b)}, but its primal "
                                 f"has shape {np.shape(a)}")
            if _integral(a) and b is not None and np.any(np.asarray(b) != 0):
                raise TypeError(f"jvp tangent {k} moves an integer primal ({a!r}); an int "
                                "or bool has no tangent but zero (JAX's float0)")


def _integral(value: Any) -> bool:
    """An int or bool leaf (a number or an array of them): data, with no tangent."""
    if isinstance(value, (bool, int, np.integer, np.bool_)):
        return True
    return isinstance(value, np.ndarray) and value.dtype.kind in "biu"


def private(values: tuple, ir: Any) -> tuple:
    """The arguments, copied where the function writes into them in place."""
    if not ir.mutates:
        return values
    return tuple(copy.deepcopy(v) if p in ir.mutates else v for p, v in zip(ir.params, values))
