"""What a loop kernel need not store for every iteration
(:mod:`~srcgrad.codegen.backends.numba.loops`).

The forward kernel stores, for each iteration, every value its adjoint reads.  Two kinds of
value are cheaper to have again than to store:

- a *loop invariant*, computed from the loop's constant inputs alone (``W_T = W.T``): the
  forward kernel computes it once before its loop, and hands that one value to the adjoint;
- a *row* of a constant input at the counter (``xs_at = xs[t]``), a view: the adjoint takes
  it again from the input instead of reading a copy.

Both are views of, or computed from, the inputs only, so they are the same in every
iteration, provided nothing updates them in place: where a statement of either kernel adds
in place into such a value or into a name that may alias one, or where a carried value or
a cotangent may alias one, the kernels store every value as before.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

import numpy as np

from srcgrad.codegen.backends.numba.loop_shapes import is_comment

__all__ = ["Reuse", "find_reuse"]

_RESHAPE = np.reshape.__name__       # the method loop_grads spells an unbroadcast with


@dataclass
class Reuse:
    """``hoisted``: the forward kernel's statements that compute loop invariants, in order
    (their names: ``invariants``); ``rows``: the statements the adjoint runs again instead
    of loading a stored value, by name; ``loop``: the forward statements left in its loop."""

    hoisted: list[ast.stmt] = field(default_factory=list)
    invariants: list[str] = field(default_factory=list)
    rows: dict[str, ast.stmt] = field(default_factory=dict)
    loop: list[ast.stmt] = field(default_factory=list)


def _root(node: ast.expr) -> str | None:
    """The name whose array ``node`` may be a view of (``x``, ``x.T``, ``x[i]``,
    ``x.reshape(s)``), or None for a new value."""
    while True:
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, ast.Attribute) and node.attr == "T":
            node = node.value
        elif isinstance(node, ast.Subscript):
            node = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr == _RESHAPE:
            node = node.func.value
        else:
            return None


def _reads(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _assigned(st: ast.stmt) -> str | None:
    if isinstance(st, ast.Assign) and len(st.targets) == 1 \
            and isinstance(st.targets[0], ast.Name):
        return st.targets[0].id
    return None


def _row(value: ast.expr, consts: set[str], counters: set[str]) -> bool:
    """Whether ``value`` is the counter (``index = t``), or ``x[t]`` or ``x[t, 0]``: a
    constant input at the counter (``counters``: the counter and its copies)."""
    if isinstance(value, ast.Name):
        return value.id in counters
    if not (isinstance(value, ast.Subscript) and isinstance(value.value, ast.Name)
            and value.value.id in consts):
        return False
    items = value.slice.elts if isinstance(value.slice, ast.Tuple) else [value.slice]
    return all(isinstance(i, ast.Name) and i.id in counters or isinstance(i, ast.Constant)
               and type(i.value) is int for i in items) and any(
        isinstance(i, ast.Name) for i in items)


def find_reuse(forward: list[ast.stmt], backward: list[ast.stmt], ends: list[ast.expr],
               consts: list[str], counter: str) -> Reuse:
    """Split the forward kernel's statements ``forward`` into the invariants it may compute
    once and the rest, and find the rows the adjoint may take again; ``backward``: the
    adjoint's statements; ``ends``: the carried values and cotangents each iteration ends
    with.  Nothing is reused unless it provably stays the same (see the module)."""
    none = Reuse(loop=list(forward))
    const = set(consts)
    counts: dict[str, int] = {}
    for st in forward + backward:
        name = _assigned(st)
        if name is not None:
            counts[name] = counts.get(name, 0) + 1
    out = Reuse()
    known = set(const) | {"np"}
    counters = {counter}
    for st in forward:
        name = _assigned(st)
        if is_comment(st):
            out.loop.append(st)
        elif name is None:
            return none                # an update in place: keep it simple, store all
        elif counts[name] == 1 and _reads(st.value) <= known and not any(
                isinstance(n, ast.Subscript) for n in ast.walk(st.value)):
            # no index: a loop of no trips must not compute what could be out of bounds
            out.hoisted.append(st)
            out.invariants.append(name)
            known.add(name)
        else:
            if counts[name] == 1 and _row(st.value, const, counters):
                out.rows[name] = st
                if isinstance(st.value, ast.Name):
                    counters.add(name)
            out.loop.append(st)
    if not _unchanged(set(out.invariants) | set(out.rows) | const, backward, ends):
        return none
    return out


def _unchanged(shared: set[str], backward: list[ast.stmt], ends: list[ast.expr]) -> bool:
    """Whether no statement of ``backward`` updates in place a value that may be a view of
    one of ``shared`` (or of the constant inputs they view), and no value an iteration
    ends with may be one."""
    views = set(shared)
    for st in backward:
        name = _assigned(st)
        if name is not None:
            if _root(st.value) in views:
                views.add(name)
        elif isinstance(st, ast.AugAssign):
            if _root(st.target) in views:
                return False
        elif isinstance(st, ast.Expr) and isinstance(st.value, ast.Call):
            if not is_comment(st) and any(_root(a) in views for a in st.value.args[:1]):
                return False           # add_outer(out, a, b) adds into out
        elif not is_comment(st):
            return False
    return not any(_root(e) in views for e in ends)
