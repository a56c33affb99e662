"""The eager engine runs the user's function on copies of the caller's objects.

Arrays and containers of arrays the caller passed are handed to the function as private
copies already (:mod:`srcgrad.transforms.fallback`); an argument that is (or holds) an object
of a user class is deep-copied here, so that a method writing ``self.W *= 2`` or
``self.hs[t] = h`` changes the copy, never the caller's object.  An object that cannot be
copied is refused, naming the argument.  A global (or closure) object the function writes
into is the function's own business, but no engine value may stay in it: after the run, the
recorded arrays left in its attributes, lists and dicts are replaced by their plain arrays.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from srcgrad.errors import CompileError
from srcgrad.frontend.objects import is_user_object
from srcgrad.runtime.eager.ndarray import as_array_constant
from srcgrad.runtime.eager.tensor import Tensor

__all__ = ["private_objects", "plain_globals"]

_DEPTH = 6


def _holds_object(value: Any, depth: int) -> bool:
    if depth == 0:
        return False
    if is_user_object(value):
        return True
    if isinstance(value, (list, tuple, set, frozenset)):
        return any(_holds_object(v, depth - 1) for v in value)
    if isinstance(value, dict):
        return any(_holds_object(v, depth - 1) for v in value.values())
    return False


def private_objects(values: list | tuple, recorded: bool = False) -> list:
    """``values`` with each argument that is, or holds, a user object deep-copied;
    ``recorded``: the float arrays in the copy are the engine's Arrays without grad (as the
    arrays passed are), so that a method's in-place write of a recorded value is recorded."""
    out = []
    for i, value in enumerate(values):
        if _holds_object(value, _DEPTH):
            try:
                value = copy.deepcopy(value)
            except Exception as exc:  # noqa: BLE001 - any failure to copy is the refusal
                raise CompileError(
                    f"srcgrad runs this function on the eager engine on a copy of each "
                    f"argument object, so that the caller's is never changed; argument "
                    f"#{i + 1} (a {type(value).__qualname__}) cannot be copied "
                    f"(copy.deepcopy raised {type(exc).__name__}: {exc})") from None
            if recorded:
                value = _engine_arrays(value, set(), _DEPTH)
        out.append(value)
    return out


def plain_globals(fun: Any) -> None:
    """Replace the engine's recorded arrays left in the global and closure objects ``fun``
    reads (and in those of the functions and objects they hold) by their plain arrays."""
    seen: set[int] = set()
    for value in _free_values(fun, seen, 3):
        _scrub(value, seen, _DEPTH)


def _free_values(fun: Any, seen: set[int], depth: int) -> list:
    fun = getattr(fun, "__func__", fun)
    code = getattr(fun, "__code__", None)
    if code is None or depth == 0 or id(fun) in seen:
        return []
    seen.add(id(fun))
    spaces = getattr(fun, "__globals__", {})
    found = [spaces[n] for n in code.co_names if n in spaces]
    found += [c.cell_contents for c in (getattr(fun, "__closure__", None) or ())
              if _filled(c)]
    out = []
    for value in found:
        if callable(value) and hasattr(getattr(value, "__func__", value), "__code__"):
            out += _free_values(value, seen, depth - 1)
        elif is_user_object(value) or isinstance(value, (list, dict)):
            out.append(value)
    return out


def _filled(cell: Any) -> bool:
    try:
        return cell.cell_contents is not _EMPTY
    except ValueError:
        return False


_EMPTY = object()


def _engine_arrays(value: Any, seen: set[int], depth: int) -> Any:
    """``value`` (a private copy) with its float arrays the engine's, in place."""
    if type(value) is np.ndarray:
        return as_array_constant(value) if value.dtype.kind == "f" else value
    if depth == 0 or id(value) in seen:
        return value
    seen.add(id(value))
    if isinstance(value, list):
        value[:] = [_engine_arrays(v, seen, depth - 1) for v in value]
    elif type(value) is dict:
        for k, v in list(value.items()):
            value[k] = _engine_arrays(v, seen, depth - 1)
    elif type(value) is tuple:
        return tuple(_engine_arrays(v, seen, depth - 1) for v in value)
    elif is_user_object(value) and isinstance(getattr(value, "__dict__", None), dict):
        attrs = value.__dict__
        for k, v in list(attrs.items()):
            attrs[k] = _engine_arrays(v, seen, depth - 1)
    return value


def _scrub(value: Any, seen: set[int], depth: int) -> Any:
    """``value`` as plain (a Tensor's array), its attributes and items made plain in place."""
    if isinstance(value, Tensor):
        return value._data
    if depth == 0 or id(value) in seen:
        return value
    seen.add(id(value))
    if isinstance(value, list):
        value[:] = [_scrub(v, seen, depth - 1) for v in value]
    elif isinstance(value, dict):
        for k, v in list(value.items()):
            value[k] = _scrub(v, seen, depth - 1)
    elif is_user_object(value) and isinstance(getattr(value, "__dict__", None), dict):
        attrs = value.__dict__
        for k, v in list(attrs.items()):
            attrs[k] = _scrub(v, seen, depth - 1)
    return value
