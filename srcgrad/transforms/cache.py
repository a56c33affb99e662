"""Transforms made again for the same function are reused, as ``jax.jit`` caches by function.

HIPS autograd's users write ``grad(f)(x)`` inline, inside a training loop; each call would
otherwise parse, lower and emit ``f`` anew.  :data:`TRANSFORMS` maps a function and the
transform's options to the transform already made for them.

A function is known by what decides its behaviour, not by its identity alone, so that a fresh
``lambda`` made again by the same line, over the same values, finds its transform: its code,
its module's globals, the objects its closure cells and defaults hold, and what it wraps.  The
entry keeps those objects alive, so no identity in a key is ever reused by another object while
the entry stands.  The map is bounded (least recently used entries go first), and a rule
registered since (``srcgrad.defvjp``) makes every entry stale.
"""

from __future__ import annotations

import threading
import types
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, TypeVar

from srcgrad.runtime.rules.primitives import rules_generation

__all__ = ["TRANSFORMS", "TransformCache"]

T = TypeVar("T")


def _held(fun: Any) -> tuple[Any, list] | None:
    """``(key, objects the key names by identity)`` for ``fun``, or None to never cache it."""
    if isinstance(fun, types.MethodType):
        inner = _held(fun.__func__)
        if inner is None:
            return None
        return ("method", inner[0], id(fun.__self__)), [*inner[1], fun.__self__]
    if not isinstance(fun, types.FunctionType):
        return ("object", id(fun)), [fun]
    cells = tuple(c.cell_contents if _filled(c) else _EMPTY for c in fun.__closure__ or ())
    defaults = fun.__defaults__ or ()
    keywords = tuple(sorted((fun.__kwdefaults__ or {}).items()))
    wrapped = fun.__dict__.get("__wrapped__")
    held = [fun.__globals__, *cells, *defaults, *(v for _, v in keywords), wrapped]
    key = ("function", fun.__code__, id(fun.__globals__), tuple(map(id, cells)),
           tuple(map(id, defaults)), tuple((k, id(v)) for k, v in keywords), id(wrapped))
    return key, held


_EMPTY = object()          # a closure cell not yet filled


def _filled(cell: types.CellType) -> bool:
    try:
        cell.cell_contents       # noqa: B018 - reading it is the test
    except ValueError:
        return False
    return True


class TransformCache:
    """A bounded, least-recently-used map from (function, options) to a transform."""

    def __init__(self, size: int = 256) -> None:
        self.size = size
        self._entries: OrderedDict[Any, tuple[Any, list]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, fun: Any, options: tuple, make: Callable[[], T]) -> T:
        """The transform made for ``fun`` with ``options``, made by ``make`` the first time.

        A function that cannot be keyed (unhashable options) gets a new transform each time;
        ``make``'s exceptions (a strict refusal) propagate and nothing is kept."""
        held = _held(fun)
        try:
            key = None if held is None else (held[0], options, rules_generation())
            hash(key)
        except TypeError:
            key = None
        if key is None:
            return make()
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
                return entry[0]
        made = make()
        with self._lock:
            entry = self._entries.setdefault(key, (made, [fun, *held[1]]))
            self._entries.move_to_end(key)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)
        return entry[0]

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


TRANSFORMS = TransformCache(size=64)
