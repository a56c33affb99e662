"""What every transform shares: the function it transforms, the backend it compiles for (looked
up once in the registry), ``strict``, why it runs on the eager engine, and the one place that
says so: a ``FallbackWarning``, or with ``strict=True`` the ``CompileError`` instead; and
:func:`show`, which prints what a transform runs."""

from __future__ import annotations

import functools
import sys
import warnings
from collections.abc import Callable
from typing import Any

from srcgrad.codegen import backend as backend_named
from srcgrad.errors import CompileError, FallbackWarning, NoFallback, advice_for
from srcgrad.ir import GENERATED
from srcgrad.transforms.callables import describe

__all__ = ["BaseTransform", "show"]

_UNSET: Any = object()


class BaseTransform:
    """A transform of a function: ``grad`` and its kin, ``jvp``, the Jacobians, ``compile``.

    ``backend`` is the name the user gave, ``_backend`` the registry's Backend of that name
    (the hooks the transform asks); ``fallback_reason`` is None while the compiled code
    serves, else why the transform runs on the eager engine."""

    fallback_reason: str | None = None
    eager_seconds: float | None = None
    """How long the first call run on the eager engine took (None: none has run yet)."""

    def __init__(self, fun: Callable, *, backend: str, strict: bool,
                 updated: tuple[str, ...] = ()) -> None:
        self._backend = backend_named(backend)
        functools.update_wrapper(self, fun, updated=updated)
        self.backend, self.strict = backend, strict

    @property
    def _name(self) -> str:
        """The transformed function's name, as messages say it."""
        return describe(self.__wrapped__)

    def fall_back(self, reason: str | CompileError, *, of: str | None = None,
                  arguments: bool = False, once: bool = False,
                  strictly: str | None = None, cause: BaseException | None = _UNSET) -> None:
        """Say that the transform runs on the eager engine because of ``reason``: one
        ``FallbackWarning`` for ``of`` (the function, by default), ``arguments``: for the
        arguments of this call; ``once``: only while ``fallback_reason`` is unset, which
        then keeps the reason.  The warning points at the user's line that led here.  With
        ``strict``, or a ``NoFallback`` reason, it raises instead: a CompileError given as it
        is, else a CompileError of ``strictly`` (by default the reason) from ``cause``."""
        if self.strict or isinstance(reason, NoFallback):
            if isinstance(reason, CompileError):
                raise reason
            error = CompileError(reason if strictly is None else strictly)
            if cause is _UNSET:
                raise error
            raise error from cause
        if once:
            if self.fallback_reason is not None:
                return
            self.fallback_reason = str(reason)
        where = " with these arguments" if arguments else ""
        advice = reason.advice if isinstance(reason, CompileError) else advice_for(reason)
        change = f"\n  to compile it: {advice}" if advice else ""
        warnings.warn(f"srcgrad falls back to the eager engine for {of or self._name}{where}: "
                      f"{reason}{change}\n  cost: {_COST}; srcgrad.explain("
                      f"{self._name.rpartition('<locals>.')[2]}) lists every refusal",
                      FallbackWarning, stacklevel=_user_frame())


_COST = ("each such call runs on the eager engine, which records every operation as it runs: "
         "in benchmarks/compiled_gradients.py about 1.5x the compiled time on large arrays, "
         "7x on a small MLP, over 100x on Python floats (.eager_seconds: this function's "
         "first eager call)")
"""What a fallback costs, as the project's benchmark measured it (not this function)."""


def _user_frame() -> int:
    """How far up from the caller the first frame outside srcgrad and its generated code is,
    as ``warnings.warn``'s ``stacklevel`` counts."""
    frame, level = sys._getframe(2), 2
    while frame is not None and _ours(frame.f_globals.get("__name__") or ""):
        frame, level = frame.f_back, level + 1
    return level


def _ours(module: str) -> bool:
    return module == "srcgrad" or module.startswith(("srcgrad.", GENERATED))

def show(fn: Any) -> None:
    """Print a transformed function's generated source (or why it fell back)."""
    source = getattr(fn, "source", None)
    seconds = getattr(fn, "eager_seconds", None)
    took = f" (its first eager call took {seconds * 1e3:.3g} ms)" if seconds is not None else ""
    print(source if source is not None else f"# {getattr(fn, '__qualname__', fn)} runs on the "
          f"eager engine{took}: {getattr(fn, 'fallback_reason', 'not a srcgrad transform')}")
