"""Writes into a dict argument, made into the eager run's private copy, with a warning.

The eager fallback runs the function on private copies of its arguments: nothing the caller
passed is ever written.  A function that stores into a dict it was passed (``bn_param['x'] =
v``, ``params.update(...)``) changes that copy, as a method writing ``self.x`` changes its
copy of the object: the run reads back what it wrote, and its gradient is the plain
function's.  The caller's dict is left as it was, where the plain function changes it; that
difference is not made silently: the first write at each line warns (an
:class:`ArgumentWriteWarning` naming the file and line of the write).  Reads, ``dict(d)`` and
``d.copy()`` are plain dicts as ever.
"""

from __future__ import annotations

import copy
import linecache
import sys
import warnings
from typing import Any

from srcgrad.errors import ArgumentWriteWarning, CompileError, Location

__all__ = ["WatchedDict", "watched"]


class WatchedDict(dict):
    """A private copy of a dict argument: a dict whose changes warn that the caller's dict
    does not see them.  A change is refused (a ``CompileError`` at the write) where the copy
    would part from what the plain function reads: the caller's dict passed twice (two copies
    of one dict), or also read as a global of the function's module."""

    def __init__(self, items: Any, original: dict, shared: bool) -> None:
        super().__init__(items)
        self._original, self._shared = original, shared

    def _warn(self, how: str) -> None:
        frame = sys._getframe(2)
        code = frame.f_code
        also = "passed in two places" if self._shared else next(
            (f"the global {n!r}" for n, v in frame.f_globals.items() if v is self._original),
            None)
        if also is not None:
            line = linecache.getline(code.co_filename, frame.f_lineno)
            indent = len(line) - len(line.lstrip())
            raise CompileError(
                f"{how} changes a dict the function was passed, which is also {also}; "
                "srcgrad never writes into the caller's arguments, and its private copy "
                "would part from what the function reads there, so it does not "
                "differentiate this call (build a new dict: q = dict(d); q[k] = v)",
                Location(code.co_filename, frame.f_lineno, indent, len(line.rstrip()), line,
                         code.co_name))
        warnings.warn_explicit(
            f"{how} changes the private copy srcgrad made of a dict the function was passed; "
            "srcgrad never writes into the caller's arguments, so the caller's dict is left "
            "as it was (the gradient is the plain function's: the run reads what it wrote). "
            "Call the function itself to update the dict", ArgumentWriteWarning,
            code.co_filename, frame.f_lineno, frame.f_globals.get("__name__") or code.co_filename)

    def __setitem__(self, key: Any, value: Any) -> None:
        self._warn(f"storing the key {key!r}")
        dict.__setitem__(self, key, value)

    def __delitem__(self, key: Any) -> None:
        self._warn(f"deleting the key {key!r}")
        dict.__delitem__(self, key)

    def __ior__(self, other: Any) -> Any:
        self._warn("|=")
        return dict.__ior__(self, other)

    def update(self, *args: Any, **kwargs: Any) -> None:
        self._warn(".update()")
        dict.update(self, *args, **kwargs)

    def pop(self, *args: Any) -> Any:
        self._warn(".pop()")
        return dict.pop(self, *args)

    def popitem(self) -> Any:
        self._warn(".popitem()")
        return dict.popitem(self)

    def setdefault(self, key: Any, default: Any = None) -> Any:
        if key not in self:
            self._warn(f".setdefault({key!r}, ...)")
        return dict.setdefault(self, key, default)

    def clear(self) -> None:
        self._warn(".clear()")
        dict.clear(self)

    def __copy__(self) -> dict:                # copies are the function's own: plain dicts
        return dict(self)

    def __deepcopy__(self, memo: dict) -> dict:
        return copy.deepcopy(dict(self), memo)

    def __reduce__(self) -> tuple:
        return dict, (dict(self),)


def watched(copies: list, originals: list) -> list:
    """The arguments ``copies`` (private copies of ``originals``, item for item) with each
    dict in them (in lists and tuples too) a :class:`WatchedDict`."""
    seen: dict[int, int] = {}
    for value in originals:
        _count(value, seen)
    shared = {k for k, n in seen.items() if n > 1}
    return [_watched(c, o, shared) for c, o in zip(copies, originals)]


def _count(value: Any, seen: dict[int, int]) -> None:
    if type(value) is dict:
        seen[id(value)] = seen.get(id(value), 0) + 1
        for v in value.values():
            _count(v, seen)
    elif type(value) in (list, tuple):
        for v in value:
            _count(v, seen)


def _watched(value: Any, original: Any, shared: set[int]) -> Any:
    if type(value) is dict and type(original) is dict and value.keys() == original.keys():
        return WatchedDict(((k, _watched(v, original[k], shared)) for k, v in value.items()),
                           original, id(original) in shared)
    if type(value) in (list, tuple) and type(original) in (list, tuple) and \
            len(value) == len(original):
        return type(value)(_watched(v, o, shared) for v, o in zip(value, original))
    return value
