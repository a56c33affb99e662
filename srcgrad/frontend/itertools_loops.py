"""Loops over ``itertools.combinations``, ``permutations``, ``product``,
``combinations_with_replacement`` and ``chain`` of iterables known when compiling (``range(3)``,
a pytree argument, a literal): their items are known too, and the loop is unrolled over them,
in the order itertools gives them."""

from __future__ import annotations

import ast
import itertools
import math
from collections.abc import Callable
from typing import Any

from srcgrad.ir import Pack, Tree

__all__ = ["itertools_items", "chain_written"]

_COMBINATORICS = {"combinations", "permutations", "product", "combinations_with_replacement",
                  "chain"}


def _function(host: Any, func: ast.expr) -> str | None:
    """The itertools function ``func`` names (``itertools.product`` or ``product`` imported
    from it), or None."""
    try:
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and \
                func.value.id not in host.scope and func.attr in _COMBINATORICS:
            return func.attr if host.env.resolve(func.value.id) is itertools else None
        if isinstance(func, ast.Name) and func.id not in host.scope:
            value = host.env.resolve(func.id)
            name = getattr(value, "__name__", None)
            return name if name in _COMBINATORICS and getattr(itertools, name) is value \
                else None
    except Exception:  # noqa: BLE001 - not a name the function can read
        return None
    return None


def itertools_items(host: Any, node: ast.expr, sequence: Callable, known_int: Callable,
                    limit: int) -> tuple[list, bool] | None:
    """The items of ``node`` when it is one of those calls of known iterables (and at most
    ``limit`` of them), as tuples of the iterables' items; else None."""
    if not isinstance(node, ast.Call) or any(isinstance(a, ast.Starred) for a in node.args):
        return None
    name = _function(host, node.func)
    if name is None:
        return None
    keywords = {k.arg: k.value for k in node.keywords}
    if name == "chain":     # the items of each iterable in turn: no one sequence to index
        parts = [sequence(a) for a in node.args]
        if keywords or any(p is None for p in parts) or sum(len(p[0]) for p in parts) > limit:
            return None
        return [v for p in parts for v in p[0]], True
    if name == "product":
        if set(keywords) - {"repeat"}:
            return None
        repeat = known_int(keywords["repeat"]) if "repeat" in keywords else 1
        parts = [sequence(a) for a in node.args]
        if repeat is None or repeat < 0 or any(p is None for p in parts):
            return None
        pools = [p[0] for p in parts] * repeat
        if math.prod(len(p) for p in pools) > limit:
            return None
        chosen = itertools.product(*[range(len(p)) for p in pools])
        return [Pack([pools[j][i] for j, i in enumerate(c)]) for c in chosen], True
    args = list(node.args) + ([keywords.pop("r")] if "r" in keywords else [])
    if keywords or not 1 <= len(args) <= 2 or (name != "permutations" and len(args) != 2):
        return None
    part = sequence(args[0])
    r = known_int(args[1]) if len(args) == 2 else None if part is None else len(part[0])
    if part is None or r is None or r < 0:
        return None
    pool = part[0]
    count = {"combinations": lambda n: math.comb(n, r),
             "permutations": lambda n: math.perm(n, r),
             "combinations_with_replacement": lambda n: math.comb(n + r - 1, r) if n else
             int(r == 0)}[name](len(pool))
    if count > limit:
        return None
    chosen = getattr(itertools, name)(range(len(pool)), r)
    return [Pack([pool[i] for i in c]) for c in chosen], True


_LIST_WRITES = {"append", "extend", "insert", "pop", "remove", "clear", "reverse", "sort"}


def chain_written(host: Any, s: ast.For) -> ast.AST | None:
    """In a loop unrolled over the items its lists hold when it begins (``for q, w in pairs``,
    ``enumerate(xs)``, ``zip(a, b)``, ``itertools.chain(a, b)``), a part of the body that
    writes into one of those lists (or a name for it): an item set or deleted, a list method
    that changes it, ``+=``; or one that hands such a list to a function that is not a builtin
    or NumPy's.  Python's iterators read each list as it is by then.  A loop over a copy
    (``list(xs)``, ``xs[:]``, ``sorted(xs)``) reads none."""
    keys = s.iter.func.value if isinstance(s.iter, ast.Call) and isinstance(
        s.iter.func, ast.Attribute) and s.iter.func.attr == "keys" else s.iter
    if isinstance(keys, ast.Name) and isinstance(host.scope.get(keys.id), Tree) and \
            host.scope[keys.id].kind == "dict":
        return None                       # the keys: writing a value leaves them as they are
    if isinstance(s.iter, ast.Subscript) and isinstance(s.iter.slice, ast.Slice) or \
            isinstance(s.iter, ast.Call) and isinstance(s.iter.func, ast.Name) and \
            s.iter.func.id in ("list", "tuple", "sorted") and s.iter.func.id not in host.scope:
        return None
    iterated = [host.scope.get(n.id) for n in ast.walk(s.iter) if isinstance(n, ast.Name)]
    iterated = [v for v in iterated if isinstance(v, Pack) and v.is_list or isinstance(
        v, Tree) and v.kind is list or host.lists.is_runtime_list(v)]    # the lists read

    def root(node: ast.AST) -> ast.AST:
        while isinstance(node, (ast.Subscript, ast.Attribute)):
            node = node.value
        return node

    def named(node: ast.AST) -> bool:
        return isinstance(node, ast.Name) and any(host.scope.get(node.id) is v
                                                  for v in iterated)

    for n in (n for st in s.body for n in ast.walk(st)):
        target = root(n) if isinstance(n, ast.Subscript) and \
            isinstance(n.ctx, (ast.Store, ast.Del)) else \
            n.target if isinstance(n, ast.AugAssign) else \
            root(n.func.value) if isinstance(n, ast.Call) and \
            isinstance(n.func, ast.Attribute) and n.func.attr in _LIST_WRITES else None
        if named(target):
            return n
        if isinstance(n, ast.Call) and not _reads_only(n.func) and any(
                named(getattr(a, "value", a)) for a in [*n.args, *n.keywords]):
            return n                         # handed to a function, which may write into it
    return None


def _reads_only(func: ast.expr) -> bool:
    """Builtins and NumPy functions, which read a list they are given."""
    if isinstance(func, ast.Name):
        return func.id in {"len", "sum", "min", "max", "sorted", "list", "tuple", "any", "all"}
    while isinstance(func, ast.Attribute):
        func = func.value
    return isinstance(func, ast.Name) and func.id in {"np", "numpy"}
