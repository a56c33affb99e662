"""What buffer reuse (codegen/passes/reuse.py) needs to know of a whole function: which names it
binds and how often, which it reads after each top-level statement, and which may be seen
through something other than their name (an alias, a container, a closure).

A binding is found by its place (an assignment's target, a loop variable...), never by the
``ctx`` of a ``Name``: generated code may build a target as ``Name(id, Load())``.
"""

from __future__ import annotations

import ast
import copy
from typing import Any

import numpy as np

__all__ = ["NP", "numpy_function", "makes_new", "only_reads", "ufunc", "tree_copy", "params",
           "bound_names", "store_counts", "reads", "live_after", "escaped"]

NP = "np"  # the NumPy backend's alias in generated modules
# NumPy functions returning a new array (never an argument or a view of one), besides the
# primitives with the hint ``fresh_result`` (srcgrad.runtime.rules) ...
_NEW = frozenset({np.where, np.sum, np.max, np.min, np.mean, np.prod, np.amax, np.amin, np.dot,
                  np.matmul, np.copy, np.zeros_like, np.ones_like, np.full_like, np.empty_like})
# ... and those, with every ufunc, that only read their arguments
_READS = _NEW | {np.any, np.all, np.shape, np.ndim, np.size}
_INFO_ATTRS = frozenset({"shape", "ndim", "dtype", "size"})
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.ListComp,
           ast.SetComp, ast.DictComp, ast.GeneratorExp)
_COMPARES = (ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE)


def numpy_function(node: ast.AST) -> Any:
    """``np.f`` for a call ``np.f(...)``, or None."""
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name) and node.func.value.id == NP):
        return getattr(np, node.func.attr, None)
    return None


def ufunc(node: ast.AST) -> Any:
    """The elementwise ufunc of one output (not ``matmul``) a call ``np.f(...)`` calls."""
    value = numpy_function(node)
    return value if (isinstance(value, np.ufunc) and value.nout == 1
                     and value.signature is None) else None


def makes_new(node: ast.AST) -> bool:
    """Whether a call ``np.f(...)`` returns a new array (given arrays), whatever ``f`` reads."""
    from srcgrad.runtime.rules.primitives import PRIMITIVES
    func = numpy_function(node)
    return func is not None and (func in _NEW or any(
        p.fn is func and p.fresh_result for p in PRIMITIVES.values()))


def only_reads(node: ast.AST) -> bool:
    """Whether a call ``np.f(...)`` only reads its arguments (keeps no reference to them)."""
    return ufunc(node) is not None or numpy_function(node) in _READS or makes_new(node)


def tree_copy(node: ast.AST) -> Any:
    """A copy of ``node`` in which no node appears twice (a deep copy keeps shared ones)."""
    new = copy.copy(node)
    for field, value in ast.iter_fields(node):
        if isinstance(value, ast.AST):
            setattr(new, field, tree_copy(value))
        elif isinstance(value, list):
            setattr(new, field, [tree_copy(v) if isinstance(v, ast.AST) else v for v in value])
    return new


def params(fn: ast.FunctionDef) -> list[str]:
    a = fn.args
    return [p.arg for p in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg] if p]


def _targets(node: ast.AST) -> list[ast.expr]:
    """The target expressions ``node`` binds (and ``del`` unbinds)."""
    if isinstance(node, (ast.Assign, ast.Delete)):
        return node.targets
    if isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor, ast.NamedExpr,
                         ast.comprehension)):
        return [node.target]
    if isinstance(node, ast.withitem) and node.optional_vars is not None:
        return [node.optional_vars]
    return []


def _names(target: ast.expr) -> list[ast.Name]:
    """The names a target binds (``a``, ``a, *b``; not ``a[i]`` or ``a.b``, which read ``a``)."""
    if isinstance(target, ast.Name):
        return [target]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for t in target.elts for n in _names(t)]
    return _names(target.value) if isinstance(target, ast.Starred) else []


def bound_names(tree: ast.AST) -> list[str]:
    """Every name bound anywhere inside ``tree``, once per binding (nested scopes too)."""
    names = []
    for n in ast.walk(tree):
        names += [name.id for t in _targets(n) for name in _names(t)]
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(n.name)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            names += [(a.asname or a.name).split(".")[0] for a in n.names]
        elif isinstance(n, (ast.Global, ast.Nonlocal)):
            names += n.names
        elif isinstance(n, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and n.name:
            names.append(n.name)
        elif isinstance(n, ast.MatchMapping) and n.rest:
            names.append(n.rest)
    return names


def store_counts(fn: ast.FunctionDef) -> dict[str, int]:
    """How many times each name is bound in ``fn`` (parameters once)."""
    counts = dict.fromkeys(params(fn), 1)
    for st in fn.body:
        for name in bound_names(st):
            counts[name] = counts.get(name, 0) + 1
    return counts


def _written(tree: ast.AST) -> set[int]:
    """The ``Name`` nodes inside ``tree`` that are only written (an augmented assignment's
    target is read as well)."""
    return {id(name) for n in ast.walk(tree) if not isinstance(n, ast.AugAssign)
            for t in _targets(n) for name in _names(t)}


def reads(tree: ast.AST) -> set[str]:
    """The names read anywhere inside ``tree``."""
    written = _written(tree)
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and id(n) not in written}


def live_after(body: list[ast.stmt]) -> list[set[str]]:
    """For each top-level statement, the names read after it before being bound again (a
    compound statement binds nothing for certain and reads every name inside it)."""
    live: set[str] = set()
    after: list[set[str]] = []
    for st in reversed(body):
        after.append(set(live))
        kills = {n.id for t in st.targets for n in _names(t)} if isinstance(st, ast.Assign) \
            else set()
        live = (live - kills) | reads(st)
    return after[::-1]


def escaped(fn: ast.FunctionDef) -> set[str]:
    """Names whose value may be seen through something other than the name itself while the
    function runs: read anywhere in a way that may keep a reference (assigned on, stored,
    passed to a function that is not a NumPy read, captured by a nested scope), or global.
    Returning a value is no escape: nothing here runs after it.  (``fn`` must be a tree: no
    node in two places.)"""
    parents = {c: p for p in ast.walk(fn) for c in ast.iter_child_nodes(p)}
    written = _written(fn)
    out = set()
    for node in ast.walk(fn):
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            out |= set(node.names)
        elif isinstance(node, ast.Name) and id(node) not in written and (
                not _consumed(node, parents) or _nested(node, parents, fn)):
            out.add(node.id)
    return out


def _nested(node: ast.AST, parents: dict, fn: ast.FunctionDef) -> bool:
    while (node := parents[node]) is not fn:
        if isinstance(node, _SCOPES):
            return True
    return False


def _consumed(node: ast.expr, parents: dict) -> bool:
    """Whether the value of ``node`` is only read: nothing made from it keeps it."""
    parent = parents[node]
    if isinstance(parent, ast.Tuple) and isinstance(parents[parent], ast.Return):
        parent = parents[parent]
    if isinstance(parent, (ast.BinOp, ast.UnaryOp, ast.Return)):
        return True                          # a return: nothing runs after it here
    if isinstance(parent, ast.AugAssign):
        return node is parent.target         # updated in place (its value: maybe kept)
    if isinstance(parent, ast.Compare):
        return all(isinstance(op, _COMPARES) for op in parent.ops)
    if isinstance(parent, ast.Call):
        return node in parent.args and only_reads(parent)
    target = parent in _targets(parents.get(parent))
    if isinstance(parent, ast.Attribute):     # ``a.shape = s`` would change it
        return not target and (parent.attr in _INFO_ATTRS or (
            parent.attr == "T" and _consumed(parent, parents)))
    if isinstance(parent, ast.Subscript):
        if node is not parent.value:
            return True                      # an index: indexing copies, never views it
        return target or _consumed(parent, parents)   # ``a[i] = v``: written in place
    return False
