"""Calls of a library that stands in for NumPy (Dask), checked where the module is written.

A backend with ``keeps_numpy`` writes NumPy's functions as its library's (``da.clip``) and
keeps NumPy's helper sources, which NumPy hands to the library's arrays.  Its functions take
NumPy's positional arguments but not always its keywords: an elementwise function of Dask
takes none (``da.clip(x, a_min=0)`` raises), and some take fewer (``da.linalg.lstsq`` has no
``rcond``).  This module writes the keywords of an elementwise call positionally, as NumPy's
signature orders them, and refuses (:class:`~srcgrad.codegen.backends.base.NotInBackend`, a
CompileError at the user's line) any call the library's function cannot take, in the
generated functions and in the helpers alike.
"""

from __future__ import annotations

import ast
import inspect
import sys
from typing import Any

import numpy as np

from srcgrad.codegen.backends.base import Backend, NotInBackend, elementwise_function

__all__ = ["check_function", "check_helper", "callers"]



def check_function(fn: ast.FunctionDef, backend: Backend, is_comment: Any) -> None:
    """Adapt or refuse the library calls of a generated function (in place); the refusal
    names the user's line, from the comment statement before the call."""
    if not backend.keeps_numpy or backend.library_module() is None:
        return                               # a missing library: the module's load says so
    line = ""
    for st in ast.walk(fn):
        if not isinstance(st, ast.stmt):
            continue
        if is_comment(st):
            line = st.value.args[0].value
            continue
        for node in ast.iter_child_nodes(st):
            for call in (n for n in ast.walk(node) if isinstance(n, ast.Call)):
                wrong = _adapted(call, backend, backend.alias)
                if wrong is not None:
                    raise NotInBackend(wrong + (f" at {line}" if line else ""))


def check_helper(source: str, backend: Backend, callers: dict[str, str]) -> None:
    """Refuse a helper (NumPy source) with a NumPy call that the library, to which NumPy hands
    it, cannot take as written; ``callers``: the user's line that first calls each helper."""
    if not backend.keeps_numpy or backend.library_module() is None:
        return
    helper = source.split("(", 1)[0].removeprefix("def ")
    line = f", at {callers[helper]}" if helper in callers else ""
    for call in (n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Call)):
        parts = _dotted(call.func, "np")
        if parts is None:
            continue
        wrong = _refusal(call, _resolve(backend.library_module(), parts), "np", parts)
        if wrong is not None:
            raise NotInBackend(f"{wrong} (in the helper {helper}{line})")


def callers(functions: list[ast.FunctionDef], is_comment: Any) -> dict[str, str]:
    """The user's line (a comment statement's text) before the first call of each name."""
    found: dict[str, str] = {}
    for fn in functions:
        line = ""
        for st in ast.walk(fn):
            if isinstance(st, ast.stmt) and is_comment(st):
                line = st.value.args[0].value.removeprefix("adjoint of ")
            elif isinstance(st, ast.Call) and isinstance(st.func, ast.Name) and line:
                found.setdefault(st.func.id, line)
    return found


def _adapted(call: ast.Call, backend: Backend, alias: str) -> str | None:
    """Why the library cannot take ``call`` (None: it can, maybe after its keywords were
    written positionally, or its shape as a tuple)."""
    numpy_parts = _dotted(call.func, "np")
    if numpy_parts is not None and _resolve(np, numpy_parts) is np.reshape:
        _shape_as_tuple(call)
    parts = _dotted(call.func, alias)
    target = _resolve(backend.library_module(), parts) if parts else None
    if target is None:
        return None
    numpy_function = _wrapper_of(target)
    if numpy_function is not None:
        _positional(call, numpy_function)
    return _refusal(call, target, alias, parts)


def _refusal(call: ast.Call, target: Any, alias: str, parts: list[str]) -> str | None:
    if target is None or any(isinstance(a, ast.Starred) for a in call.args) or any(
            k.arg is None for k in call.keywords):
        return None
    spelled = ".".join([alias, *parts])
    if _wrapper_of(target) is not None:
        taken = _elementwise_keywords(_library_of(target))
        extra = sorted(k.arg for k in call.keywords if k.arg not in taken)
        return f"{spelled} takes no keyword {extra[0]!r} in Dask" if extra else None
    try:
        signature = inspect.signature(target)
    except (TypeError, ValueError):           # a ufunc: NumPy's arguments
        return None
    try:
        signature.bind(*call.args, **{k.arg: k.value for k in call.keywords})
    except TypeError as exc:
        return f"{spelled} cannot be called as NumPy's is here ({exc})"
    return None


def _library_of(target: Any) -> Any:
    """The top-level module of the library ``target`` belongs to."""
    return sys.modules.get(getattr(target, "__module__", "").split(".")[0])


def _elementwise_keywords(library: Any) -> frozenset[str]:
    """The keywords Dask's elementwise functions take: those of ``dask.array.core.elemwise``
    (``out``, ``dtype``...); NumPy's others they refuse."""
    elemwise = getattr(getattr(getattr(library, "array", None), "core", None), "elemwise", None)
    if elemwise is None:
        return frozenset()
    return frozenset(p.name for p in inspect.signature(elemwise).parameters.values()
                     if p.kind is p.KEYWORD_ONLY)


def _wrapper_of(target: Any) -> Any:
    """The NumPy function of a Dask elementwise wrapper (``da.clip``: it takes no keywords,
    unlike Dask's ufuncs), or None."""
    return None if type(target).__name__ == "ufunc" else elementwise_function(target)


def _shape_as_tuple(call: ast.Call) -> None:
    """``np.reshape(x, -1)`` as ``np.reshape(x, (-1,))``: Dask's reshape takes a tuple."""
    slots = call.args[1:2] + [k.value for k in call.keywords if k.arg in ("shape", "newshape")]
    for node in slots:
        number = node.operand if isinstance(node, ast.UnaryOp) else node
        if isinstance(number, ast.Constant) and type(number.value) is int:
            wrapped = ast.Tuple([node], ast.Load())
            if call.args[1:2] == [node]:
                call.args[1] = wrapped
            else:
                next(k for k in call.keywords if k.value is node).value = wrapped


def _positional(call: ast.Call, numpy_function: Any) -> None:
    """``call``'s keywords written as positional arguments where NumPy's signature of the
    function takes them so, in its order (``clip(x, a_min=0, a_max=1)`` → ``clip(x, 0, 1)``)."""
    if not call.keywords:
        return
    try:
        params = list(inspect.signature(numpy_function).parameters.values())
    except (TypeError, ValueError):
        return
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    given = {k.arg: k.value for k in call.keywords}
    args = list(call.args)
    for p in positional[len(args):]:
        if not given:
            break
        if p.name in given:
            args.append(given.pop(p.name))
        elif p.kind is not p.KEYWORD_ONLY and _plain(p.default):
            args.append(ast.Constant(None if p.default is np._NoValue else p.default))
        else:
            return                            # a gap that cannot be filled: left as it is
    call.args, call.keywords = args, [ast.keyword(k, v) for k, v in given.items()]


def _plain(default: Any) -> bool:
    """A default that can be written as a constant (NumPy's "no value" of ``clip``'s bounds
    means what None does)."""
    return default is np._NoValue or isinstance(default, (bool, int, float, str, type(None)))


def _dotted(node: ast.expr, root: str) -> list[str] | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.insert(0, node.attr)
        node = node.value
    return parts if parts and isinstance(node, ast.Name) and node.id == root else None


def _resolve(module: Any, parts: list[str]) -> Any:
    target = module
    for part in parts:
        target = getattr(target, part, None)
    return target
