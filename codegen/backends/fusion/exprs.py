"""Generated expressions read as region expressions, with their shapes and dtypes.

The fusion pass (:mod:`srcgrad.codegen.backends.fusion.partition`) asks of each expression of a
statement: is
it elementwise, built only from values whose shape and dtype are known, and what shape and
dtype does NumPy give it?  :class:`Translator` answers with a :class:`Typed` expression, or
None.  Shapes broadcast as NumPy's do; dtypes are NumPy's own, found by applying the very
ufunc to one-element stand-ins of the operands' kinds (a Python number stays a Python number,
weakly typed as NEP 50 says), so no promotion table is restated here.

Only float64 and bool values fuse (and Python numbers): a float32, integer or complex
intermediate makes the expression None, and its statement stays NumPy's.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from srcgrad.codegen.backends.fusion.regions import Apply, Expr, Lit, Ref
from srcgrad.runtime.rules.core import unreduce
from srcgrad.runtime.rules.operators import OPERATORS, POWERS
from srcgrad.runtime.rules.primitives import unbroadcast

__all__ = ["Typed", "Translator", "FUSED_DTYPES", "Known", "applications", "broadcast",
           "reduction_axes", "refs", "renamed", "fused_operator"]

FUSED_DTYPES = (np.dtype(np.float64), np.dtype(np.bool_))
"""The dtypes of the arrays (and intermediates) a region may hold."""

_FILLS = {np.zeros: 0.0, np.ones: 1.0}
_LIKE = {np.zeros_like: 0, np.ones_like: 1, np.full_like: None}
_UNBROADCAST, _UNREDUCE = unbroadcast.__name__, unreduce.fn.__name__
"""The generated code's helpers, by the names it calls them by."""

Known = Callable[[str], "tuple[tuple[int, ...], np.dtype, bool] | None"]
"""A name's (shape, dtype, is a Python number), or None where it is not known."""


@dataclass(frozen=True)
class Typed:
    """A region expression and what NumPy would make of it: ``shape``, ``dtype``,
    ``python`` (a Python number, weakly typed), and ``view``: NumPy's value would be an
    array the code already has, or a view of one (``a = b``, ``np.broadcast_to(b, s)``),
    which a region, making a new array, would not alias."""

    expr: Expr
    shape: tuple[int, ...]
    dtype: np.dtype
    python: bool = False
    view: bool = False

    def stand_in(self) -> Any:
        """A one-element value of this kind, for NumPy to type an operation on."""
        if self.python:
            return self.expr.value if isinstance(self.expr, Lit) else self.dtype.type(1).item()
        return np.ones(1, self.dtype)


def broadcast(*shapes: tuple[int, ...]) -> tuple[int, ...] | None:
    """The shape NumPy broadcasts ``shapes`` to, or None where they do not broadcast."""
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        return None


class Translator:
    """Reads the expressions of a function whose array module is bound to ``alias``.

    ``supports``: which functions the backend can spell in a kernel (all where None);
    ``local_names``: the function's own variables (which hide the module's helpers)."""

    def __init__(self, alias: str = "np",
                 supports: Callable[[Callable], bool] | None = None,
                 local_names: frozenset[str] = frozenset()) -> None:
        self.alias = alias
        self.supports = supports
        self.local_names = local_names      # not the module's helpers, where they clash

    def expr(self, node: ast.expr, known: Known) -> Typed | None:
        """``node`` as a typed region expression, or None where it is not elementwise over
        known values (or NumPy would refuse it)."""
        if isinstance(node, ast.Constant):
            return _literal(node.value)
        if isinstance(node, ast.Name):
            fact = known(node.id)
            if fact is None:
                return None
            shape, dtype, python = fact
            return Typed(Ref(node.id), shape, dtype, python, view=not python)
        if isinstance(node, ast.UnaryOp) and (func := fused_operator(node.op)) is not None:
            if isinstance(node.operand, ast.Constant) and isinstance(node.op, ast.USub):
                value = node.operand.value
                return _literal(-value) if type(value) in (int, float) else None
            return self._apply(func, [node.operand], known, operator=True)
        if isinstance(node, ast.BinOp) and (root := _root(node)) is not None:
            return self._root(root, node.left, known)
        if isinstance(node, ast.BinOp) and (func := fused_operator(node.op)) is not None:
            return self._apply(func, [node.left, node.right], known, operator=True)
        if isinstance(node, ast.Compare) and len(node.ops) == 1 \
                and (func := fused_operator(node.ops[0])) is not None:
            return self._apply(func, [node.left, node.comparators[0]], known, operator=True)
        if isinstance(node, ast.Call):
            return self._call(node, known)
        return None

    def numpy_function(self, node: ast.expr) -> str | None:
        """``f`` for ``np.f`` (the module's alias), else None."""
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id == self.alias):
            return node.attr
        return None

    def numpy_object(self, node: ast.expr) -> Any:
        """The NumPy function ``np.f`` names (the module's alias), else None."""
        name = self.numpy_function(node)
        func = None if name is None else getattr(np, name, None)
        return func if callable(func) else None         # np.typecodes (a dict): not hashable

    def _call(self, node: ast.Call, known: Known) -> Typed | None:
        func = self.numpy_object(node.func)
        if func is None:
            if isinstance(node.func, ast.Name) and node.func.id in (_UNBROADCAST, _UNREDUCE) \
                    and node.func.id not in self.local_names:
                return self._helper(node, known)
            return None
        args = node.args
        if func is np.broadcast_to and len(args) == 2 and not node.keywords:
            return self._spread(args[0], self.shape(args[1], known), known)
        if node.keywords:
            return None                   # out=, where=, dtype=: NumPy's to run
        if func is np.where and len(args) == 3:
            return self._apply(np.where, args, known)
        if func in _FILLS and len(args) == 1:
            return self._fill(_literal(_FILLS[func]), self.shape(args[0], known))
        if func is np.full and len(args) == 2:
            return self._fill(self.expr(args[1], known), self.shape(args[0], known))
        if func in _LIKE and len(args) == (1 if _LIKE[func] is not None else 2):
            return self._like(args, _LIKE[func], known)
        if (isinstance(func, np.ufunc) and func.nout == 1 and func.signature is None
                and func.nin == len(args)):
            return self._apply(func, args, known)
        return None

    def _root(self, func: Callable, base: ast.expr, known: Known) -> Typed | None:
        """``base ** 0.5``: NumPy computes an array's as ``np.sqrt`` (``(-0.0) ** 0.5`` is
        -0.0, ``(-inf) ** 0.5`` nan), a scalar's as ``pow`` (0.0 and inf).  A value of shape
        ``()`` may be either (a 0-d array, a NumPy scalar): it stays NumPy's."""
        typed = self.expr(base, known)
        if typed is None or typed.python or not typed.shape:
            return None
        return self._apply(func, [base], known)

    def _apply(self, func: Callable, nodes: list[ast.expr], known: Known,
               operator: bool = False) -> Typed | None:
        """``func`` applied elementwise; an operator between Python numbers is Python's
        arithmetic (ZeroDivisionError, not inf), which a region does not do."""
        if self.supports is not None and not self.supports(func):
            return None
        args = [self.expr(n, known) for n in nodes]
        if any(a is None for a in args):
            return None
        if operator and all(a.python for a in args):
            return None
        shape = broadcast(*(a.shape for a in args))
        if shape is None:
            return None
        try:
            out = func(*(a.stand_in() for a in args))
        except Exception:                    # NumPy refuses these operands
            return None
        dtype = np.asarray(out).dtype
        if dtype not in FUSED_DTYPES:
            return None
        return Typed(Apply(func, tuple(a.expr for a in args), dtype), shape, dtype)

    def _fill(self, value: Typed | None, shape: tuple[int, ...] | None) -> Typed | None:
        """``np.full(shape, value)``: the value, spread over ``shape`` (its dtype NumPy's
        for the value alone)."""
        if value is None or shape is None or value.shape != ():
            return None
        dtype = np.asarray(value.stand_in()).dtype
        if dtype not in FUSED_DTYPES:
            return None
        return Typed(value.expr, shape, dtype)

    def _like(self, args: list[ast.expr], value: int | None, known: Known) -> Typed | None:
        """``np.zeros_like(a)``, ``np.ones_like(a)`` (``value`` 0 or 1), ``np.full_like(a,
        c)``: a constant of ``a``'s shape and dtype (``c`` converted to it)."""
        like = self.expr(args[0], known)
        if like is None or like.python or like.dtype not in FUSED_DTYPES:
            return None
        fill = args[1] if value is None else ast.Constant(value)
        if not isinstance(fill, ast.Constant) or type(fill.value) not in (bool, int, float):
            return None
        return Typed(Lit(like.dtype.type(fill.value).item()), like.shape, like.dtype)

    def _spread(self, node: ast.expr, shape: tuple[int, ...] | None,
                known: Known) -> Typed | None:
        """``node``'s value broadcast to ``shape`` (a strongly typed array, as
        ``np.broadcast_to`` and ``np.full_like`` give)."""
        value = self.expr(node, known)
        if value is None or shape is None or broadcast(value.shape, shape) != shape:
            return None
        dtype = np.asarray(value.stand_in()).dtype
        if dtype not in FUSED_DTYPES:
            return None
        return Typed(value.expr, shape, dtype, view=value.view)

    def _helper(self, node: ast.Call, known: Known) -> Typed | None:
        """The generated code's ``unbroadcast(x, shape)`` where ``x`` has that shape (it is
        ``x``), and ``unreduce(g, shape=...)`` where it is a broadcast of ``g``."""
        keywords = {k.arg: k.value for k in node.keywords}
        if node.func.id == _UNBROADCAST:
            if len(node.args) != 2 or keywords:
                return None
            value = self.expr(node.args[0], known)
            shape = self.shape(node.args[1], known)
            return value if value is not None and not value.python and value.shape == shape \
                else None
        if len(node.args) != 1 or set(keywords) - {"shape", "axis", "keepdims"} \
                or "shape" not in keywords:
            return None
        axis, keepdims = keywords.get("axis"), keywords.get("keepdims")
        spread = (axis is None or isinstance(axis, ast.Constant) and axis.value is None
                  or isinstance(keepdims, ast.Constant) and keepdims.value is True)
        value = self.expr(node.args[0], known)
        if value is None or not (spread or value.shape == ()):
            return None                      # an axis put back: a reshape, not a broadcast
        return self._spread(node.args[0], self.shape(keywords["shape"], known), known)

    def shape(self, node: ast.expr, known: Known) -> tuple[int, ...] | None:
        """A shape the code writes: a tuple of int constants, an int, or ``np.shape(e)`` /
        ``e.shape`` of an expression this translator reads."""
        if isinstance(node, ast.Constant) and type(node.value) is int and node.value >= 0:
            return (node.value,)
        if isinstance(node, ast.Tuple):
            if all(isinstance(e, ast.Constant) and type(e.value) is int and e.value >= 0
                   for e in node.elts):
                return tuple(e.value for e in node.elts)
            return None
        inner = None
        if isinstance(node, ast.Attribute) and node.attr == "shape":
            inner = node.value
        elif (isinstance(node, ast.Call) and self.numpy_object(node.func) is np.shape
              and len(node.args) == 1 and not node.keywords):
            inner = node.args[0]
        typed = self.expr(inner, known) if inner is not None else None
        return typed.shape if typed is not None else None


def fused_operator(op: ast.AST) -> Callable | None:
    """The ufunc of the operator ``op`` (``ast.Add``: ``np.add``) where a region may hold it
    written as that operator, else None."""
    prim = OPERATORS.get(type(op))
    return prim.fn if prim is not None and prim.fused_operator else None


def _root(node: ast.BinOp) -> Callable | None:
    """The ufunc NumPy computes ``x ** c`` of an array with, for a constant fractional ``c``
    (an integer power is exact either way, and stays a power)."""
    c = node.right.value if isinstance(node.op, ast.Pow) and isinstance(
        node.right, ast.Constant) else None
    prim = POWERS.get(c) if type(c) in (int, float) else None
    return prim.fn if prim is not None and not float(c).is_integer() else None


def _literal(value: Any) -> Typed | None:
    """A numeric or bool constant of the code, as a weakly typed Python number."""
    if type(value) not in (bool, int, float):
        return None
    return Typed(Lit(value), (), np.asarray(value).dtype, python=True)


def applications(expr: Expr) -> int:
    """How many functions ``expr`` applies."""
    if isinstance(expr, Apply):
        return 1 + sum(applications(a) for a in expr.args)
    return 0


def refs(expr: Expr, seen: dict[str, None] | None = None) -> list[str]:
    """The names ``expr`` reads, once each, in order."""
    seen = {} if seen is None else seen
    if isinstance(expr, Ref):
        seen.setdefault(expr.name, None)
    elif isinstance(expr, Apply):
        for a in expr.args:
            refs(a, seen)
    return list(seen)


def renamed(expr: Expr, new: Callable[[str], str]) -> Expr:
    """``expr`` with every name ``n`` it reads written ``new(n)``."""
    if isinstance(expr, Ref):
        return Ref(new(expr.name))
    if isinstance(expr, Apply):
        return Apply(expr.func, tuple(renamed(a, new) for a in expr.args), expr.dtype)
    return expr


def reduction_axes(axis: ast.expr | None, keepdims: ast.expr | None, ndim: int
                   ) -> tuple[tuple[int, ...], bool] | None:
    """The sorted axes and keepdims of ``np.sum(e, axis=axis, keepdims=keepdims)`` over
    ``ndim`` dimensions (all for no axis), or None where they are not literals NumPy takes."""
    try:
        given = None if axis is None else ast.literal_eval(axis)
        keep = False if keepdims is None else ast.literal_eval(keepdims)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    if type(keep) is not bool:
        return None
    if given is None:
        return tuple(range(ndim)), keep
    given = (given,) if type(given) is int else given
    if not (isinstance(given, tuple) and given and all(type(a) is int for a in given)
            and all(-ndim <= a < ndim for a in given)):
        return None
    axes = tuple(sorted({a % ndim for a in given}))
    return (axes, keep) if len(axes) == len(given) else None
