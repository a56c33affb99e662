"""Pytrees: nested dicts, lists and tuples of arrays and floats, flattened and rebuilt."""

from __future__ import annotations

from typing import Any

import numpy as np

from srcgrad.codegen import array_backend
from srcgrad.runtime.eager.tensor import Tensor
from srcgrad.runtime.subclasses import plain
from srcgrad.transforms.pytree_nodes import is_node, node_of

__all__ = ["flatten", "unflatten", "is_leaf", "differentiable", "check_differentiable",
           "zero_like", "same_kind", "plain_leaves"]


def is_leaf(x: Any) -> bool:
    return not isinstance(x, (dict, list, tuple)) and node_of(x) is None


def sorted_keys(tree: dict) -> list:
    """A dict's keys in a fixed order: sorted, or, when they do not compare with each other
    (``{0: a, 'b': b}``), sorted by type name and then by value within each type."""
    try:
        return sorted(tree)
    except TypeError:
        groups: dict[str, list] = {}
        for k in tree:
            groups.setdefault(type(k).__name__, []).append(k)
        out = []
        for name in sorted(groups):
            try:
                out += sorted(groups[name])
            except TypeError:
                out += sorted(groups[name], key=repr)
        return out


def flatten(tree: Any) -> tuple[list, Any]:
    """Leaves in a fixed order (dict keys sorted) and the structure to rebuild them; a dict's
    structure also keeps its insertion order, which its loops (and the rebuilt dict) follow."""
    if isinstance(tree, dict):
        keys = sorted_keys(tree)
        parts = [flatten(tree[k]) for k in keys]
        return [leaf for p in parts for leaf in p[0]], ("dict", keys, [p[1] for p in parts],
                                                        list(tree))
    if isinstance(tree, (list, tuple)):
        parts = [flatten(v) for v in tree]
        return [leaf for p in parts for leaf in p[0]], (type(tree), None, [p[1] for p in parts])
    node = node_of(tree)                # a dataclass or a registered class
    if node is not None:
        children, aux = node.flatten(tree)
        parts = [flatten(v) for v in children]
        return [leaf for p in parts for leaf in p[0]], (type(tree), node.keys,
                                                        [p[1] for p in parts], (node, aux))
    return [tree], None


def unflatten(structure: Any, leaves: list) -> Any:
    it = iter(leaves)

    def build(s: Any) -> Any:
        if s is None:
            return next(it)
        kind, keys, children = s[:3]
        values = [build(c) for c in children]
        if kind == "dict":
            built = dict(zip(keys, values))
            return {k: built[k] for k in s[3]} if len(s) > 3 else built
        if is_node(s):
            return s[3][0].unflatten(s[3][1], values)
        return kind._make(values) if hasattr(kind, "_make") else kind(values)  # namedtuple
    return build(structure)


def differentiable(x: Any) -> bool:
    """A real float, or an array (or Tensor) of real floats: what can have a gradient."""
    if isinstance(x, float):
        return True
    if isinstance(x, Tensor):
        return x._data.dtype.kind == "f"
    if isinstance(x, (np.ndarray, np.floating)) or array_backend(x) is not None:
        return x.dtype.kind == "f"
    return False


def _paths(tree: Any, path: str) -> list[tuple[str, Any]]:
    if isinstance(tree, dict):
        return [p for k in sorted_keys(tree) for p in _paths(tree[k], f"{path}[{k!r}]")]
    if isinstance(tree, (list, tuple)):
        return [p for i, v in enumerate(tree) for p in _paths(v, f"{path}[{i}]")]
    node = node_of(tree)
    if node is not None:
        children = node.flatten(tree)[0]
        keys = [f".{k}" for k in node.keys] if node.keys is not None else [
            f"[{i}]" for i in range(len(children))]
        return [p for k, v in zip(keys, children) for p in _paths(v, path + k)]
    return [(path, tree)]


def check_differentiable(value: Any, name: str, vjp: bool = False) -> None:
    """Raise TypeError (as JAX does) when an argument to differentiate, or one of its pytree
    leaves, is not real floating point: an int, bool, complex, object or string.  A vjp
    differentiates every argument and answers None for data (ints, flags): only complex
    numbers are refused there."""
    for path, leaf in _paths(value, name):
        if leaf is None or differentiable(leaf):
            continue
        dtype = getattr(leaf, "dtype", None)
        complex_ = isinstance(leaf, complex) or getattr(dtype, "kind", "") == "c"
        if vjp and not complex_:
            continue
        what = f"dtype {dtype}" if dtype is not None else f"type {type(leaf).__name__}"
        later = " (complex numbers are not supported yet)" if complex_ else ""
        raise TypeError(f"srcgrad differentiates real floating point values only; the "
                        f"argument {path} has {what}{later}. Pass floats (e.g. 3.0 or "
                        "x.astype(np.float64)), or leave it out of wrt")


def plain_leaves(value: Any, name: str) -> Any:
    """``value`` with every array leaf a plain ndarray: an ``np.memmap`` as a view of its
    memory; any other ndarray subclass raises a TypeError naming it and where it is
    (:mod:`srcgrad.runtime.subclasses`).  Nothing is copied or written."""
    if type(value) is float or type(value) is np.ndarray or isinstance(value, Tensor):
        return value
    paths = _paths(value, name)
    if all(type(leaf) is np.ndarray or not isinstance(leaf, np.ndarray) for _, leaf in paths):
        return value
    return unflatten(flatten(value)[1], [plain(leaf, path) for path, leaf in paths])


def zero_like(original: Any) -> Any:
    """A zero gradient of the kind of ``original``: a float, a NumPy scalar or an array."""
    if type(original) is float:
        return 0.0
    if isinstance(original, np.generic):
        return original.dtype.type(0)
    return np.zeros_like(original)


def same_kind(g: Any, original: Any) -> Any:
    """The gradient ``g`` as the kind of ``original`` (float → float, float32 → float32)."""
    if type(original) is float:
        return float(g)
    if isinstance(original, np.generic):
        return original.dtype.type(g)
    if isinstance(original, float):                    # a subclass of float
        return float(g)
    return np.asarray(g).astype(np.asarray(original).dtype, copy=False)
