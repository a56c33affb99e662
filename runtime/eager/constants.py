"""Arrays that carry no gradient, in the eager run with NumPy's semantics; and where, in the
user's code, the run met what it cannot follow.

A function's data (arguments not differentiated, arrays it makes with ``np.zeros``) are
Arrays without grad, so that ``data.dot(w)`` and ``out[i] = w[i]`` are recorded.  NumPy
functions without a srcgrad rule still run on them exactly as NumPy runs them, as long as
nothing among their operands carries a gradient (:func:`outside_graph`); what would drop a
gradient is refused with the user's line (:func:`dropped`): :func:`where` finds the
innermost frame of the user's own code (not srcgrad's, nor a library's: NumPy, SciPy, the
standard library) and the library function between it and srcgrad.
"""

from __future__ import annotations

import dis
import linecache
import os
import sys
import sysconfig
from typing import Any

import numpy as np

from srcgrad.runtime.eager import tensor as _tensor
from srcgrad.runtime.eager.array_writes import ESCAPED, check_current, kept, remember
from srcgrad.runtime.eager.tensor import Tensor

__all__ = ["carries_gradient", "outside_graph", "dropped", "where", "formatting", "user_file"]

_FORWARD = "srcgrad.runtime.eager.forward_ad"      # imported once a dual level is open


def _leaves(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        for v in value:
            yield from _leaves(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _leaves(v)
    else:
        yield value


def carries_gradient(value: Any) -> bool:
    """Whether a Tensor in ``value`` (lists, tuples and dicts looked into) requires grad, or
    has a tangent at an open dual level."""
    tangents = _tensor._forward_hook is not None
    for v in _leaves(value):
        if isinstance(v, Tensor):
            if v._requires_grad:
                return True
            if tangents and sys.modules[_FORWARD].tangent_of(v) is not None:
                return True
    return False


def _plain(value: Any) -> Any:
    if isinstance(value, Tensor):
        check_current(value)
        return value._data
    if type(value) in (list, tuple):
        return type(value)(_plain(v) for v in value)
    if type(value) is dict:
        return {k: _plain(v) for k, v in value.items()}
    return value


def outside_graph(func: Any, args: Any, kwargs: dict) -> Any:
    """``func`` on the plain data of Arrays that carry no gradient: NumPy's own result.  An
    Array whose memory the result shares is handed to NumPy (a write into it that carries a
    gradient is then refused)."""
    arrays = [t for t in _leaves((args, kwargs)) if isinstance(t, Tensor)]
    read = [(t, t._data.copy()) for t in arrays if kept(t)]
    out = func(*_plain(tuple(args)), **_plain(dict(kwargs)))
    for t, before in read:             # np.copyto, np.add.at ...: a write the graph misses
        if not np.array_equal(t._data, before, equal_nan=t._data.dtype.kind in "fc"):
            at, _ = where()
            raise RuntimeError(
                f"{at + ': ' if at else ''}{getattr(func, '__name__', func)} wrote in place "
                "into an array that an operation recorded for the gradient reads; srcgrad's "
                "eager run cannot follow it (write into a copy, .copy())")
    results = [r for r in _leaves(out) if isinstance(r, np.ndarray)]
    for t in arrays:
        if any(np.shares_memory(r, t._data) for r in results):
            remember(ESCAPED, t, None)
    return out


_PERCENT = (dis.opmap.get("BINARY_OP"), 6)        # ``%`` (NB_REMAINDER), Python 3.11+


def formatting(frame: Any) -> bool:
    """Whether ``frame`` is running ``%`` when it asks an array for its float: only
    ``'%.3f' % loss`` does (an array's own ``%`` is its ``__mod__``), and a string carries no
    gradient, so the value may be given (``float(loss)`` is refused: it may reach the result)."""
    code, at = frame.f_code.co_code, frame.f_lasti
    return at + 1 < len(code) and (code[at], code[at + 1]) == _PERCENT


def dropped(what: str, plain_array: bool = True) -> str:
    """The refusal of an array that requires grad ``what`` (is turned into a plain array),
    at the user's line, inside the library function the user called, if any."""
    at, library = where()
    inside = (f" inside {library}, which has no srcgrad derivative rule (srcgrad.defvjp adds "
              "one)") if library else \
        (" (NumPy does this when it is stored into, or an operand of a method of, a plain "
         "ndarray the function did not make itself: a global, a draw from a RandomState ...)"
         if plain_array else "")
    return (f"{at + ': ' if at else ''}an array that requires grad {what}{inside}; that "
            "drops its gradient, which srcgrad's eager run cannot follow")


def _roots() -> tuple[str, ...]:
    """The folders of srcgrad's packages (the runtime's, and those imported)."""
    runtime = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    found = [m.__file__ for m in map(sys.modules.get, ("srcgrad", "srcgrad.codegen"))
             if m is not None and getattr(m, "__file__", None)]
    return (runtime + os.sep, *(os.path.dirname(os.path.abspath(f)) + os.sep for f in found))


_LIBRARIES = tuple({os.path.abspath(p) + os.sep for p in (
    sysconfig.get_paths().get("stdlib"), sysconfig.get_paths().get("purelib"),
    sysconfig.get_paths().get("platlib"), os.path.dirname(os.__file__)) if p})


def _kind(filename: str) -> str:
    if filename.startswith("<srcgrad") or filename.startswith(_roots()):
        return "ours"
    if filename.startswith("<frozen") or filename.startswith(_LIBRARIES) or \
            "site-packages" in filename or "dist-packages" in filename:
        return "library"
    return "user"


def user_file(filename: str) -> bool:
    """Whether code from ``filename`` is the user's (not srcgrad's, a library's or Python's)."""
    return _kind(filename) == "user"


def _name(frame: Any) -> str:
    module = frame.f_globals.get("__name__", "?")
    code = frame.f_code
    return f"{module}.{getattr(code, 'co_qualname', code.co_name)}"


def where() -> tuple[str, str | None]:
    """``("at file.py:12 (the line)", library)``: the user's innermost line on the stack
    (``""`` when none is found) and the outermost library function it called on the way to
    srcgrad (None: it called NumPy's dispatch directly)."""
    frame = sys._getframe(1)
    library = None
    while frame is not None:
        filename = frame.f_code.co_filename
        kind = _kind(filename)
        if kind == "user":
            line = linecache.getline(filename, frame.f_lineno).strip()
            text = f" ({line})" if line else ""
            return f"at {os.path.basename(filename)}:{frame.f_lineno}{text}", library
        if kind == "library" and (library is None or "<locals>" not in _name(frame)):
            library = _name(frame)     # the function called, rather than its wrapper
        frame = frame.f_back
    return "", library
