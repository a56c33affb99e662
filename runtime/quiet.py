"""Prints and logging records muted in one thread while srcgrad runs a function again.

A transform may run the user's code more than once for one call: the safety net runs a call
again on the eager engine (and the plain function, to see its own error) after the compiled
code raised, and ``jacfwd`` and a Hessian run the derivative once per column.  Those passes
take the path the first one took, so the first one's prints and logging calls are the
function's; :func:`muted` drops those of the passes after it.  (Where compiled code fails
partway because of srcgrad itself, an internal error or a Python float the NumPy-float retry
answers, that call shows the prints made before the failure only.)  Only the thread inside
:func:`muted` is silenced: ``sys.stdout`` and ``sys.stderr`` are wrapped in gates that pass
other threads' writes through, and every logging handler gets a filter that drops this
thread's records, while some thread is muted.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
from collections.abc import Iterator
from typing import Any

__all__ = ["muted", "is_muted"]

_LOCAL = threading.local()
_LOCK = threading.Lock()
_state: dict[str, Any] = {"users": 0, "gates": {}, "handlers": []}


def is_muted() -> bool:
    """Whether this thread's prints and logging records are dropped now."""
    return getattr(_LOCAL, "depth", 0) > 0


class _Gate:
    """A text stream that drops the writes of a muted thread and passes the others on."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        return len(text) if is_muted() else self.stream.write(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if not is_muted():
            self.stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


class _Drop(logging.Filter):
    """Drops the records of a muted thread."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not is_muted()


_DROP = _Drop()


def _handlers() -> list[logging.Handler]:
    loggers = [logging.getLogger(), *(v for v in logging.Logger.manager.loggerDict.values()
                                      if isinstance(v, logging.Logger))]
    found = {id(h): h for lg in loggers for h in lg.handlers}
    if logging.lastResort is not None:
        found[id(logging.lastResort)] = logging.lastResort
    return list(found.values())


def _install() -> None:
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is not None and not isinstance(stream, _Gate):
            gate = _Gate(stream)
            _state["gates"][name] = gate
            setattr(sys, name, gate)
    handlers = [h for h in _handlers() if _DROP not in h.filters]
    for h in handlers:
        h.addFilter(_DROP)
    _state["handlers"] = handlers


def _uninstall() -> None:
    for name, gate in _state["gates"].items():
        if getattr(sys, name) is gate:            # not replaced by someone else meanwhile
            setattr(sys, name, gate.stream)
    for h in _state["handlers"]:
        h.removeFilter(_DROP)
    _state["gates"], _state["handlers"] = {}, []


@contextlib.contextmanager
def muted() -> Iterator[None]:
    """While inside, this thread's prints (to ``sys.stdout`` and ``sys.stderr``) and its
    logging records are dropped; other threads print and log as before."""
    with _LOCK:
        if _state["users"] == 0:
            _install()
        _state["users"] += 1
    _LOCAL.depth = getattr(_LOCAL, "depth", 0) + 1
    try:
        yield
    finally:
        _LOCAL.depth -= 1
        with _LOCK:
            _state["users"] -= 1
            if _state["users"] == 0:
                _uninstall()
