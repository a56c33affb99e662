"""Runs one sweep case on PyTorch and on srcgrad and describes what each did, comparably.

A case is ``(name, label, call, spec)``: ``call(m, *args)`` with ``m`` the library module
(``torch`` or ``srcgrad``) and ``args`` built from ``spec``, one character an argument (see
:data:`SPEC_KINDS`).  Floating arguments are built in each dtype and autograd mode of
:data:`MODES`; the description of a run holds the result (values, dtype, shape, ``grad_fn``
type and name, ``next_functions``), the error class and first line, the warnings, and then the
``.grad`` of every leaf after a backward pass through the differentiable outputs.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

MODES = ("plain", "leaf", "nonleaf")
DTYPES = ("float32", "float64")
FLOAT_KINDS = "fpuhsvmqrz"


def _array(kind: str, seed: int) -> Any:
    """The NumPy data of one argument kind (deterministic per case and position)."""
    rng = np.random.default_rng(seed)
    return {
        "f": lambda: rng.standard_normal((3, 4)),           # general
        "p": lambda: rng.uniform(0.5, 2.0, (3, 4)),          # positive
        "u": lambda: rng.uniform(-0.9, 0.9, (3, 4)),         # inside (-1, 1)
        "h": lambda: rng.uniform(0.05, 0.95, (3, 4)),        # inside (0, 1)
        "s": lambda: np.array(rng.standard_normal()),        # 0-d
        "v": lambda: rng.standard_normal(4),                 # vector
        "m": lambda: rng.standard_normal((4, 3)),            # matrix to multiply (3, 4) with
        "q": lambda: rng.standard_normal((3, 3)) + 3 * np.eye(3),   # well-conditioned square
        "r": lambda: rng.standard_normal((2, 3, 4)),         # rank 3
        "z": lambda: np.array([0.0, 1.0, -1.0, 0.0]),        # zeros, for edge values
        "i": lambda: rng.integers(0, 3, (3, 4)),             # int64, 0..2
        "j": lambda: rng.integers(-5, 6, (3, 4)),            # int64, signed
        "b": lambda: rng.integers(0, 2, (3, 4)).astype(bool),
        "c": lambda: np.array([[0, 2, 1, 0], [1, 0, 2, 2], [2, 1, 0, 1]]),  # index along 0
    }[kind]()


SPEC_KINDS = FLOAT_KINDS + "ijbc"


def make_args(m: Any, spec: str, dtype: str, mode: str, seed: int) -> tuple[list, list]:
    """The arguments of one run, and the leaves whose ``.grad`` is compared afterwards."""
    args, leaves = [], []
    for k, kind in enumerate(spec):
        data = _array(kind, seed * 31 + k)
        if kind in FLOAT_KINDS:
            leaf = m.tensor(data, dtype=getattr(m, dtype), requires_grad=mode != "plain")
            leaves.append(leaf)
            args.append(leaf * 1.0 if mode == "nonleaf" else leaf)
        else:
            args.append(m.tensor(data))
    return args, leaves


def _name(node: Any) -> Any:
    return None if node is None else node.name()


def _values(t: Any) -> Any:
    try:
        return t.detach().cpu().numpy().copy()
    except RuntimeError:            # PyTorch's ZeroTensor (the gradient of an unused input)
        return t.detach().cpu().numpy(force=True).copy()


def describe(obj: Any, m: Any) -> Any:
    """A comparable, library-neutral description of ``obj``."""
    if isinstance(obj, m.Tensor):
        fn = obj.grad_fn
        return ("Tensor", tuple(obj.shape), str(obj.dtype).split(".")[-1], obj.requires_grad,
                obj.is_leaf, None if fn is None else type(fn).__name__, _name(fn),
                None if fn is None else tuple((_name(f), nr) for f, nr in fn.next_functions),
                _values(obj))
    if isinstance(obj, m.Size):
        return ("Size", tuple(obj))
    if isinstance(obj, (tuple, list)):
        return (type(obj).__name__ if type(obj) in (tuple, list) else "named",
                tuple(describe(o, m) for o in obj))
    if isinstance(obj, m.dtype):
        return ("dtype", str(obj).split(".")[-1])
    if isinstance(obj, m.device):
        return ("device", str(obj))
    if isinstance(obj, str):
        return obj.replace("torch", "srcgrad")
    if obj is None or isinstance(obj, (bool, int, float)):
        return obj
    if isinstance(obj, np.ndarray):
        return ("ndarray", str(obj.dtype), obj.copy())
    return ("object", type(obj).__name__)


def _tensors(obj: Any, m: Any) -> list:
    if isinstance(obj, m.Tensor):
        return [obj]
    if isinstance(obj, (tuple, list)):
        return [t for o in obj for t in _tensors(o, m)]
    return []


ONCE = ("Converting a tensor with requires_grad=True to a scalar",)
"""Warnings PyTorch gives once a process (``TORCH_WARN_ONCE``): not comparable run by run."""


def _first_line(message: Any) -> str:
    text = str(message).splitlines()[0] if str(message) else ""
    return text.split(" (Triggered internally at")[0].replace("torch", "srcgrad")


def _error(e: BaseException) -> tuple:
    return ("error", type(e).__name__, _first_line(e))


def run(m: Any, call: Any, spec: str, dtype: str, mode: str, seed: int) -> dict:
    """Run one case on library ``m``; every outcome, error or not, becomes data."""
    out: dict = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        args, leaves = make_args(m, spec, dtype, mode, seed)
        try:
            result = call(m, *args)
        except Exception as e:  # noqa: BLE001  (the error is what is compared)
            out["result"] = _error(e)
            result = None
        else:
            out["result"] = describe(result, m)
        out["inputs"] = [describe(a, m) for a in args]
        diff = [t for t in _tensors(result, m) if t.requires_grad and t.is_floating_point()]
        if diff:
            rng = np.random.default_rng(seed + 7)
            seeds = [m.tensor(rng.standard_normal(tuple(t.shape)), dtype=t.dtype) for t in diff]
            try:
                m.autograd.backward(diff, seeds)
            except Exception as e:  # noqa: BLE001
                out["backward"] = _error(e)
            out["grads"] = [describe(leaf.grad, m) for leaf in leaves]
    out["warnings"] = [(w.category.__name__, _first_line(w.message)) for w in caught
                       if not str(w.message).startswith(ONCE)]
    return out


def values_only(desc: Any) -> Any:
    """A description without node names and edges (for recorded structures that differ)."""
    if isinstance(desc, tuple) and len(desc) == 9 and desc[0] == "Tensor":
        return desc[:5] + desc[8:]
    if isinstance(desc, dict):
        return {k: values_only(v) for k, v in desc.items()}
    if isinstance(desc, (tuple, list)):
        return type(desc)(values_only(d) for d in desc)
    return desc


def differences(a: Any, b: Any, path: str = "") -> list[str]:
    """Where descriptions ``a`` (PyTorch) and ``b`` (srcgrad) differ, with tolerances."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
            return [f"{path}: {type(a).__name__} vs {type(b).__name__}"]
        if a.shape != b.shape:
            return [f"{path}: shape {a.shape} vs {b.shape}"]
        if a.dtype.kind in "fc" or b.dtype.kind in "fc":
            tol = 1e-4 if np.float32 in (a.dtype, b.dtype) else 1e-8
            ok = np.allclose(a.astype(np.float64), b.astype(np.float64), rtol=tol, atol=tol,
                             equal_nan=True)
        else:
            ok = np.array_equal(a, b)
        return [] if ok else [f"{path}: values {a.ravel()[:6]} vs {b.ravel()[:6]}"]
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            out += differences(a.get(k), b.get(k), f"{path}.{k}")
        return out
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)) and len(a) == len(b):
        out = []
        for i, (x, y) in enumerate(zip(a, b)):
            out += differences(x, y, f"{path}[{i}]")
        return out
    if isinstance(a, float) and isinstance(b, float):
        return [] if np.isclose(a, b, rtol=1e-5, equal_nan=True) else [f"{path}: {a} vs {b}"]
    return [] if a == b else [f"{path}: {a!r} vs {b!r}"]
