"""NumPy array subclasses: refused where their semantics differ from a plain array's.

``np.matrix`` makes ``*`` a matrix product, a masked array leaves its masked entries out of
``mean``, a ``chararray`` strips whitespace when it compares: differentiating such code with
a plain array's rules would give a wrong derivative without a word.  Only subclasses known
to keep the plain semantics are taken, by an allow-list: ``np.memmap`` (a plain array whose
memory is a file) is taken as a view of that memory (``np.asarray``: no copy, no write).
Every other ``np.ndarray`` subclass, NumPy's or not, raises a TypeError that names it.
"""

from __future__ import annotations

import types
from typing import Any

import numpy as np

__all__ = ["PLAIN_SUBCLASSES", "SubclassError", "refuse_subclass", "subclass_error", "plain",
           "makes_subclass"]


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


_MAKERS = ("numpy.ma", "numpy.matrixlib", "numpy.rec", "numpy.char")
"""NumPy's modules whose functions make the refused subclasses (np.ma.array, np.asmatrix,
np.rec.fromarrays, np.char.array)."""


def makes_subclass(f: Any) -> SubclassError | None:
    """The refusal of a call of ``f`` that makes a refused ndarray subclass (a function of
    np.ma, np.asmatrix, the class np.matrix itself), or None."""
    if isinstance(f, types.ModuleType):
        module = f.__name__
        if not module.startswith(_MAKERS):
            return None
    elif isinstance(f, type):
        if not issubclass(f, np.ndarray) or f is np.ndarray or f in PLAIN_SUBCLASSES:
            return None
        module = f.__module__
    else:
        module = getattr(f, "__module__", None) or ""
        if not isinstance(module, str) or not module.startswith(_MAKERS) and not any(
                f is g for g in (np.asmatrix, np.bmat)):     # exported as numpy's own
            return None
    name = f"{module}.{getattr(f, '__qualname__', getattr(f, '__name__', f))}"
    return SubclassError(f"srcgrad does not differentiate through {name}: it makes an ndarray "
                         f"subclass whose semantics differ from a plain array's (masked "
                         f"entries left out, * a matrix product), which the derivative rules "
                         f"of plain arrays would silently get wrong")
