"""When may generated code be specialised on the shapes of a first call?

Only when every value's shape follows from the arguments' shapes alone: no index computed at
run time (a boolean mask selects a data-dependent number of elements), no call into other
functions, and shape arithmetic that reads only shapes (``x.shape[0]``, ``len(x)``).
"""

from __future__ import annotations

import ast

from srcgrad.ir import Function, Var

__all__ = ["shapes_follow_from_inputs"]

_SHAPE_ATTRS = frozenset({"shape", "ndim", "dtype", "size"})


def shapes_follow_from_inputs(fn: Function) -> bool:
    static = {st.target for st in fn.body if st.kind == "static"}
    for st in fn.body:
        if st.kind in ("call", "leaf", "branch", "loop", "append", "listget"):
            return False                                 # shapes may follow the data
        if st.kind == "prim" and any(isinstance(v, Var) for v in st.params.values()):
            return False                                 # a run-time index or shape
        if st.kind == "static" and not _reads_only_shapes(st.expr, static):
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
