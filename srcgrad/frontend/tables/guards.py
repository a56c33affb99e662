"""Helpers the generated code calls for ``try``/``except`` and ``with`` blocks: which handler
an exception of a try body selects, and a copy of the warnings state with the filters a block
sets.  Their results carry no gradient (``GUARDS``, joined to the no-gradient calls)."""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from typing import Any

__all__ = ["probe", "caught_warnings", "GUARDS"]


def probe(thunk: Any, *handlers: tuple) -> int:
    """The index of the first of ``handlers`` (tuples of exception classes) that catches what
    ``thunk()`` raises; -1 when it raises nothing (any other exception goes through)."""
    try:
        thunk()
    except tuple(c for kinds in handlers for c in kinds) as error:
        return next(i for i, kinds in enumerate(handlers) if isinstance(error, kinds))
    return -1


@contextlib.contextmanager
def caught_warnings(filters: Any) -> Iterator[None]:
    """``warnings.catch_warnings()`` with the filters ``filters()`` sets, for a block."""
    with warnings.catch_warnings():
        filters()
        yield


GUARDS = {probe: "the handler a try body's exception selects",
          caught_warnings: "a copy of the warnings filters"}
"""The helpers, as no-gradient calls (→ why): a derivative of generated code keeps them."""
