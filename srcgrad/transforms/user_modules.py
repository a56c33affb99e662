"""The user's modules an eager run reaches: where it shows NumPy through stand-ins.

The eager fallback runs the user's code on the engine's Arrays, and shows NumPy and SciPy to
that code through stand-ins (:mod:`srcgrad.transforms.eager_lists`).  The code that runs is
not only the differentiated function's module: its helpers may live in the user's other
modules (``from layers import affine_forward``, ``import model``), which preallocate with
``np.zeros`` and call SciPy as well.  Those modules are found from the function's globals,
following the functions, classes, objects and modules they hold to the user's modules they
come from (never a library's: NumPy, SciPy, the standard library, srcgrad), transitively, up
to a bound.
"""

from __future__ import annotations

import functools
import inspect
import sys
import types
from typing import Any

from srcgrad.runtime.eager.constants import user_file

__all__ = ["namespace_of", "user_namespaces"]

_MOST = 32                 # modules swapped for one run, at most


def namespace_of(fun: Any) -> dict | None:
    """The globals the function's code reads (of a method, a partial, a callable object)."""
    for _ in range(8):
        if isinstance(fun, functools.partial):
            fun = fun.func
        elif inspect.ismethod(fun):
            fun = fun.__func__
        elif isinstance(fun, types.FunctionType):
            return fun.__globals__
        elif isinstance(vars(type(fun)).get("__call__"), types.FunctionType):
            fun = vars(type(fun))["__call__"]          # a callable object
        else:
            return None
    return None


def _globals_of(value: Any) -> dict | None:
    """The globals of the user's module ``value`` is, or comes from (None: a library's)."""
    if isinstance(value, types.ModuleType):
        namespace, filename = value.__dict__, getattr(value, "__file__", None)
    elif isinstance(value, types.FunctionType):
        namespace, filename = value.__globals__, value.__code__.co_filename
    else:
        cls = value if isinstance(value, type) else type(value)
        module = sys.modules.get(getattr(cls, "__module__", None) or "")
        if module is None:
            return None
        namespace, filename = module.__dict__, getattr(module, "__file__", None)
    return namespace if filename and user_file(filename) else None


def user_namespaces(fun: Any) -> list[dict]:
    """The globals of ``fun``'s module first, then those of the user's modules it reaches."""
    first = namespace_of(fun)
    if first is None:
        return []
    found, queue = {id(first): first}, [first]
    while queue and len(found) < _MOST:
        for value in list(queue.pop(0).values()):
            namespace = _globals_of(value)
            if namespace is not None and id(namespace) not in found and len(found) < _MOST:
                found[id(namespace)] = namespace
                queue.append(namespace)
    return list(found.values())
