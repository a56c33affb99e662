"""Pytrees: nested dicts, lists and tuples of arrays and floats, flattened and rebuilt."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["flatten", "unflatten", "is_leaf"]


def is_leaf(x: Any) -> bool:
    return not isinstance(x, (dict, list, tuple))


def flatten(tree: Any) -> tuple[list, Any]:
    """Leaves in a fixed order (dict keys sorted) and the structure to rebuild them."""
    if isinstance(tree, dict):
        keys = sorted(tree)
        parts = [flatten(tree[k]) for k in keys]
        return [leaf for p in parts for leaf in p[0]], ("dict", keys, [p[1] for p in parts])
    if isinstance(tree, (list, tuple)):
        parts = [flatten(v) for v in tree]
        return [leaf for p in parts for leaf in p[0]], (type(tree), None, [p[1] for p in parts])
    return [tree], None


def unflatten(structure: Any, leaves: list) -> Any:
    it = iter(leaves)

    def build(s: Any) -> Any:
        if s is None:
            return next(it)
        kind, keys, children = s
        values = [build(c) for c in children]
        if kind == "dict":
            return dict(zip(keys, values))
        return kind(values)
    return build(structure)


def differentiable(x: Any) -> bool:
    """A float, or an array of floats (what can have a gradient)."""
    if isinstance(x, float):
        return True
    return isinstance(x, (np.ndarray, np.floating)) and np.asarray(x).dtype.kind in "fc"
