"""Tensor ``repr`` exactly as PyTorch prints it (precision 4, summarised past 1000 elements)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from srcgrad.runtime.eager import dtypes

PRECISION, THRESHOLD, EDGEITEMS, LINEWIDTH = 4, 1000, 3, 80


def _summarized(a: np.ndarray) -> np.ndarray:
    """The elements PyTorch shows when it summarises (edge items of every dimension)."""
    if a.ndim == 0:
        return a
    if a.shape[0] > 2 * EDGEITEMS:
        parts = [a[:EDGEITEMS], a[-EDGEITEMS:]]
    else:
        parts = [a]
    return np.concatenate([np.stack([_summarized(row) for row in p]) if a.ndim > 1 else p
                           for p in parts])


class _Formatter:
    def __init__(self, values: np.ndarray) -> None:
        self.floating = values.dtype.kind == "f"
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        flat = values.reshape(-1)
        if not self.floating:
            for v in flat.tolist():
                self.max_width = max(self.max_width, len(str(v)))
            return
        finite = flat[np.isfinite(flat) & (flat != 0)].astype(np.float64)
        if finite.size == 0:
            return
        absvals = np.abs(finite)
        lo, hi = float(absvals.min()), float(absvals.max())
        self.int_mode = bool(np.all(finite == np.ceil(finite)))
        if self.int_mode:
            self.sci_mode = hi / lo > 1000.0 or hi > 1.0e8
            fmt = (lambda v: f"{v:.{PRECISION}e}") if self.sci_mode else (lambda v: f"{v:.0f}.")
        else:
            self.sci_mode = hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4
            fmt = ((lambda v: f"{v:.{PRECISION}e}") if self.sci_mode
                   else (lambda v: f"{v:.{PRECISION}f}"))
        for v in finite.tolist():
            self.max_width = max(self.max_width, len(fmt(v)))

    def width(self) -> int:
        return self.max_width

    def format(self, value: Any) -> str:
        if self.floating:
            if self.sci_mode:
                text = f"{value:{self.max_width}.{PRECISION}e}"
            elif self.int_mode:
                text = f"{value:.0f}"
                if not (math.isinf(value) or math.isnan(value)):
                    text += "."
            else:
                text = f"{value:.{PRECISION}f}"
        else:
            text = str(value)
        return " " * (self.max_width - len(text)) + text


def _vector(a: np.ndarray, indent: int, summarize: bool, fmt: _Formatter) -> str:
    per_line = max(1, int(math.floor((LINEWIDTH - indent) / (fmt.width() + 2))))
    vals = a.tolist()
    if summarize and len(vals) > 2 * EDGEITEMS:
        data = ([fmt.format(v) for v in vals[:EDGEITEMS]] + [" ..."]
                + [fmt.format(v) for v in vals[-EDGEITEMS:]])
    else:
        data = [fmt.format(v) for v in vals]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"


def _nested(a: np.ndarray, indent: int, summarize: bool, fmt: _Formatter) -> str:
    if a.ndim == 0:
        return fmt.format(a.item())
    if a.ndim == 1:
        return _vector(a, indent, summarize, fmt)
    if summarize and a.shape[0] > 2 * EDGEITEMS:
        rows = ([_nested(a[i], indent + 1, summarize, fmt) for i in range(EDGEITEMS)] + ["..."]
                + [_nested(a[i], indent + 1, summarize, fmt)
                   for i in range(len(a) - EDGEITEMS, len(a))])
    else:
        rows = [_nested(a[i], indent + 1, summarize, fmt) for i in range(a.shape[0])]
    return "[" + ("," + "\n" * (a.ndim - 1) + " " * (indent + 1)).join(rows) + "]"


def tensor_repr(t: Any, prefix: str = "tensor(") -> str:
    from srcgrad.runtime.device import to_numpy
    a = to_numpy(t._data)
    indent = len(prefix)
    suffixes = []
    dev = t.device
    if dev.type != "cpu":
        suffixes.append(f"device='{dev}'")
    default = a.dtype in (dtypes.default_float(), np.dtype(np.int64), np.dtype(np.bool_))
    if a.size == 0:
        if a.ndim != 1:
            suffixes.append(f"size={tuple(a.shape)}")
        body = "[]"
    else:
        summarize = a.size > THRESHOLD
        fmt = _Formatter(_summarized(a) if summarize else a)
        body = _nested(a, indent, summarize, fmt)
    if not default:
        suffixes.append(f"dtype={dtypes.from_numpy_dtype(a.dtype)!r}")
    if t._grad_fn is not None:
        suffixes.append(f"grad_fn=<{t._grad_fn.name().rsplit('::', 1)[-1]}>")
    elif t._requires_grad:
        suffixes.append("requires_grad=True")
    text = prefix + body
    last = len(text) - text.rfind("\n") + 1
    parts = [text]
    for s in suffixes:
        # lines break where PyTorch's break: measure ``dtype=srcgrad.x`` as ``dtype=torch.x``
        width = len(s) - (len("srcgrad") - len("torch")) * s.startswith("dtype=srcgrad.")
        if last + width + 2 > LINEWIDTH:
            parts.append(",\n" + " " * indent + s)
            last = indent + width
        else:
            parts.append(", " + s)
            last += width + 2
    return "".join(parts) + ")"
