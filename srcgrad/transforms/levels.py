"""Levels of differentiation on the eager engine, kept apart (no perturbation confusion).

A transform that runs its function eagerly makes its own variables, even for values of an
outer level (a Tensor of an outer eager transform, or of the caller's own eager code): a
recorded copy, so that differentiating with respect to the copy follows only the paths
through the argument, while the outer level differentiates through the copy and through
closures that read its value.  While a function runs under an eager transform, every transform
it calls runs eagerly too (:func:`nested`): compiled code would take the outer level's values
as constants.  Results that an outer level differentiates stay recorded.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from typing import Any

import numpy as np

from srcgrad.runtime.eager import grad_mode
from srcgrad.runtime.eager.ndarray import Array, as_array_constant, as_array_leaf, private_copy
from srcgrad.runtime.eager.node import AccumulateGrad, next_seq
from srcgrad.runtime.eager.tensor import Tensor
from srcgrad.runtime.subclasses import subclass_error
from srcgrad.transforms import pytree
from srcgrad.transforms.eager_lists import stacking_list_operands

__all__ = ["nested", "running", "plain_value", "tangent", "forward_hook", "outer_level",
           "fresh", "leaf", "other", "hand_back", "copy_array", "recorded", "free_arrays",
           "eager_call", "graph_mark", "unless_outer", "holds_containers"]


_DEPTH: contextvars.ContextVar[int] = contextvars.ContextVar("srcgrad_eager_depth", default=0)
"""How many eager transforms are running their functions (in this thread)."""


def nested() -> bool:
    """Whether a function runs under an eager transform, which records it: a transform called
    now is differentiated by that one, so it runs on the eager engine too, keeping the graph
    (the compiled code would take the outer level's values, closures included, as constants)."""
    return _DEPTH.get() > 0


@contextlib.contextmanager
def running(fun: Any) -> Iterator[None]:
    """``fun`` runs recorded, one level deeper (see :func:`nested`)."""
    token = _DEPTH.set(_DEPTH.get() + 1)
    try:
        with grad_mode.enable_grad(), stacking_list_operands(fun):
            yield
    finally:
        _DEPTH.reset(token)


def plain_value(x: Any) -> Any:
    """``x`` with its Tensor leaves as their plain arrays."""
    flat, structure = pytree.flatten(x)
    if not any(isinstance(v, Tensor) for v in flat):
        return x
    return pytree.unflatten(structure, [v._data if isinstance(v, Tensor) else v for v in flat])


def tangent(t: Tensor) -> Any:
    """``t``'s tangent at an open dual level, or None."""
    if forward_hook() is None:
        return None
    from srcgrad.runtime.eager import forward_ad
    return forward_ad.tangent_of(t)


def forward_hook() -> Any:
    from srcgrad.runtime.eager import tensor
    return tensor._forward_hook


def outer_level(t: Any) -> bool:
    """Whether ``t`` belongs to an outer level: a Tensor recorded, or carrying a tangent."""
    return isinstance(t, Tensor) and (t._requires_grad or tangent(t) is not None)


def fresh(t: Tensor) -> Array:
    """This level's own variable equal to the outer level's ``t``: a recorded copy of it.
    Differentiating with respect to the copy follows only the paths through the argument
    (not through a closure that reads ``t``), while the outer level still differentiates
    through the copy: the levels' perturbations stay apart."""
    with grad_mode.enable_grad():
        return private_copy(t)


def leaf(value: Any, connect: bool) -> Any:
    """The variable a differentiated leaf becomes: a fresh leaf Array of its value, or, for a
    value of an outer level (``connect``), a recorded copy of it (:func:`fresh`).  A Tensor
    that requires no grad is differentiated all the same, by its value."""
    if isinstance(value, Tensor):
        if connect and outer_level(value):
            return fresh(value)
        value = value._data
    return as_array_leaf(value) if pytree.differentiable(value) else value


def other(value: Any, connect: bool) -> Any:
    """A leaf not differentiated here: a private copy (of an outer level's Tensor, a recorded
    one, so that the outer level differentiates through it; of any other, its array).  A
    float array is an Array without grad (``data.dot(w)`` and writes of Arrays into it are
    then recorded, where NumPy's own ndarray would drop the gradient)."""
    if isinstance(value, Tensor):
        if connect and outer_level(value):
            return fresh(value)
        value = value._data
    value = copy_array(value)
    if type(value) is np.ndarray and value.dtype.kind == "f":
        return as_array_constant(value)
    return value


def hand_back(x: Any, inside: bool) -> Any:
    """A recorded result: Arrays (NumPy semantics) for the function of an outer eager
    transform, Tensors for the caller's own eager code."""
    flat, structure = pytree.flatten(x)
    for v in flat:
        if isinstance(v, Tensor):
            v.__class__ = Array if inside else Tensor
    return pytree.unflatten(structure, flat)


def copy_array(value: Any) -> Any:
    return value.copy() if isinstance(value, np.ndarray) else value


def recorded(values: list, outer: bool) -> tuple[bool, bool, bool]:
    """``(inside, connect, higher)`` for a transform called on ``values``: whether it runs
    under an eager transform, whether grad is recorded (values of an outer level stay
    connected), and whether its results must stay recorded (an outer level, a Tensor of
    the caller's that requires grad, or ``outer``: a function reading such Tensors)."""
    inside = nested()
    connect = grad_mode.is_grad_enabled()
    higher = connect and (inside or outer or any(
        outer_level(v) for value in values for v in pytree.flatten(value)[0]))
    return inside, connect, higher


def free_arrays(snapshot: Any) -> tuple[bool, str | None]:
    """What a function's free values (globals, closure cells, defaults, of the helpers it
    reaches) hold: whether a Tensor (the compiled code would take it as a constant, cut from
    its graph: such a function runs eagerly), and the refusal of an ndarray subclass among
    them (None: none), as an argument's would be."""
    values = _free_values(snapshot) + [getattr(owner, attr, None)   # as they are now
                                       for owner, attr, _ in snapshot.arrays]
    tensors, refusal = False, None
    for value in values:
        if not isinstance(value, (Tensor, np.ndarray, list, tuple, dict)):
            continue
        for item in pytree.flatten(value)[0]:
            tensors = tensors or isinstance(item, Tensor)
            error = refusal is None and subclass_error(item, "a value the function reads")
            refusal = str(error) if error else refusal
    return tensors, refusal


def holds_containers(snapshot: Any) -> bool:
    """Whether a function's free values include a list, tuple or dict: its contents may
    change without rebinding a name (a Tensor or an ndarray subclass put in later), so
    :func:`free_arrays` reads them again at every call."""
    return any(isinstance(v, (list, tuple, dict)) for v in _free_values(snapshot))


def _free_values(snapshot: Any) -> list:
    """The values of a function's closure cells, globals and defaults (its helpers' too)."""
    values = [v for _, v, _ in snapshot.cells] + [v for _, _, v in snapshot.names]
    for _, defaults, _, kw in snapshot.defaults:
        values += [*(defaults or ()), *(kw or {}).values()]
    return values


def eager_call(snapshot: Any, values: list, split: int | None = None) -> tuple[list, bool]:
    """For a forward-mode transform or a Jacobian: the values with plain arrays (ndarray
    subclasses refused, as :func:`free_arrays` refuses them in the function's free values),
    and whether the call runs on the eager engine, keeping the graph: under an eager
    transform, with Tensors of an outer level among the values, or of a function that reads
    Tensors.  Other Tensors are taken as their arrays (the results are plain).  ``split``:
    the values are that many primals, then their tangents (named so in errors)."""
    reads, refusal = free_arrays(snapshot)
    if refusal is not None:
        raise TypeError(refusal)
    names = [f"the argument {i}" for i in range(len(values))] if split is None else \
        [f"primal {i}" for i in range(split)] + [f"tangent {i}" for i in range(len(values) - split)]
    values = [pytree.plain_leaves(v, name) for v, name in zip(values, names)]
    leaves = [item for v in values for item in pytree.flatten(v)[0]]
    if reads or nested() or grad_mode.is_grad_enabled() and any(map(outer_level, leaves)):
        return values, True
    if any(isinstance(item, Tensor) for item in leaves):
        values = [plain_value(v) for v in values]
    return values, False


def graph_mark() -> int:
    """A mark in the order the graph's nodes are made: those made before it belong to the
    levels outside the transform that takes it (see :func:`unless_outer`)."""
    return next_seq()


def unless_outer(x: Any, mark: int, own: list) -> Any:
    """``x`` with each recorded leaf whose graph reaches no outer level (no node made before
    ``mark``, no leaf but the transform's ``own``) as its plain array: nothing outside can
    differentiate it, and the caller gets what NumPy would give."""
    own_ids = {id(t) for t in own}

    def reaches_outer(t: Tensor) -> bool:
        if t._grad_fn is None:
            return t._requires_grad and id(t) not in own_ids
        stack, seen = [t._grad_fn], set()
        while stack:
            node = stack.pop()
            if node is None or id(node) in seen:
                continue
            seen.add(id(node))
            if node._seq < mark or (isinstance(node, AccumulateGrad)
                                    and id(node.variable) not in own_ids):
                return True
            stack.extend(child for child, _ in node.next_functions)
        return False

    flat, structure = pytree.flatten(x)
    return pytree.unflatten(structure, [
        v._data if isinstance(v, Tensor) and not reaches_outer(v) else v for v in flat])
