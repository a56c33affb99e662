"""Helpers the generated code calls for ``try``/``except`` and ``with`` blocks: which handler
the exception a try body raised selects, and a copy of the warnings state with the filters a
block sets.  Their results carry no gradient (``GUARDS``, joined to the no-gradient calls)."""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from typing import Any

__all__ = ["handler_index", "caught_warnings", "GUARDS"]


def handler_index(error: Any, *handlers: tuple) -> int:
    """The index of the first of ``handlers`` (tuples of exception classes) that catches
    ``error``, the exception the try body raised; -1 when it raised none (``error`` None).
    A refusal of the compiled code itself (``not_compiled``) is raised again, for the safety
    net: no handler of the user's catches it."""
    if error is None:
        return -1
    if getattr(error, "not_compiled", False):
        raise error
    return next(i for i, kinds in enumerate(handlers) if isinstance(error, kinds))


@contextlib.contextmanager
def caught_warnings(filters: Any) -> Iterator[None]:
    """``warnings.catch_warnings()`` with the filters ``filters()`` sets, for a block."""
    with warnings.catch_warnings():
        filters()
        yield


GUARDS = {handler_index: "the handler a try body's exception selects",
          caught_warnings: "a copy of the warnings filters"}
"""The helpers, as no-gradient calls (→ why): a derivative of generated code keeps them."""
