"""The random streams a compiled call draws from, and their states before it drew.

Compiled code draws through :func:`random_draw`.  While a call is watched (:func:`watching`),
the first draw from each stream records the stream's state, so that code which runs the
function again for the same call (the safety net's eager run, a Jacobian's next column) can
put every stream back (:func:`rewind`) and see the draws the first run saw.
"""

from __future__ import annotations

import contextlib
import contextvars
import copy
import functools
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from srcgrad.runtime.rules.primitives import NotCompiled

__all__ = ["GENERATORS", "random_draw", "watching", "rewind", "current", "candidates", "kept",
           "watched", "again", "Watch"]

GENERATORS = (np.random.RandomState, np.random.Generator)
"""The objects whose draws compiled code makes."""


class Watch:
    """The streams one call drew from, each with its state before the call's first draw."""

    def __init__(self) -> None:
        self.before: list[tuple[Any, Any]] = []
        self.draws = 0                        # how many draws compiled code made

    def touch(self, stream: Any) -> None:
        if not any(s is stream for s, _ in self.before):
            self.before.append((stream, _state(stream)))

    def include(self, candidates: list) -> None:
        """Note the state of streams the function may draw from by other code than the
        compiled (the eager engine's runs)."""
        for stream in candidates:
            self.touch(stream)

    def rewind(self) -> None:
        """Every stream drawn from back to its state before the call."""
        for stream, state in self.before:
            _set_state(stream, state)

    def states(self) -> list[tuple[Any, Any]]:
        """The streams' states now (to put back with :meth:`restore`)."""
        return [(stream, _state(stream)) for stream, _ in self.before]

    @staticmethod
    def moved(states: list[tuple[Any, Any]]) -> bool:
        """Whether a stream of ``states`` (from :meth:`states`) drew since: by any code, the
        compiled draws' helper or not."""
        return any(not _same(_state(stream), state) for stream, state in states)

    @staticmethod
    def restore(states: list[tuple[Any, Any]]) -> None:
        for stream, state in states:
            _set_state(stream, state)


_WATCH: contextvars.ContextVar[Watch | None] = contextvars.ContextVar(
    "srcgrad_random_streams", default=None)


@contextlib.contextmanager
def watching() -> Iterator[Watch]:
    """Watch the draws of the code run inside it (a call's own watch, even when nested)."""
    outer, watch = _WATCH.get(), Watch()
    token = _WATCH.set(watch)
    try:
        yield watch
    finally:
        _WATCH.reset(token)
        _merge(outer, watch)


def _merge(outer: Watch | None, watch: Watch) -> None:
    """What a nested call drew, the enclosing call drew too."""
    if outer is not None:
        for stream, state in watch.before:
            if not any(s is stream for s, _ in outer.before):
                outer.before.append((stream, state))


def watched(fn: Callable) -> Callable:
    """``fn`` run under a watch of its own (:func:`watching`, spelled out: it runs at every
    call of a transform, where a generator-based context manager costs a microsecond)."""
    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        outer, watch = _WATCH.get(), Watch()
        token = _WATCH.set(watch)
        try:
            return fn(*args, **kwargs)
        finally:
            _WATCH.reset(token)
            if outer is not None:
                _merge(outer, watch)
    return run


@contextlib.contextmanager
def again(watch: Watch | None) -> Iterator[None]:
    """Inside it, code that runs a watched call again after it returned (a vjp's backward
    pass that fails) sees the draws the call saw; the streams are left as the call left
    them."""
    if watch is None or not watch.before:
        yield
        return
    now = watch.states()
    token = _WATCH.set(watch)
    try:
        yield
    finally:
        _WATCH.reset(token)
        Watch.restore(now)


def current() -> Watch | None:
    """The watch of the call running, if any."""
    return _WATCH.get()


def kept(values: Any) -> Any:
    """A deep copy of ``values`` (never the caller's arrays) sharing their streams: a run on
    it draws from the caller's generators, as the function does."""
    watch = _WATCH.get()
    memo = {id(stream): stream for stream, _ in watch.before} if watch is not None else {}
    for value in values:
        if isinstance(value, GENERATORS):
            memo[id(value)] = value
    return copy.deepcopy(values, memo)


def rewind() -> None:
    """Put the streams the running call drew from back as they were before it (no call
    watched: nothing)."""
    watch = _WATCH.get()
    if watch is not None:
        watch.rewind()


def random_draw(owner: Any, name: str, *args: Any, **kwargs: Any) -> Any:
    """``owner.name(*args, **kwargs)``: a draw from a RandomState, a Generator or NumPy's
    global stream (``owner`` the ``np.random`` module); any other object is not compiled
    (the call runs eagerly)."""
    if owner is np.random:
        stream = np.random.mtrand._rand
    elif isinstance(owner, GENERATORS):
        stream = owner
    else:
        raise NotCompiled(f".{name}() of a {type(owner).__name__}: srcgrad compiles the "
                          "draws of np.random.RandomState and np.random.Generator objects")
    watch = _WATCH.get()
    if watch is not None:
        watch.touch(stream)
        watch.draws += 1
    return getattr(owner, name)(*args, **kwargs)


def candidates(fun: Any, values: Any) -> list:
    """The streams a run of ``fun`` on ``values`` may draw from that are in sight: NumPy's
    global one, and the RandomState and Generator objects among the values (and the items of
    their lists, tuples and dicts) and among the globals and closure variables ``fun`` names."""
    found: list = [np.random.mtrand._rand]
    seen: list = list(values)
    code = getattr(getattr(fun, "__func__", fun), "__code__", None)
    if code is not None:
        names = getattr(fun, "__globals__", {})
        seen += [names[n] for n in code.co_names if n in names]
        seen += [c.cell_contents for c in getattr(fun, "__closure__", None) or ()
                 if _filled(c)]
    visited: set[int] = set()
    while seen:
        value = seen.pop()
        if id(value) in visited:
            continue
        visited.add(id(value))
        if isinstance(value, GENERATORS) and not any(value is f for f in found):
            found.append(value)
        elif isinstance(value, (list, tuple)):
            seen += list(value)
        elif isinstance(value, dict):
            seen += list(value.values())
    return found


def _filled(cell: Any) -> bool:
    try:
        return cell.cell_contents is not _EMPTY
    except ValueError:                    # a closure variable not assigned yet
        return False


_EMPTY = object()


def _state(stream: Any) -> Any:
    if isinstance(stream, np.random.RandomState):
        return stream.get_state(legacy=False)
    return stream.bit_generator.state


def _same(a: Any, b: Any) -> bool:
    """Two states of a stream alike (dicts of numbers and arrays)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return bool(np.array_equal(a, b))
    return bool(a == b)


def _set_state(stream: Any, state: Any) -> None:
    if isinstance(stream, np.random.RandomState):
        stream.set_state(state)
    else:
        stream.bit_generator.state = state
