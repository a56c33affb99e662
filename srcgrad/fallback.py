"""The fallback: a transform run on the eager engine, with the same results as compiled."""

from __future__ import annotations

from typing import Any

import numpy as np

from srcgrad import pytree
from srcgrad.runtime import grad_mode
from srcgrad.runtime.autograd import grad as autograd_grad
from srcgrad.runtime.ndarray import Array, as_array_leaf, private_copy
from srcgrad.runtime.tensor import Tensor

__all__ = ["eager_transform"]


def _value(x: Any) -> Any:
    if isinstance(x, Tensor):
        return x._data
    if isinstance(x, (tuple, list)):
        return type(x)(_value(v) for v in x)
    return x


def _result_gradient(g: Any, original: Any) -> Any:
    if g is None:
        return 0.0 if isinstance(original, float) else np.zeros_like(original)
    data = g._data
    if isinstance(original, float):
        return float(data)
    return data.astype(np.asarray(original).dtype, copy=False)


def _wrap(values: list, positions: tuple) -> tuple[list, dict]:
    """Replace the differentiable leaves of the ``positions`` arguments by Array leaves.

    The function is handed private copies (of the leaves too: a copy of a leaf is not a leaf,
    so that it may be written into), never the caller's arrays (SPEC §7).
    """
    args = list(values)
    leaves: dict[int, tuple[list, Any, list]] = {}
    for i, value in enumerate(values):
        flat, structure = pytree.flatten(value)
        if i in positions:
            wrapped = [as_array_leaf(v) if pytree.differentiable(v) else v for v in flat]
            leaves[i] = (flat, structure, wrapped)
            private = [private_copy(w) if isinstance(w, Array) else _copy(w) for w in wrapped]
        else:
            private = [_copy(v) for v in flat]
        args[i] = pytree.unflatten(structure, private)
    return args, leaves


def _copy(value: Any) -> Any:
    return value.copy() if isinstance(value, np.ndarray) else value


def _gradients(out: Any, leaves: dict, seed: Any) -> dict:
    """Gradients of the output (a Tensor, or a tuple/list of them with a cotangent each)."""
    inputs = [w for _, _, wrapped in leaves.values() for w in wrapped if isinstance(w, Array)]
    outs, seeds = _outputs_and_seeds(out, seed)
    found = autograd_grad(outs, inputs, seeds, retain_graph=True, allow_unused=True) \
        if inputs and outs else [None] * len(inputs)
    it = iter(found)
    result = {}
    for i, (flat, structure, wrapped) in leaves.items():
        grads = [_result_gradient(next(it), v) if isinstance(w, Array) else None
                 for v, w in zip(flat, wrapped)]
        result[i] = pytree.unflatten(structure, grads)
    return result


def _outputs_and_seeds(out: Any, cotangent: Any) -> tuple[list, list | None]:
    """The outputs (a Tensor, or a pytree of them) that require grad, and their cotangents
    (None: the scalar output's own ones)."""
    flat = pytree.flatten(out)[0]
    keep = [k for k, o in enumerate(flat) if isinstance(o, Tensor) and o.requires_grad]
    if cotangent is None:
        return [flat[k] for k in keep], None
    cotangents = pytree.flatten(cotangent)[0]
    return [flat[k] for k in keep], [Tensor._make(np.asarray(cotangents[k])) for k in keep]


def eager_transform(fun: Any, kind: str, values: list, wrt: tuple, single: bool) -> Any:
    """``grad``/``value_and_grad``/``vjp`` of ``fun`` computed by the eager engine."""
    args, leaves = _wrap(values, wrt)
    with grad_mode.enable_grad():
        out = fun(*args)
    if kind == "vjp":
        def vjp_fn(cotangent: Any) -> tuple:
            grads = _gradients(out, leaves, cotangent)
            return tuple(grads[i] if pytree.differentiable(values[i]) or not pytree.is_leaf(
                values[i]) else None for i in range(len(values)))
        return _value(out), vjp_fn
    if np.size(_value(out)) != 1:
        raise ValueError(f"grad requires a scalar output, but the function returned shape "
                         f"{np.shape(_value(out))}; use srcgrad.vjp for non-scalar outputs")
    grads = _gradients(out, leaves, None)
    result = grads[wrt[0]] if single else tuple(grads[i] for i in wrt)
    return (_value(out), result) if kind == "value_and_grad" else result
