"""Grad mode: whether operations on Tensors are recorded for backward (thread-local).

``no_grad``, ``enable_grad``, ``set_grad_enabled`` and ``inference_mode`` work as context
managers and as decorators, as in PyTorch.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["is_grad_enabled", "no_grad", "enable_grad", "set_grad_enabled", "inference_mode",
           "is_inference_mode_enabled"]

F = TypeVar("F", bound=Callable[..., Any])


class _State(threading.local):
    def __init__(self) -> None:
        self.enabled = True
        self.inference = False


_state = _State()


def is_grad_enabled() -> bool:
    """True when new operations on Tensors that require grad are recorded."""
    return _state.enabled


def is_inference_mode_enabled() -> bool:
    return _state.inference


class _GradModeContext:
    """Base for the grad-mode switches: a context manager that is also a decorator."""

    enter_mode: bool = True

    def __new__(cls, orig_func: Callable | None = None) -> Any:
        # ``@no_grad`` without parentheses decorates at once, as in PyTorch
        if cls is not set_grad_enabled and callable(orig_func):
            return cls()(orig_func)
        return super().__new__(cls)

    def __enter__(self) -> None:
        self._prev = (_state.enabled, _state.inference)
        _state.enabled = self.enter_mode

    def __exit__(self, *exc: object) -> None:
        _state.enabled, _state.inference = self._prev

    def clone(self) -> _GradModeContext:
        return self.__class__()

    def __call__(self, fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self.clone():
                return fn(*args, **kwargs)
        return wrapper  # type: ignore[return-value]


class no_grad(_GradModeContext):
    """Disable recording: results of operations do not require grad."""

    enter_mode = False


class enable_grad(_GradModeContext):
    """Enable recording (inside a ``no_grad`` block, for instance)."""

    enter_mode = True


class set_grad_enabled(_GradModeContext):
    """Set grad mode to ``mode``; takes effect at once, as in PyTorch, and as a context."""

    def __new__(cls, mode: bool) -> set_grad_enabled:
        return object.__new__(cls)

    def __init__(self, mode: bool) -> None:
        self.mode = bool(mode)
        self._prev = (_state.enabled, _state.inference)
        _state.enabled = self.mode

    def __enter__(self) -> None:
        pass

    def clone(self) -> set_grad_enabled:
        return self.__class__(self.mode)

    def __call__(self, fn: F) -> F:
        _state.enabled = self._prev[0]    # used as a decorator: undo the eager switch
        return super().__call__(fn)


class inference_mode(_GradModeContext):
    """Like ``no_grad``; Tensors made inside are inference tensors (never recorded later)."""

    def __new__(cls, mode: Any = True) -> Any:
        if callable(mode):
            return cls(True)(mode)
        return object.__new__(cls)

    def __init__(self, mode: bool = True) -> None:
        self.mode = bool(mode)

    def __enter__(self) -> None:
        self._prev = (_state.enabled, _state.inference)
        if self.mode:
            _state.enabled = False
        _state.inference = self.mode

    def clone(self) -> inference_mode:
        return self.__class__(self.mode)
