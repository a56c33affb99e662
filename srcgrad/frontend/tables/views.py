"""Which operations may hand back storage shared with their inputs, and which write into an
argument: the tables the alias analysis (:mod:`srcgrad.frontend.aliases`) reads a statement
by.  Everything here looks at one statement alone, never at the names around it."""

from __future__ import annotations

import ast
from typing import Any

import numpy as np

from srcgrad.frontend.tables import constructs as T
from srcgrad.ir import Stmt, Var

__all__ = ["VIEW_FUNCTIONS", "WRITING_FUNCTIONS", "WRITING_METHODS", "index_kind",
           "static_links", "writing_call"]

# Primitives and NumPy functions (by name) whose result may share memory with an argument;
# tests/structure/test_views_declared.py checks every primitive of the rule table against NumPy.
VIEW_FUNCTIONS = frozenset({
    "split_piece", "linalg_diagonal", "linalg_matrix_transpose", "to_scalar", "unreduce",
    "reshape", "ravel", "transpose", "swapaxes", "moveaxis", "rollaxis", "squeeze",
    "expand_dims", "diagonal", "diag", "broadcast_to", "broadcast_arrays", "atleast_1d",
    "atleast_2d", "atleast_3d", "flip", "fliplr", "flipud", "rot90", "real", "imag", "split",
    "array_split", "hsplit", "vsplit", "dsplit", "unstack", "asarray", "asanyarray",
    "ascontiguousarray", "asfortranarray", "require", "view", "stop_gradient", "to_device",
    "matrix_transpose", "permute_dims", "sliding_window_view", "as_strided",
    "nan_to_num", "T", "mT", "getitem", "flatten_view", "match_tangent", "as_columns",
    "from_columns", "weights_along",
})
# NumPy functions that write into an argument.
WRITING_FUNCTIONS = frozenset({
    "copyto", "put", "place", "putmask", "fill_diagonal", "put_along_axis", "shuffle",
})
# Array methods that change the array they are called on.
WRITING_METHODS = frozenset({
    "fill", "sort", "partition", "resize", "itemset", "setflags", "put", "setfield",
    "byteswap", "shuffle", "__setitem__", "__iadd__", "__isub__", "__imul__", "__itruediv__",
})


def index_kind(index: Any) -> str | None:
    """How ``x[index]`` relates to ``x``: ``view``, ``int``, ``copy`` or None (not known)."""
    keys = index if isinstance(index, tuple) else (index,)
    if any(isinstance(k, Var) for k in keys):
        return None
    if all(isinstance(k, (int, np.integer)) and not isinstance(k, bool) for k in keys):
        return "int"
    for k in keys:
        if isinstance(k, slice):
            if not all(p is None or isinstance(p, (int, np.integer)) and not isinstance(p, bool)
                       for p in (k.start, k.stop, k.step)):
                return None
        elif isinstance(k, (list, np.ndarray, bool, str)):
            return "copy"     # lists, arrays, masks: advanced, a copy (a str: a pytree's key,
            #                   whose leaves the pytree specialisation follows exactly)
        elif not (k is None or k is Ellipsis or isinstance(k, (int, np.integer))):
            return None                         # a dict's key, say: what it holds
    return "view"


def static_links(st: Stmt) -> list:
    """The links ``(base, kind, param)`` of a ``static`` statement's result: what the code
    printed verbatim may hand back of the names it reads."""
    expr = st.expr
    names = {u: Var(u) for u in st.uses}
    if isinstance(expr, ast.Subscript) and isinstance(expr.value, ast.Name) and \
            expr.value.id in names:
        try:
            kind = index_kind(ast.literal_eval(expr.slice))
        except (ValueError, SyntaxError, TypeError):
            kind = None
        return [] if kind == "copy" else [(names[expr.value.id], kind, None)]
    if isinstance(expr, ast.Attribute) and expr.attr in VIEW_FUNCTIONS:
        return [(names[u], None, None) for u in names]
    if isinstance(expr, (ast.IfExp, ast.Name)):
        return [(names[u], None, None) for u in names]
    if isinstance(expr, ast.Call):
        func = expr.func
        word = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        method = isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) \
            and func.value.id in names
        if word in VIEW_FUNCTIONS or method and word not in T.METHODS:
            return [(names[u], None, None) for u in names]
    return []


def writing_call(stmt: Stmt) -> ast.expr | None:
    """The function of a call in code printed verbatim (a static value, a print) that would
    write into an array, if any: ``out=``, ``np.copyto``, ``rng.shuffle(x)``, ``z.sort()`` of
    a variable ``z``."""
    for n in ast.walk(stmt.expr) if stmt.expr is not None else ():
        if not isinstance(n, ast.Call):
            continue
        func = n.func
        word = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        method = isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and \
            func.value.id in stmt.uses
        if any(k.arg == "out" for k in n.keywords) or word in WRITING_FUNCTIONS or \
                method and word in WRITING_METHODS or \
                word in ("at", "reduceat") and isinstance(func, ast.Attribute):
            return func
    return None
