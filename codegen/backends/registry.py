"""The backends users name: ``backend="numpy"`` (the default), ``"numba"``, ``"cupy"``,
``"dask"``, and ``"auto"``, which picks one at each call by the arrays passed.

The transforms look a backend up here and then ask the :class:`Backend` object what they
need; none of them spells a backend's name.  The list of names is kept here alone.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import pathlib
from typing import Any

from srcgrad.codegen.backends.base import CUPY, DASK, MATH, NUMBA, NUMPY, Backend, as_backend

__all__ = ["REGISTERED", "AUTO", "NAMES", "KNOWN", "DEFAULT_BACKEND", "LIBRARIES", "BOUND_NAMES",
           "backend", "array_backend", "for_arrays", "reserved_names"]

REGISTERED: tuple[Backend, ...] = (NUMPY, NUMBA, CUPY, DASK)
"""The array libraries a transform's code may call, in the order users are told them."""

AUTO = Backend("auto", NUMPY.module, NUMPY.alias, specialises_shapes=False, by_arrays=True,
               unfused_as=NUMPY)
"""Not a library: the transform of the backend the arguments' arrays belong to, built at
the call (:func:`for_arrays`)."""

NAMES: tuple[str, ...] = tuple(b.name for b in REGISTERED)
KNOWN: tuple[str, ...] = (*NAMES, AUTO.name)
"""What ``backend=`` accepts."""

DEFAULT_BACKEND = NUMPY.name

_PREFERRED = (DASK, CUPY)
"""Whom ``"auto"`` picks, the first that any argument asks for; NumPy otherwise."""

_ARRAY_CLASSES = frozenset(b.array_class for b in REGISTERED if b.array_class is not None)

LIBRARIES = frozenset({b.module.partition(".")[0] for b in REGISTERED}
                      | {b.library for b in REGISTERED if b.library is not None})
"""The top-level packages of the backends' libraries."""

BOUND_NAMES = frozenset({NUMPY.alias, CUPY.alias, DASK.alias, MATH.name, NUMBA.name})
"""The module names a generated module may bind for its backend (``np``, ``math`` ...)."""


def backend(name: Any) -> Backend:
    """The backend a user named; a ValueError listing the known names for anything else."""
    if name not in KNOWN:
        raise ValueError(f"unknown backend {name!r}; the known backends are "
                         f"{', '.join(map(repr, KNOWN))}")
    return AUTO if name == AUTO.name else as_backend(name)


def array_backend(x: Any) -> Backend | None:
    """The backend whose library made the array ``x`` (CuPy's, Dask's: told by its class,
    without importing the library), or None (NumPy's arrays, and anything else)."""
    if type(x).__name__ not in _ARRAY_CLASSES:
        return None
    return next((b for b in REGISTERED if b.owns(x)), None)


def for_arrays(leaves: list) -> Backend:
    """The backend ``"auto"`` runs on for arguments with these leaves."""
    return next((b for b in _PREFERRED if any(b.picks(a) for a in leaves)), NUMPY)


@functools.cache
def reserved_names() -> frozenset[str]:
    """Every name generated code binds or reads for itself, whatever its backend: the array
    modules, what a backend's kernels bind, the helpers a backend's modules may define, the
    helpers copied into every module, and ``_`` (an unused item unpacked)."""
    from srcgrad.codegen.common import support
    names = set(BOUND_NAMES) | {"_"} | {n for n in dir(support) if not n.startswith("__")}
    for b in REGISTERED:
        names |= set(b.reserved)
        if b.helper_module is not None:
            names |= _defined_in(b.helper_module)
    return frozenset(names)


def _defined_in(module: str) -> set[str]:
    """The top-level functions of a module of helper sources, read from its text (importing
    it would import its library, which may be missing)."""
    spec = importlib.util.find_spec(module)
    tree = ast.parse(pathlib.Path(spec.origin).read_text(encoding="utf-8"))
    return {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
