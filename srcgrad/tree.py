"""``srcgrad.tree``: pytree nodes of the user's own classes, by JAX's names.

Dicts, lists, tuples, namedtuples and dataclasses are pytrees already (a dataclass: all its
fields, in order).  ``register_dataclass`` chooses which fields are data (differentiated) and
which are meta (kept as they are); ``register_pytree_node`` makes any class a pytree by a pair
of functions.  A gradient with respect to such a value is a value of the same class.
"""

from typing import Any

from srcgrad.transforms.pytree import flatten as _flatten
from srcgrad.transforms.pytree import unflatten as _unflatten
from srcgrad.transforms.pytree_nodes import register_dataclass, register_pytree_node

__all__ = ["register_dataclass", "register_pytree_node", "tree_flatten", "tree_unflatten"]


def tree_flatten(tree: Any) -> tuple[list, Any]:
    """The leaves of ``tree`` in srcgrad's fixed order, and its structure."""
    return _flatten(tree)


def tree_unflatten(structure: Any, leaves: list) -> Any:
    """A pytree of ``structure`` (from :func:`tree_flatten`) holding ``leaves``."""
    return _unflatten(structure, leaves)
