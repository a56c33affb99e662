"""Values nothing reads are not carried: a helper's result the caller discards, and a name a
branch assigns that the function never reads.

CS231n-style layers return ``out, cache`` and build ``cache`` as a tuple in one branch
(``None`` in the other); a caller that differentiates the layer discards it (``out, _ =
layer(...)``).  A tuple assigned in a branch is one run-time value that srcgrad does not
compile, but nothing here needs it:

- where ``_`` (any name of the target tuple) is never read by the caller, a helper lowered in
  place has ``return out, cache`` lowered as ``return out, None`` — only where that item is a
  constant, or a name the helper's body binds at its top level (``out, cache = None, None``),
  whose reading can neither do anything nor raise;
- a name a branch assigns is carried out of it only if the function (so rewritten) reads it
  somewhere: a name that is never read is dropped from the branch's results.

"Never read" is judged on the whole function's text, not on liveness, so that a loop that
would read the name again, a nested function, ``+=``, ``del`` or a call of ``locals()``,
``vars()``, ``eval()`` or ``exec()`` keep it.
"""

from __future__ import annotations

import ast
import copy
import dataclasses
from typing import Any

from srcgrad.errors import CompileError
from srcgrad.frontend.parse import Source, parse_function

__all__ = ["never_read", "discarding_caller", "discards_results", "carried_outputs"]

_DYNAMIC = frozenset({"locals", "vars", "eval", "exec"})


def never_read(tree: ast.AST, name: str) -> bool:
    """Whether no code in ``tree`` reads ``name`` (nor could, through ``locals()`` and such)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Store) and (
                node.id == name or node.id in _DYNAMIC):
            return False
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) and \
                node.target.id == name:
            return False
    return True


def carried_outputs(host: Any, outputs: list[str], live: set[str]) -> list[str]:
    """The branch results worth carrying: those read after it, or anywhere in the function."""
    return [n for n in outputs if n in live or not never_read(host.src.node, n)]


def _returns(body: list[ast.stmt]) -> list[ast.Return]:
    found, stack = [], list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Return):
            found.append(node)
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda,
                                   ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(node))
    return found


def _discarded(host: Any, call: ast.Call, src: Source, body: list[ast.stmt]) -> set[int]:
    """The items of ``call``'s returned tuples that the caller's assignment discards and that
    are names (or constants) in every return of ``body``; empty when there are none, or when
    a return is not a tuple literal of the target's length."""
    s = host.following[0] if host.following else None
    if not (isinstance(s, ast.Assign) and s.value is call and len(s.targets) == 1 and
            isinstance(s.targets[0], ast.Tuple)) or isinstance(src.node, ast.Lambda):
        return set()
    targets = s.targets[0].elts
    dead = {i for i, t in enumerate(targets)
            if isinstance(t, ast.Name) and never_read(host.src.node, t.id)}
    returns = _returns(body)
    if not dead or not returns or any(
            not isinstance(r.value, ast.Tuple) or len(r.value.elts) != len(targets) or any(
                isinstance(e, ast.Starred) for e in r.value.elts) for r in returns):
        return set()
    bound = {n.id for st in body if isinstance(st, (ast.Assign, ast.AnnAssign))
             for t in (st.targets if isinstance(st, ast.Assign) else [st.target])
             for n in ast.walk(t) if isinstance(n, ast.Name)}
    if any(not (isinstance(e, ast.Constant) or isinstance(e, ast.Name) and e.id in bound)
           for r in returns for e in (r.value.elts[i] for i in dead)):
        return set()       # reading it might raise (unbound on some path): kept
    return {i for i in dead if any(isinstance(r.value.elts[i], ast.Name) for r in returns)}


def discards_results(host: Any, call: ast.Call, callee: Any) -> bool:
    """Whether the caller discards items ``callee`` returns by name: then it is lowered in
    place, where those items are left out (a helper compiled on its own returns them all)."""
    try:
        src = parse_function(callee)
    except CompileError:
        return False
    return not isinstance(src.node, ast.Lambda) and bool(
        _discarded(host, call, src, list(src.node.body)))


def discarding_caller(host: Any, call: ast.Call, src: Source, body: list[ast.stmt]
                      ) -> tuple[Source, list[ast.stmt]]:
    """The source and body to lower in place for ``call``, with the items of its returned
    tuples that the caller's assignment discards made ``None`` (see :func:`_discarded`)."""
    dead = _discarded(host, call, src, body)
    if not dead:
        return src, body
    body = copy.deepcopy(body)
    for r in _returns(body):
        for i in dead:
            r.value.elts[i] = ast.copy_location(ast.Constant(None), r.value.elts[i])
    node = copy.copy(src.node)
    node.body = body
    return dataclasses.replace(src, node=node), body
