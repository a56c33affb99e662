"""When may generated code be specialised on the shapes of a first call?

Only when every value's shape follows from the arguments' shapes alone: no index computed at
run time (a boolean mask selects a data-dependent number of elements), no call into other
functions, and shape arithmetic that reads only shapes (``x.shape[0]``, ``len(x)``).

A ``for`` loop over a range (no ``while``, no ``break``) qualifies too when its body does:
there the body's statics may also read the loop counter (``xs[t]``), whose values follow
from the trip count, itself a static of shapes.  The values a loop carries may still change
shape from one iteration to the next (``h = np.concatenate([h, x])``); the first call sees
every iteration, and code that needs one shape for all of them checks that it saw one
(:mod:`srcgrad.codegen.backends.numba.loops`).  Only ``backend="numba"`` specialises loops
(:func:`has_loops` tells the others apart).
"""

from __future__ import annotations

import ast

from srcgrad.ir import Function, Var

__all__ = ["shapes_follow_from_inputs", "has_loops"]

_SHAPE_ATTRS = frozenset({"shape", "ndim", "dtype", "size"})
_DATA_KINDS = ("call", "leaf", "branch", "append", "listget")


def shapes_follow_from_inputs(fn: Function) -> bool:
    """Whether every shape of ``fn``'s values follows from its arguments' shapes."""
    static = {st.target for st in fn.body if st.kind == "static"}
    for st in fn.body:
        if st.kind in _DATA_KINDS:
            return False                                 # shapes may follow the data
        if st.kind == "loop" and not _fixed_loop(st):
            return False
        if st.kind == "prim" and any(isinstance(v, Var) for v in st.params.values()):
            return False                                 # a run-time index or shape
        if st.kind == "static" and not _reads_only_shapes(st.expr, static):
            return False
    return True


def has_loops(fn: Function) -> bool:
    """Whether ``fn`` has a loop at its top level."""
    return any(st.kind == "loop" for st in fn.body)


def _fixed_loop(st) -> bool:
    """A ``for`` loop over a range of a static trip count, whose body's shapes follow from
    the arguments' shapes and the counter: no nested loop, no data-dependent kind, and
    run-time parameters (an index) that are statics of shapes and the counter."""
    body, test = st.fn
    if test is not None or st.params.get("stops") or not isinstance(body, Function):
        return False
    static = {s.target for s in body.body if s.kind == "static"}
    known = static | {body.params[0]}                   # the counter: an int of the range
    for s in body.body:
        if s.kind in _DATA_KINDS or s.kind == "loop":
            return False
        if s.kind == "prim" and any(isinstance(v, Var) and v.name not in static
                                    for v in s.params.values()):
            return False
        if s.kind == "static" and not _reads_only_shapes(s.expr, known):
            return False
    return True


def _reads_only_shapes(expr: ast.AST, static: set[str]) -> bool:
    parents = {child: node for node in ast.walk(expr) for child in ast.iter_child_nodes(node)}
    for node in ast.walk(expr):
        if not isinstance(node, ast.Name) or node.id in static:
            continue
        parent = parents.get(node)
        if isinstance(parent, ast.Attribute) and parent.attr in _SHAPE_ATTRS:
            continue
        if (isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name)
                and parent.func.id == "len" and node in parent.args):
            continue
        if isinstance(parent, ast.Call) and parent.func is node:
            continue                                     # a function name (np.zeros, …)
        if isinstance(parent, ast.Attribute) and parent.value is node and node.id in ("np",
                                                                                      "math"):
            continue
        return False
    return True
