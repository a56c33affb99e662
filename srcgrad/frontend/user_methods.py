"""User methods and functions as defaults, looked up when compiling: ``model.loss`` bound to
an object known when compiling (a global, a closure variable, the object of the bound method
differentiated), and ``def f(a, _r=np.sum)``, whose default is bound when compiling (the
transform and the snapshot of :mod:`srcgrad.frontend.freshness` watch it).  Their calls are
lowered by :class:`srcgrad.frontend.user_calls.UserCalls`.
"""

from __future__ import annotations

import inspect
import types
from typing import Any

import numpy as np

from srcgrad.frontend.callees import is_library
from srcgrad.frontend.freshness import resolved

__all__ = ["user_method", "static_default", "takes_function"]


def user_method(obj: Any, attr: str) -> types.MethodType | None:
    """``obj.attr`` when it is a user function bound to ``obj`` (a method) or to its class
    (a classmethod); None for anything else (data, library objects, modules)."""
    if isinstance(obj, types.ModuleType) or is_library(type(obj)) and not isinstance(obj, type):
        return None
    try:
        value = getattr(obj, attr)
    except Exception:  # noqa: BLE001 - a property that raises: not a method
        return None
    if isinstance(value, types.MethodType) and isinstance(value.__func__, types.FunctionType) \
            and (value.__self__ is obj or value.__self__ is type(obj)) and \
            not is_library(value.__func__):
        resolved(obj, attr, value)                         # bound now: watched
        return value
    return None


def static_default(fn: Any, name: str) -> Any:
    """The default of ``fn``'s parameter ``name`` when it is a function bound when compiling
    (``_r=np.sum``), else None."""
    try:
        default = inspect.signature(fn).parameters[name].default
    except (TypeError, ValueError, KeyError):
        return None
    return default if takes_function(default) else None


def takes_function(value: Any) -> bool:
    return callable(value) and value is not inspect.Parameter.empty and not isinstance(
        value, np.ndarray)
