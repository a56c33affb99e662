"""What a transform may be given as its function: a def or lambda, a method, an instance with
``__call__`` (compiled with the bound object in front), or anything else (the eager engine),
and how to call it with one value per parameter."""

from __future__ import annotations

import functools
import inspect
import sys
import types
from collections.abc import Callable
from typing import Any

from srcgrad.fallback import call_with  # how the eager engine calls it: one value a parameter

__all__ = ["target", "describe", "call_with"]


def target(fun: Any) -> tuple[Callable, tuple, str | None]:
    """The function to compile, the arguments bound in front of the caller's (a method's
    ``self``), and why it cannot compile (None: it may)."""
    api = sys.modules.get("srcgrad.api")    # read, not imported: srcgrad.api imports this module
    if api is not None and isinstance(fun, api.Transform):
        return fun, (), (f"{describe(fun)} is itself a srcgrad transform: higher-order "
                         "differentiation of a transform is not compiled yet (the eager "
                         "engine computes it)")
    if isinstance(fun, types.MethodType) and isinstance(fun.__func__, types.FunctionType):
        return fun.__func__, (fun.__self__,), None
    if isinstance(fun, types.FunctionType):
        return fun, (), None
    ours = (type(fun).__module__ or "").startswith("srcgrad")      # srcgrad.compile, ...
    call = None if isinstance(fun, functools.partial) or ours else inspect.getattr_static(
        type(fun), "__call__", None)
    if isinstance(call, types.FunctionType):
        return call, (fun,), None                        # an instance with __call__
    what = "a functools.partial" if isinstance(fun, functools.partial) else \
        f"a {type(fun).__name__}"
    return fun, (), (f"{describe(fun)} is {what}, not a function defined with def or lambda; "
                     "srcgrad compiles functions (wrap it: lambda x: f(x, ...))")


def describe(fun: Any) -> str:
    name = getattr(fun, "__qualname__", None) or getattr(fun, "__name__", None)
    if isinstance(name, str):
        return name
    inner = getattr(fun, "func", None)
    return f"functools.partial({describe(inner)})" if inner is not None else \
        type(fun).__name__
