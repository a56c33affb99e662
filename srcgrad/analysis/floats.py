"""May a function's code be specialised for Python floats (``math`` functions, no shapes)?

Only when every value it computes is a scalar: the specialisation prints ``math.sin`` for
``np.sin`` and leaves out the code that undoes broadcasting, both of which are right for
scalars only.  An allow-list decides: elementwise primitives of scalars and Python numbers,
plain Python expressions of them, and blocks and helpers made of the same.  Anything else (an
array constant, a constructor, a reduction, a list) keeps the generic NumPy code.
"""

from __future__ import annotations

import ast
import builtins
import math
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from srcgrad.errors import CompileError
from srcgrad.ir import Const, Function

__all__ = ["only_floats"]

_SCALAR_PRIMS = frozenset({"pow_scalar", "rsub", "stop_gradient"})
_SCALAR_BUILTINS = frozenset({"len", "range", "float", "int", "bool", "abs", "round", "min",
                              "max"})


def only_floats(fn: Function, seen: set | None = None,
                lower: Callable[[Any], Function] | None = None) -> None:
    """Raise CompileError unless every value of ``fn`` (given scalar arguments) is a scalar;
    ``lower`` (the driver's lowering of a user function) checks the functions it calls too
    (without it, they are left to the caller)."""
    seen = set() if seen is None else seen
    for st in fn.body:
        if st.kind == "prim":
            _prim(st)
        elif st.kind == "static":
            _static(st.expr, fn)
        elif st.kind in ("branch", "loop"):
            for block in st.fn:
                if isinstance(block, Function):
                    only_floats(block, seen, lower)
        elif st.kind == "call":
            if st.fn not in seen and lower is not None:
                seen.add(st.fn)
                only_floats(lower(st.fn), seen, lower)
        elif st.kind not in ("pack", "unpack", "effect") or st.params.get("list"):
            _refuse(f"a {st.kind} statement")


def _refuse(what: str) -> None:
    raise CompileError(f"not specialised for Python floats: {what}")


def _number(value: Any) -> bool:
    """A value the ``math`` functions treat as NumPy does: a Python number, or a NumPy scalar
    of float64, an integer or bool (``math.exp`` of a float32 would compute in float64)."""
    if isinstance(value, np.generic):
        return value.dtype == np.float64 or value.dtype.kind in "iub"
    return value is None or isinstance(value, (int, float, bool))


def _prim(st: Any) -> None:
    prim = st.fn
    if not (prim.elementwise or prim.name in _SCALAR_PRIMS):
        _refuse(f"the primitive {prim.name}")
    for a in st.args:
        if isinstance(a, Const) and not _number(a.value):
            _refuse(f"the constant {type(a.value).__name__}")
    for v in st.params.values():
        if isinstance(v, Const):
            v = v.value
        if not (_number(v) or isinstance(v, str)) and not hasattr(v, "name"):
            _refuse(f"a parameter of {prim.name}")


def _static(expr: Any, fn: Function) -> None:
    for node in ast.walk(expr):
        if isinstance(node, (ast.Subscript, ast.List, ast.Dict, ast.Set, ast.ListComp,
                             ast.DictComp, ast.SetComp, ast.GeneratorExp, ast.Lambda,
                             ast.Starred)):
            _refuse(f"the expression {ast.unparse(expr)}")
        if isinstance(node, ast.Call) and not (
                isinstance(node.func, ast.Name) and node.func.id in _SCALAR_BUILTINS
                and node.func.id not in fn.free):
            _refuse(f"the call {ast.unparse(node)}")
        if isinstance(node, ast.Attribute):
            base = node.value
            if not (isinstance(base, ast.Name) and base.id in ("np", "math")):
                _refuse(f"the attribute {ast.unparse(node)}")
            if not _number(getattr(math if base.id == "math" else np, node.attr, None)):
                _refuse(f"the attribute {ast.unparse(node)}")
        if isinstance(node, ast.Name) and node.id in fn.free:
            value = fn.free[node.id]
            if not (_number(value) or isinstance(value, types.ModuleType)
                    or value is getattr(builtins, node.id, object())):
                _refuse(f"the name {node.id}")
