"""Anomaly detection (``autograd.detect_anomaly``), as PyTorch's.

While it is on, every recorded node keeps the traceback of the forward call that made it;
during backward, an error raised by a node (or, with ``check_nan``, a node returning NaN) is
preceded by a warning that names the node and shows that traceback, and NaN raises
``RuntimeError: Function 'SqrtBackward0' returned nan values in its 0th output.``
"""

from __future__ import annotations

import functools
import os
import threading
import traceback
import warnings
from collections.abc import Callable
from typing import Any

__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled",
           "is_anomaly_check_nan_enabled", "forward_traceback", "checked_apply"]

ENABLED_WARNING = ("Anomaly Detection has been enabled. This mode will increase the runtime "
                   "and should only be enabled for debugging.")


class _State(threading.local):
    def __init__(self) -> None:
        self.enabled = False
        self.check_nan = True


STATE = _State()
_OWN = tuple(os.path.dirname(os.path.abspath(p)) + os.sep for p in (
    __file__, os.path.join(os.path.dirname(__file__), "..", "srcgrad", "__init__.py")))


def is_anomaly_enabled() -> bool:
    return STATE.enabled


def is_anomaly_check_nan_enabled() -> bool:
    return STATE.check_nan


class detect_anomaly:
    """Context manager (and decorator) that turns anomaly detection on, with a warning."""

    def __init__(self, check_nan: bool = True) -> None:
        self.check_nan = check_nan
        self.prev = (STATE.enabled, STATE.check_nan)
        warnings.warn(ENABLED_WARNING, UserWarning, stacklevel=2)

    def __enter__(self) -> None:
        self.prev = (STATE.enabled, STATE.check_nan)
        STATE.enabled, STATE.check_nan = True, self.check_nan

    def __exit__(self, *exc: object) -> None:
        STATE.enabled, STATE.check_nan = self.prev

    def __call__(self, fn: Callable) -> Callable:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self:
                return fn(*args, **kwargs)
        return wrapper


class set_detect_anomaly:
    """Set anomaly detection on or off: at once, and restored when used as a context."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self.prev = (STATE.enabled, STATE.check_nan)
        STATE.enabled, STATE.check_nan = bool(mode), bool(check_nan)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: object) -> None:
        STATE.enabled, STATE.check_nan = self.prev


def forward_traceback() -> str:
    """The user's stack at a forward call, without srcgrad's own frames (as PyTorch shows)."""
    frames = [f for f in traceback.extract_stack()[:-1]
              if not os.path.abspath(f.filename).startswith(_OWN)]
    return "".join(traceback.format_list(frames))


def _warn(fn: Any) -> None:
    tb = (fn._metadata or {}).get("traceback_", "")
    name = fn.name().rsplit("::", 1)[-1]
    warnings.warn(f"Error detected in {name}. Traceback of forward call that caused the "
                  f"error:\n{tb}", UserWarning, stacklevel=4)


def checked_apply(fn: Any, grads: list, create_graph: bool) -> tuple:
    """``fn.apply`` under anomaly detection: name the node (and its forward call) on error."""
    try:
        out = fn.apply(grads, create_graph)
    except Exception:
        _warn(fn)
        raise
    if STATE.check_nan:
        for i, g in enumerate(out):
            data = getattr(g, "_data", g)
            if data is not None and bool((data != data).any()):     # NaN (NumPy or CuPy)
                _warn(fn)
                raise RuntimeError(f"Function '{fn.name().rsplit('::', 1)[-1]}' returned nan "
                                   f"values in its {i}th output.")
    return out
