"""Jacobians and Hessians: ``jacfwd``, ``jacrev`` and ``hessian``, as JAX names them.

``jacfwd`` calls the compiled jvp once per element of the argument (one column each),
``jacrev`` the compiled vjp once per element of the result (one row each), and ``hessian``
is forward over reverse, computed as reverse over forward (the same matrix): for each
element ``i`` of the argument, the Jacobian of the directional derivative along ``eᵢ``,
whose source the compiler generates and then differentiates.  The Jacobian of a result of
shape ``out`` with respect to an argument of shape ``in`` has shape ``out + in``; pytrees
give pytrees (the result's structure, each leaf holding the argument's).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from srcgrad import pytree
from srcgrad.forward_api import Jvp, carries, is_grad_transform, transform_function

__all__ = ["Jacobian", "jacfwd", "jacrev", "hessian"]


def _basis(value: Any) -> Iterator[Any]:
    """Every unit tangent of ``value`` (a pytree): one for each element of each float leaf."""
    leaves, tree = pytree.flatten(value)
    zeros = [pytree.zero_like(v) if pytree.differentiable(v) else v for v in leaves]
    for k, leaf in enumerate(leaves):
        if not pytree.differentiable(leaf):
            continue
        for j in range(int(np.size(leaf))):
            unit = list(zeros)
            if isinstance(leaf, float):
                unit[k] = 1.0
            else:
                e = np.zeros_like(leaf)
                e.reshape(-1)[j] = 1
                unit[k] = e
            yield pytree.unflatten(tree, unit)


def _assemble(columns: list, inside: Any, outside: Any, inside_first: bool = False) -> Any:
    """The Jacobian from its columns (each one shaped as ``outside``, one per element of the
    pytree ``inside``): each leaf of ``outside`` holds ``inside``'s structure, each of those
    leaves of shape ``out_leaf + in_leaf`` (``in_leaf + out_leaf`` with ``inside_first``)."""
    out_leaves, out_tree = pytree.flatten(outside)
    in_leaves, in_tree = pytree.flatten(inside)
    flat = [pytree.flatten(c)[0] for c in columns]
    blocks = []
    for k, out_leaf in enumerate(out_leaves):
        per_input, start = [], 0
        for leaf in in_leaves:
            if not pytree.differentiable(leaf):
                per_input.append(None)
                continue
            n = int(np.size(leaf))
            cols = [np.asarray(col[k], dtype=np.result_type(out_leaf, leaf, np.float32))
                    for col in flat[start:start + n]]
            start += n
            stacked = np.stack(cols, axis=0 if inside_first else -1) if cols else np.zeros(
                np.shape(out_leaf) + (0,))
            shape = (np.shape(leaf) + np.shape(out_leaf)) if inside_first else (
                np.shape(out_leaf) + np.shape(leaf))
            block = stacked.reshape(shape)
            if isinstance(leaf, float) and isinstance(out_leaf, float):
                block = float(block)
            per_input.append(block)
        blocks.append(pytree.unflatten(in_tree, per_input))
    return pytree.unflatten(out_tree, blocks)


class Jacobian:
    """``jacfwd``/``jacrev``/``hessian`` of ``fun`` with respect to the argument(s) ``wrt``."""

    def __init__(self, fun: Callable, wrt: Any = 0, *, mode: str, backend: str = "numpy",
                 strict: bool = False) -> None:
        functools.update_wrapper(self, fun, updated=())
        if is_grad_transform(fun):                 # of a gradient: a function calling it
            fun = transform_function(fun)
        self.fun, self.mode, self.backend, self.strict = fun, mode, backend, strict
        self._single = not isinstance(wrt, (tuple, list))
        self.wrt = tuple(_position(fun, w) for w in ((wrt,) if self._single else wrt))
        self._transform: Any = None
        self._directional: Jvp | None = None
        if mode == "rev":
            from srcgrad.api import Transform
            self._transform = Transform(fun, "vjp", tuple(range(_count(fun))),
                                        backend=backend, strict=strict)
        elif mode == "hessian":
            self._directional = Jvp(fun, backend=backend, strict=strict, tangent_only=True)
        else:
            self._transform = Jvp(fun, backend=backend, strict=strict)
        self._rows: dict[Any, Jacobian] = {}

    @property
    def source(self) -> str | None:
        """The generated source the Jacobian runs (for ``hessian``: the reverse-mode code
        of the directional derivative, once it has been called)."""
        if self._rows:
            return next(reversed(self._rows.values())).source
        return getattr(self._transform or self._directional, "source", None)

    @property
    def graph(self) -> Any:
        if self._rows:
            return next(reversed(self._rows.values())).graph
        return getattr(self._transform or self._directional, "graph", None)

    @property
    def fallback_reason(self) -> str | None:
        return getattr(self._transform or self._directional, "fallback_reason", None)

    def __repr__(self) -> str:
        name = {"fwd": "jacfwd", "rev": "jacrev", "hessian": "hessian"}[self.mode]
        return f"<srcgrad.{name} of {getattr(self.fun, '__qualname__', self.fun)}>"

    def __call__(self, *args: Any) -> Any:
        out = [self._one(args, p) for p in self.wrt]
        return out[0] if self._single else tuple(out)

    def _one(self, args: tuple, p: int) -> Any:
        if not carries(args[p]):
            pytree.check_differentiable(args[p], f"argument {p}")
        if self.mode == "hessian":
            return self._hessian(args, p)
        if self.mode == "rev" and self._transform is not None:
            value, backward = self._transform(*args)
            rows = []
            for unit in _basis(value):
                rows.append(backward(unit)[p])
            return _assemble(rows, value, args[p], inside_first=True) if rows else \
                _assemble([], args[p], value)
        zeros = [pytree.zero_like(a) if carries(a) else a for a in args]
        value, columns = None, []
        for unit in _basis(args[p]):
            tangents = list(zeros)
            tangents[p] = unit
            value, column = self._transform(args, tangents)
            columns.append(column)
        if value is None:
            value = self.fun(*args)
        return _assemble(columns, args[p], value)

    def _hessian(self, args: tuple, p: int) -> Any:
        """Columns ``i``: the Jacobian (reverse mode) of the derivative along ``eᵢ``."""
        along = tuple(i for i, a in enumerate(args) if i == p)
        built = self._directional.compiled(along, {p: pytree.flatten(args[p])[1]}
                                           if not pytree.is_leaf(args[p]) else {})
        if built is None:
            return Jacobian(Jacobian(self.fun, p, mode="rev", backend=self.backend),
                            p, mode="fwd", backend=self.backend)(*args)
        directional = built.functions[built.name]
        rows = self._rows.get(id(directional))
        if rows is None:
            rows = self._rows[id(directional)] = Jacobian(
                directional, p, mode="rev", backend=self.backend, strict=self.strict)
        columns = [rows(*args, unit) for unit in _basis(args[p])]
        value = self.fun(*args)
        return _assemble(columns, args[p], _jacobian_shape(value, args[p]))


def _jacobian_shape(value: Any, inside: Any) -> Any:
    """A stand-in of the Jacobian's structure and shapes (what the Hessian's columns are)."""
    out_leaves, out_tree = pytree.flatten(value)
    in_leaves, in_tree = pytree.flatten(inside)
    blocks = [pytree.unflatten(in_tree, [np.zeros(np.shape(o) + np.shape(i)) for i in in_leaves])
              for o in out_leaves]
    return pytree.unflatten(out_tree, blocks)


def _count(fun: Callable) -> int:
    return len(inspect.signature(fun).parameters)


def _position(fun: Callable, w: Any) -> int:
    if isinstance(w, bool) or not isinstance(w, (int, str)):
        raise TypeError(f"wrt must be an argument position or name, not {w!r}")
    if isinstance(w, str):
        names = list(inspect.signature(fun).parameters)
        if w not in names:
            raise ValueError(f"{getattr(fun, '__qualname__', fun)} has no parameter {w!r}")
        return names.index(w)
    return w


def jacfwd(fun: Callable, wrt: Any = 0, *, backend: str = "numpy", strict: bool = False
           ) -> Jacobian:
    """The Jacobian of ``fun`` with respect to argument(s) ``wrt``, column by column."""
    return Jacobian(fun, wrt, mode="fwd", backend=backend, strict=strict)


def jacrev(fun: Callable, wrt: Any = 0, *, backend: str = "numpy", strict: bool = False
           ) -> Jacobian:
    """The Jacobian of ``fun`` with respect to argument(s) ``wrt``, row by row."""
    return Jacobian(fun, wrt, mode="rev", backend=backend, strict=strict)


def hessian(fun: Callable, wrt: Any = 0, *, backend: str = "numpy", strict: bool = False
            ) -> Jacobian:
    """The matrix of second derivatives of ``fun`` with respect to argument(s) ``wrt``."""
    return Jacobian(fun, wrt, mode="hessian", backend=backend, strict=strict)
