"""The recording namespace: a generated module's helpers rebound to the runtime's primitives.

Run with it, generated code called on Tensors records every operation (helpers included, each
with its own rule), so a compiled function's backward pass can itself be differentiated.  A
rule helper that changes an array in place names its recorded form itself (``recorded``); the
emitter's own helpers (:mod:`srcgrad.codegen.common.support`, ``unbroadcast``) have theirs here.
"""

from __future__ import annotations

from typing import Any

from srcgrad.runtime import rules
from srcgrad.runtime.eager.tensor import Tensor
from srcgrad.runtime.rules.primitives import PRIMITIVES, sum_to

__all__ = ["recording_namespace"]


def _unbroadcast(x: Any, shape: tuple) -> Any:
    return sum_to(x, shape=tuple(shape))


def _match_input(g: Any, x: Any) -> Any:
    if g is None or not isinstance(x, Tensor) or x._data.dtype.kind not in "fc":
        return None
    return g if isinstance(g, Tensor) else Tensor._make(g * rules.np.ones_like(x._data))


def _zero_gradient(x: Any) -> Any:
    """Zeros where a sum starts (a loop's totals); None where nothing flows (ints)."""
    if isinstance(x, float):
        return 0.0
    if isinstance(x, Tensor) and x._data.dtype.kind in "fc":
        return Tensor._make(rules.np.zeros_like(x._data))
    return None


def _runtime_helpers() -> dict[str, Any]:
    table: dict[str, Any] = {p.fn.__name__: p for p in PRIMITIVES.values()}
    for name in dir(rules):
        value = getattr(rules, name)
        if hasattr(value, "helper_source"):
            table[name] = getattr(value, "recorded", value)
    table.update(unbroadcast=_unbroadcast, match_input=_match_input,
                 zero_gradient=_zero_gradient)
    return table


def recording_namespace(namespace: dict) -> dict:
    """Replacements for the helpers defined in a loaded generated module."""
    table = _runtime_helpers()
    module = namespace.get("__name__")
    return {name: table[name] for name, value in namespace.items()
            if name in table and getattr(value, "__module__", None) == module}
