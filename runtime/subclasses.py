"""NumPy array subclasses: refused where their semantics differ from a plain array's.

``np.matrix`` makes ``*`` a matrix product, a masked array leaves its masked entries out of
``mean``, a ``chararray`` strips whitespace when it compares: differentiating such code with
a plain array's rules would give a wrong derivative without a word.  Only subclasses known
to keep the plain semantics are taken, by an allow-list: ``np.memmap`` (a plain array whose
memory is a file) is taken as a view of that memory (``np.asarray``: no copy, no write).
Every other ``np.ndarray`` subclass, NumPy's or not, raises a TypeError that names it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["PLAIN_SUBCLASSES", "SubclassError", "refuse_subclass", "subclass_error", "plain"]


class SubclassError(TypeError):
    """An ndarray subclass srcgrad does not take (a TypeError, as NumPy's own refusals)."""

PLAIN_SUBCLASSES: dict[type, str] = {
    np.memmap: "a plain array whose memory is a file: taken as np.asarray(x), a view of it",
}
"""The ndarray subclasses taken, each with why its semantics are a plain array's."""

_WHY: dict[type, str] = {
    np.matrix: "its * and ** are matrix products and it stays 2-D",
    np.ma.MaskedArray: "its reductions and arithmetic leave the masked entries out",
    np.char.chararray: "it strips trailing whitespace and compares as strings",
    np.recarray: "its fields are read as attributes and its records are not numbers",
}


def subclass_error(value: Any, where: str = "") -> SubclassError | None:
    """The TypeError for an ndarray subclass that is not on the allow-list, or None."""
    kind = type(value)
    if kind is np.ndarray or not isinstance(value, np.ndarray) or kind in PLAIN_SUBCLASSES:
        return None
    why = next((w for base, w in _WHY.items() if isinstance(value, base)),
               "srcgrad does not know that it keeps NumPy's plain array semantics")
    place = f" ({where})" if where else ""
    name = f"{kind.__module__}.{kind.__qualname__}"
    return SubclassError(f"srcgrad does not take a {name}{place}: {why}, which the derivative "
                     f"rules of plain arrays would silently get wrong. Pass np.asarray(x) if "
                     f"the plain array semantics are meant")


def refuse_subclass(value: Any, where: str = "") -> None:
    """Raise the TypeError of :func:`subclass_error` for ``value``, if any."""
    error = subclass_error(value, where)
    if error is not None:
        raise error


def plain(value: Any, where: str = "") -> Any:
    """``value`` itself, or the plain view of an allowed subclass (raises for the others)."""
    if type(value) is np.ndarray or not isinstance(value, np.ndarray):
        return value
    refuse_subclass(value, where)
    return np.asarray(value)
