"""Loops over ``itertools.combinations``, ``permutations``, ``product`` and
``combinations_with_replacement`` of iterables known when compiling (``range(3)``, a pytree
argument, a literal): their items are known too, and the loop is unrolled over them, in the
order itertools gives them."""

from __future__ import annotations

import ast
import itertools
import math
from collections.abc import Callable
from typing import Any

from srcgrad.ir import Pack

__all__ = ["itertools_items"]

_COMBINATORICS = {"combinations", "permutations", "product", "combinations_with_replacement"}


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
