"""Jacobians and Hessians: ``jacfwd``, ``jacrev`` and ``hessian``, as JAX names them.

``jacfwd`` calls the compiled jvp once per element of the argument (one column each),
``jacrev`` the compiled vjp once per element of the result (one row each), and ``hessian``
is forward over reverse, computed as reverse over forward (the same matrix): for each
element ``i`` of the argument, the Jacobian of the directional derivative along ``eᵢ``,
whose source the compiler generates and then differentiates.  The Jacobian of a result of
shape ``out`` with respect to an argument of shape ``in`` has shape ``out + in``; pytrees
give pytrees (the result's structure, each leaf holding the argument's).  The function's
prints and logging calls come from the first column only (:mod:`srcgrad.runtime.quiet`): one
call of a transform shows them once, as one call of the function does.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from srcgrad.codegen import DEFAULT_BACKEND
from srcgrad.errors import CompileError
from srcgrad.frontend.transform_wrappers import is_grad_transform, transform_function
from srcgrad.runtime.quiet import muted
from srcgrad.runtime.rules import streams
from srcgrad.transforms import pytree
from srcgrad.transforms.base import BaseTransform
from srcgrad.transforms.cache import TRANSFORMS
from srcgrad.transforms.callable_args import replaced_defaults
from srcgrad.transforms.jvp import Jvp
from srcgrad.transforms.levels import eager_call
from srcgrad.transforms.tangent_args import carries, tangent_of_data, with_defaults

__all__ = ["Jacobian", "jacfwd", "jacrev", "hessian"]


def _basis(value: Any) -> Iterator[Any]:
    """Every unit tangent of ``value`` (a pytree): one for each element of each float leaf."""
    leaves, tree = pytree.flatten(value)
    zeros = [tangent_of_data(v) for v in leaves]       # an int leaf's tangent: zero
    for k, leaf in enumerate(leaves):
        if not pytree.differentiable(leaf):
            continue
        for j in range(int(np.size(leaf))):
            unit = list(zeros)
            if isinstance(leaf, float):
                unit[k] = 1.0
            else:
                e = np.zeros(np.shape(leaf), dtype=leaf.dtype)     # C order, as the result's
                e.reshape(-1)[j] = 1
                unit[k] = e
            yield pytree.unflatten(tree, unit)


def _blocks(outside: Any, inside: Any, block: Any) -> Any:
    """The Jacobian's pytree: ``outside``'s structure (the result's), each leaf holding
    ``inside``'s (the argument's), each of those ``block(k, l)`` for result leaf ``k`` and
    argument leaf ``l`` (None for a leaf that is not differentiable)."""
    out_leaves, out_tree = pytree.flatten(outside)
    in_leaves, in_tree = pytree.flatten(inside)
    return pytree.unflatten(out_tree, [pytree.unflatten(in_tree, [
        block(k, l) if pytree.differentiable(leaf) else None
        for l, leaf in enumerate(in_leaves)]) for k in range(len(out_leaves))])


def _shaped(parts: list, axis: int, out_leaf: Any, in_leaf: Any) -> Any:
    """One block of shape ``out + in`` from its columns (``axis=-1``) or rows (``0``)."""
    dtype = np.result_type(np.asarray(out_leaf).dtype, np.asarray(in_leaf).dtype, np.float32)
    shape = np.shape(out_leaf) + np.shape(in_leaf)
    if not parts:
        return np.zeros(shape, dtype)
    block = np.stack([np.asarray(p, dtype=dtype) for p in parts], axis=axis).reshape(shape)
    return float(block) if isinstance(out_leaf, float) and isinstance(in_leaf, float) else block


def _starts(leaves: list) -> list[int]:
    """Where each leaf's unit tangents start in the order of :func:`_basis`."""
    sizes = [int(np.size(leaf)) if pytree.differentiable(leaf) else 0 for leaf in leaves]
    return [sum(sizes[:k]) for k in range(len(sizes))]


def _from_columns(columns: list, value: Any, arg: Any) -> Any:
    """The Jacobian from the tangents of ``value`` along each unit tangent of ``arg``."""
    flat = [pytree.flatten(c)[0] for c in columns]
    out_leaves, in_leaves = pytree.flatten(value)[0], pytree.flatten(arg)[0]
    starts = _starts(in_leaves)

    def block(k: int, l: int) -> Any:
        n = int(np.size(in_leaves[l]))
        return _shaped([col[k] for col in flat[starts[l]:starts[l] + n]], -1,
                       out_leaves[k], in_leaves[l])
    return _blocks(value, arg, block)


def _from_rows(rows: list, value: Any, arg: Any) -> Any:
    """The Jacobian from the gradients (shaped as ``arg``) of each unit cotangent of
    ``value``, in the order of :func:`_basis`."""
    flat = [pytree.flatten(r)[0] for r in rows]
    out_leaves, in_leaves = pytree.flatten(value)[0], pytree.flatten(arg)[0]
    starts = _starts(out_leaves)

    def block(k: int, l: int) -> Any:
        n = int(np.size(out_leaves[k])) if pytree.differentiable(out_leaves[k]) else 0
        parts = [row[l] if row[l] is not None else np.zeros(np.shape(in_leaves[l]))
                 for row in flat[starts[k]:starts[k] + n]]
        return _shaped(parts, 0, out_leaves[k], in_leaves[l])
    return _blocks(value, arg, block)


class Jacobian(BaseTransform):
    """``jacfwd``/``jacrev``/``hessian`` of ``fun`` with respect to the argument(s) ``wrt``
    (its ``fallback_reason`` is that of the transform it calls)."""

    def __init__(self, fun: Callable, wrt: Any = 0, *, mode: str,
                 backend: str = DEFAULT_BACKEND, strict: bool = False) -> None:
        super().__init__(fun, backend=backend, strict=strict)
        if is_grad_transform(fun) and mode != "hessian":
            mode = "fwd"                           # of a gradient: its jvps are hvps
        elif is_grad_transform(fun):               # third order: of a function calling it
            fun = transform_function(fun)
        self._inner: int | None = None            # of a Jacobian: its argument
        if isinstance(fun, Jacobian):
            if fun.mode == "hessian" or not fun._single:
                raise CompileError(f"{self._kind(mode)} of {fun!r}: derivatives of third order "
                                   "are compiled by nesting grad and jvp, not of a Jacobian")
            self._inner, fun, mode = fun.wrt[0], fun.fun, "hessian"
        self.fun, self.mode = fun, mode
        self._single = not isinstance(wrt, (tuple, list))
        self.wrt = tuple(_position(fun, w) for w in ((wrt,) if self._single else wrt))
        self._transform: Any = None
        self._directional: Jvp | None = None
        if mode == "rev":
            from srcgrad.transforms.grad import Transform
            self._transform = Transform(fun, "vjp", self.wrt, backend=backend, strict=strict)
        elif mode == "hessian":
            self._directional = Jvp(fun, backend=backend, strict=strict, tangent_only=True)
        else:
            self._transform = Jvp(fun, backend=backend, strict=strict)
        self._rows: dict[Any, Any] = {}
        self._used: str | None = None              # the source the last Hessian ran
        if mode == "hessian" and self._single:     # ahead of time, for array arguments
            try:
                p = self.wrt[0]
                self._rows_for(p, p if self._inner is None else self._inner, {}, quiet=True)
                if self._inner is None:
                    self._loop(p)
            except CompileError:
                self._rows.clear()                 # refused again at the first call

    def _shown(self) -> Any:
        rows = [r for r in self._rows.values() if isinstance(r, Jacobian)]
        return rows[-1] if rows else self._transform or self._directional

    @property
    def source(self) -> str | None:
        """The generated source the Jacobian runs (for ``hessian``: the reverse-mode code
        of the directional derivative, which holds the forward-mode code as its primal, and
        the loop over the unit tangents)."""
        if self._used is not None:                 # what the last call ran
            return self._used
        loops = [r for k, r in self._rows.items() if k[0] == "loop" and r is not None]
        return loops[-1][1] if loops else getattr(self._shown(), "source", None)

    @property
    def graph(self) -> Any:
        return getattr(self._shown(), "graph", None)

    @property
    def fallback_reason(self) -> str | None:
        return getattr(self._transform or self._directional, "fallback_reason", None)

    @staticmethod
    def _kind(mode: str) -> str:
        return {"fwd": "jacfwd", "rev": "jacrev", "hessian": "hessian"}[mode]

    def __repr__(self) -> str:
        return f"<srcgrad.{self._kind(self.mode)} of {getattr(self.fun, '__qualname__', self.fun)}>"

    def __call__(self, *args: Any) -> Any:
        args = with_defaults(self.fun, args)
        with streams.watching() as watch:     # every pass of fun sees the same draws
            watch.include(streams.candidates(self.fun, args))
            return self._call(args)

    def _call(self, args: tuple) -> Any:
        directional = self._directional
        if directional is not None and directional._snapshot.changed() is not None:
            directional._built.clear()              # a global of fun rebound: build again
            self._rows.clear()
            self._used = None
        snapshot = (self._transform or directional)._snapshot
        values, eager = eager_call(snapshot, list(args))
        replaced = replaced_defaults(self.fun, values)
        if replaced and not eager:
            self.fall_back(f"{', '.join(replaced)} is given another function than the default "
                           "it is compiled for", arguments=True)
        if eager or replaced:         # under an eager transform, or Tensors: keep the graph
            from srcgrad.transforms.fallback import eager_jacobians
            return eager_jacobians(self, tuple(values))
        args = tuple(values)
        if self.mode == "hessian" and self._inner is None and not self._single:
            return tuple(tuple(self._hessian(args, q, i) for q in self.wrt)   # as JAX nests
                         for i in self.wrt)
        out = [self._one(args, p) for p in self.wrt]
        return out[0] if self._single else tuple(out)

    def _one(self, args: tuple, p: int) -> Any:
        if not carries(args[p]):
            pytree.check_differentiable(args[p], f"argument {p}")
        if self.mode == "hessian":
            return self._hessian(args, p, p if self._inner is None else self._inner)
        if self.mode == "rev":
            value, backward = self._transform(*args)
            return _from_rows([backward(unit)[p] for unit in _basis(value)], value, args[p])
        zeros = [_zeros(a) for a in args]
        value, columns = None, []
        with contextlib.ExitStack() as after_first:
            for unit in _basis(args[p]):
                tangents = list(zeros)
                tangents[p] = unit
                streams.rewind()
                value, column = self._transform(args, tangents)
                if not columns:                  # the prints and logging: one pass's
                    after_first.enter_context(muted())
                columns.append(column)
        if value is None:
            streams.rewind()
            value = self.fun(*streams.kept(args))
        return _from_columns(columns, value, args[p])

    def _rows_for(self, p: int, inner: int, trees: dict, quiet: bool = False
                  ) -> Jacobian | None:
        """The reverse-mode Jacobian, with respect to argument ``inner``, of the derivative
        along argument ``p`` (one for each pytree structure), or None when the derivative
        falls back to the eager engine."""
        key = (p, inner, repr(sorted(trees.items())))
        if key not in self._rows:
            built = self._directional.compiled((p,), trees, quiet=quiet)
            self._rows[key] = None if built is None else Jacobian(   # strict: a failure
                built.functions[built.name], inner, mode="rev", backend=self.backend,
                strict=True)                     # falls back to the eager Hessian of fun
        return self._rows[key]

    def _loop(self, p: int) -> Any:
        """The Hessian of a scalar function with respect to the array or float argument
        ``p`` as one generated function (:mod:`srcgrad.transforms.hessian_loop`), or None."""
        key = ("loop", p)
        if key not in self._rows:
            from srcgrad.transforms.hessian_loop import hessian_function
            built = self._directional.compiled((p,), {})
            base = getattr(self.fun, "__name__", "f")
            self._rows[key] = None if built is None else hessian_function(
                built.functions[built.name], p, base if base.isidentifier() else "function",
                self.backend, True)
        return self._rows[key]

    def _hessian(self, args: tuple, p: int, inner: int) -> Any:
        """The compiled Hessian; when it is refused or fails (``strict=False``), the eager
        engine's Hessian of ``fun`` itself, with a FallbackWarning (never the eager engine on
        the generated derivative, which it is not written for)."""
        key = ("eager", p, inner)
        if key not in self._rows:
            try:
                return self._compiled_hessian(args, p, inner)
            except CompileError as exc:
                if inner != p:
                    raise
                self.fall_back(exc, of=f"the hessian of "
                               f"{getattr(self.fun, '__qualname__', self.fun)}")
                self._rows[key] = str(exc)
            except Exception as exc:         # the generated derivative failed, or NumPy did
                from srcgrad.transforms.fallback import plain_error
                with muted():                # its prints came with the compiled run
                    plain = plain_error(self.fun, list(args), None) if inner == p else exc
                if plain is not None:
                    raise
                reason = (f"internal error: the compiled Hessian of {self._name} raised "
                          f"{type(exc).__name__}: {exc} (please report it)")
                self.fall_back(reason, of=f"the hessian of {self._name}", cause=exc)
                self._rows[key] = reason
        from srcgrad.transforms.fallback import eager_hessian
        return eager_hessian(self.fun, args, p)

    def _compiled_hessian(self, args: tuple, p: int, inner: int) -> Any:
        """Columns ``i``: the Jacobian (reverse mode, with respect to argument ``inner``) of
        the derivative along ``eᵢ`` of argument ``p``."""
        x = args[p]
        if inner == p and (type(x) is float or type(x) is np.ndarray):
            loop = self._loop(p)
            watch = streams.current()
            drawn = watch.draws if watch is not None else 0
            before = watch.states() if watch is not None else []
            if loop is not None:
                try:
                    out = loop[0](*args)
                    if watch is not None and (watch.draws != drawn or     # a pass a column:
                                              streams.Watch.moved(before)):
                        raise _Drew                                   # each its own draws
                except Exception:                   # NumPy's own error, a vector result:
                    streams.rewind()                # (draws: the columns, each rewound)
                    self._rows[("loop", p)] = None  # the general path (a safety net) answers
                    with muted():                   # (the loop's first column printed)
                        return self._compiled_hessian(args, p, inner)
                else:
                    self._used = loop[1]
                    return float(out) if type(x) is float else out
        rows = self._rows_for(p, inner, {p: pytree.flatten(args[p])[1]}
                              if not pytree.is_leaf(args[p]) else {})
        if rows is None:                     # the directional derivative fell back: eager
            if inner != p:
                raise CompileError(f"{self!r} fell back: {self.fallback_reason}")
            from srcgrad.transforms.fallback import eager_hessian
            return eager_hessian(self.fun, args, p)
        columns = []
        with contextlib.ExitStack() as after_first:
            for unit in _basis(args[p]):
                streams.rewind()                 # each column draws as the function does
                columns.append(rows(*args, unit))
                if len(columns) == 1:            # the prints and logging: one pass's
                    after_first.enter_context(muted())
            streams.rewind()
            value = self.fun(*streams.kept(args))     # never the caller's arrays
        self._used = rows.source
        return _from_columns(columns, _jacobian_shape(value, args[inner]), args[p])


class _Drew(Exception):
    """The Hessian's loop drew random numbers: one pass a column, each drawing anew."""


def _jacobian_shape(value: Any, inside: Any) -> Any:
    """A stand-in of the Jacobian's structure and shapes (what the Hessian's columns are)."""
    out_leaves, out_tree = pytree.flatten(value)
    in_leaves, in_tree = pytree.flatten(inside)
    blocks = [pytree.unflatten(in_tree, [np.zeros(np.shape(o) + np.shape(i), np.result_type(
        np.asarray(o).dtype, np.asarray(i).dtype, np.float32)) for i in in_leaves])
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


def jacfwd(fun: Callable, wrt: Any = 0, *, backend: str = DEFAULT_BACKEND,
           strict: bool = False) -> Jacobian:
    """The Jacobian of ``fun`` with respect to argument(s) ``wrt``, column by column."""
    return _made(fun, wrt, "fwd", backend, strict)


def jacrev(fun: Callable, wrt: Any = 0, *, backend: str = DEFAULT_BACKEND,
           strict: bool = False) -> Jacobian:
    """The Jacobian of ``fun`` with respect to argument(s) ``wrt``, row by row."""
    return _made(fun, wrt, "rev", backend, strict)


def hessian(fun: Callable, wrt: Any = 0, *, backend: str = DEFAULT_BACKEND,
            strict: bool = False) -> Jacobian:
    """The matrix of second derivatives of ``fun`` with respect to argument(s) ``wrt``."""
    return _made(fun, wrt, "hessian", backend, strict)


def _made(fun: Callable, wrt: Any, mode: str, backend: str, strict: bool) -> Jacobian:
    key = tuple(wrt) if isinstance(wrt, list) else wrt
    return TRANSFORMS.get(fun, (mode, key, backend, strict), lambda: Jacobian(
        fun, wrt, mode=mode, backend=backend, strict=strict))


def _zeros(value: Any) -> Any:
    """A zero tangent of every leaf of ``value`` (an int's is zero too, as JAX's float0)."""
    leaves, tree = pytree.flatten(value)
    return pytree.unflatten(tree, [tangent_of_data(v) for v in leaves])

