"""Writes into a dict argument, refused on the eager engine.

The eager fallback runs the function on private copies of its arguments: nothing the caller
passed is ever written.  A function that stores into a dict it was passed (``bn_param['x'] =
v``, ``params.update(...)``) would then leave the caller's dict as it was, where the plain
function changes it.  That difference is not made silently: the copies of the dicts are
:class:`WatchedDict`, which raise a ``CompileError`` naming the file and line of the write,
on the path the code takes (reads, ``dict(d)`` and ``d.copy()`` are plain dicts as ever).
"""

from __future__ import annotations

import copy
import linecache
import sys
from typing import Any

from srcgrad.errors import CompileError, Location

__all__ = ["WatchedDict", "watched"]


class WatchedDict(dict):
    """A private copy of a dict argument: reading it is reading a dict; changing it raises."""

    def _refuse(self, how: str) -> None:
        frame = sys._getframe(2)
        code = frame.f_code
        line = linecache.getline(code.co_filename, frame.f_lineno)
        indent = len(line) - len(line.lstrip())
        where = Location(code.co_filename, frame.f_lineno, indent, len(line.rstrip()), line,
                         code.co_name)
        raise CompileError(f"{how} changes a dict the function was passed; srcgrad never "
                           "writes into the caller's arguments, so it does not differentiate "
                           "this call (build a new dict: q = dict(d); q[k] = v)", where)

    def __setitem__(self, key: Any, value: Any) -> None:
        self._refuse(f"storing the key {key!r}")

    def __delitem__(self, key: Any) -> None:
        self._refuse(f"deleting the key {key!r}")

    def __ior__(self, other: Any) -> Any:
        self._refuse("|=")

    def update(self, *args: Any, **kwargs: Any) -> None:
        self._refuse(".update()")

    def pop(self, *args: Any) -> Any:
        self._refuse(".pop()")

    def popitem(self) -> Any:
        self._refuse(".popitem()")

    def setdefault(self, key: Any, default: Any = None) -> Any:
        if key in self:
            return self[key]
        self._refuse(f".setdefault({key!r}, ...)")

    def clear(self) -> None:
        self._refuse(".clear()")

    def __copy__(self) -> dict:                # copies are the function's own: plain dicts
        return dict(self)

    def __deepcopy__(self, memo: dict) -> dict:
        return copy.deepcopy(dict(self), memo)

    def __reduce__(self) -> tuple:
        return dict, (dict(self),)


def watched(value: Any) -> Any:
    """``value`` with each dict in it (in lists and tuples too) a :class:`WatchedDict`."""
    if type(value) is dict:
        return WatchedDict((k, watched(v)) for k, v in value.items())
    if type(value) in (list, tuple):
        return type(value)(watched(v) for v in value)
    return value
