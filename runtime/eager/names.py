"""The names PyTorch 2.13 gives autograd nodes, and indices as NumPy sees them."""

from __future__ import annotations

from collections import namedtuple
from typing import Any

import numpy as np

from srcgrad.runtime.eager.tensor import Tensor, as_array

__all__ = ["node_name", "unwrap_index"]

_NODE_NAMES = {
    "absolute": "Abs", "negative": "Neg", "multiply": "Mul", "divide": "Div", "add": "Add",
    "subtract": "Sub", "arcsin": "Asin", "arccos": "Acos", "arctan": "Atan", "arcsinh": "Asinh",
    "arccosh": "Acosh", "arctanh": "Atanh", "arctan2": "Atan2", "log1p": "Log1P",
    "log_softmax": "LogSoftmax", "reshape": "View", "ravel": "View", "transpose": "Permute",
    "swapaxes": "Transpose", "expand_dims": "Unsqueeze", "concatenate": "Cat",
    "broadcast_to": "Expand", "square": "Pow", "tile": "Repeat", "copy": "Clone",
    "cast": "ToCopy", "solve": "LinalgSolveEx", "inv": "LinalgInvEx", "det": "LinalgDet",
    "norm": "LinalgVectorNorm", "rint": "Round", "deg2rad": "Deg2Rad", "rad2deg": "Rad2Deg",
    "mse_loss": "MseLoss", "nll_loss": "NllLoss", "logsumexp": "Logsumexp",
    "binary_cross_entropy_with_logits": "BinaryCrossEntropyWithLogits", "clip": "Clamp",
    "take_along": "Gather", "max": "Amax", "min": "Amin", "pow_scalar": "Pow",
}


def node_name(prim: Any, args: tuple, params: dict) -> str:
    """The node name PyTorch gives the call a NumPy function on Tensors stands for."""
    name = prim.name
    axis = params.get("axis")
    if name in ("sum", "mean", "prod"):
        return f"{name.capitalize()}Backward{0 if axis is None else 1}"
    if name in ("max", "min") and axis is None:
        return f"{name.capitalize()}Backward1"
    if name in ("std", "var", "clip"):
        return f"{_NODE_NAMES.get(name, name.capitalize())}Backward{1 if name == 'clip' else 0}"
    if name == "power":
        return "PowBackward2" if not isinstance(args[0], Tensor) else (
            "PowBackward1" if isinstance(args[1], Tensor) else "PowBackward0")
    if name == "subtract" and not isinstance(args[0], Tensor):
        return "RsubBackward1"
    if name in ("matmul", "dot"):
        return _matmul_name(args[0], args[1])
    if name == "squeeze":
        return f"SqueezeBackward{0 if axis is None else 1}"
    if name == "getitem":
        return _index_name(params["index"])
    stem = _NODE_NAMES.get(name) or "".join(p.capitalize() for p in name.split("_"))
    return f"{stem}Backward0"


def _matmul_name(a: Any, b: Any) -> str:
    na, nb = np.ndim(as_array(a)), np.ndim(as_array(b))
    if na == 2 and nb == 2:
        return "MmBackward0"
    if na == 2 and nb == 1:
        return "MvBackward0"
    if na == 1 and nb == 1:
        return "DotBackward0"
    if na == 1 and nb == 2:
        return "SqueezeBackward4"
    return "UnsafeViewBackward0" if na > 2 else "ExpandBackward0"


def _index_name(index: Any) -> str:
    keys = index if isinstance(index, tuple) else (index,)
    name = "SliceBackward0"
    for k in keys:
        if isinstance(k, (list, np.ndarray)) or (isinstance(k, bool)):
            return "IndexBackward0"
        if isinstance(k, (int, np.integer)):
            name = "SelectBackward0"
        elif k is None:
            name = "UnsqueezeBackward0"
        elif isinstance(k, slice) and k != slice(None):
            name = "SliceBackward0"
    return name


def _is_basic(index: Any) -> bool:
    keys = index if isinstance(index, tuple) else (index,)
    return not any(isinstance(k, (list, np.ndarray, bool)) for k in keys)


def unwrap_index(index: Any) -> Any:
    """Indices as NumPy sees them: Tensors become arrays (integer or boolean)."""
    if isinstance(index, tuple):
        return tuple(unwrap_index(k) for k in index)
    if isinstance(index, Tensor):
        data = index._data
        return data.item() if data.ndim == 0 and data.dtype.kind in "iu" else data
    return index


def _dims(dim: Any) -> Any:
    """A ``dim`` argument as NumPy's ``axis``: a list of dims becomes a tuple."""
    return tuple(dim) if isinstance(dim, (list, tuple)) else dim


def _return_type(name: str, fields: tuple = ("values", "indices")) -> type:
    """PyTorch's ``torch.return_types.max``: a named pair that prints one field a line."""
    def __repr__(self: Any) -> str:
        body = ",\n".join(f"{f}={getattr(self, f)!r}" for f in fields)
        return f"srcgrad.return_types.{name}(\n{body})"
    return type(name, (namedtuple(name, fields),), {"__repr__": __repr__, "__slots__": ()})
