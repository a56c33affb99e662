"""Pytree nodes beyond dicts, lists and tuples: dataclasses (their fields in order), and the
classes registered with :func:`srcgrad.tree.register_pytree_node` or
:func:`srcgrad.tree.register_dataclass` (JAX's registry, by the same names).

A node's structure is ``(cls, keys, children, Node)``: ``keys`` are a dataclass's field names
(the compiled code reads ``p.W`` as the leaf ``W``), None for a node registered with functions
(its children by position).  The compiled code is given a node as a dict of its fields or a
tuple of its children (:func:`as_plain`), and its gradient, which the code returns as a tuple
of the children's, is rebuilt as the node's class (:func:`rebuilt`).
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["Node", "node_of", "register_pytree_node", "register_dataclass", "as_plain",
           "rebuilt", "is_node"]


class Node:
    """How one class is taken apart and made again: ``flatten(x) -> (children, aux)`` and
    ``unflatten(aux, children) -> x``; ``keys``: field names (a dataclass), else None."""

    def __init__(self, cls: type, flatten: Callable, unflatten: Callable,
                 keys: tuple[str, ...] | None = None, meta: tuple[str, ...] = ()) -> None:
        self.cls, self.flatten, self.unflatten = cls, flatten, unflatten
        self.keys, self.meta = keys, meta

    def __repr__(self) -> str:
        return f"Node({self.cls.__qualname__}, keys={self.keys})"


_REGISTRY: dict[type, Node] = {}
_LOCK = threading.Lock()


def register_pytree_node(cls: type, flatten: Callable, unflatten: Callable) -> None:
    """Make instances of ``cls`` pytrees: ``flatten(x)`` gives ``(children, aux_data)``,
    ``unflatten(aux_data, children)`` makes one again (``aux_data``: hashable, compared when
    the compiled code is chosen).  The children are differentiated as pytrees."""
    if not isinstance(cls, type):
        raise TypeError(f"register_pytree_node takes a class, not {cls!r}")
    with _LOCK:
        _REGISTRY[cls] = Node(cls, flatten, unflatten)


def register_dataclass(cls: type, data_fields: list[str] | None = None,
                       meta_fields: list[str] | None = None) -> type:
    """Make the dataclass ``cls`` a pytree of ``data_fields`` (by default all its fields but
    ``meta_fields``); meta fields are kept as they are, not differentiated.  Returns ``cls``
    (usable as a decorator).  Unregistered dataclasses are pytrees of all their fields."""
    if not dataclasses.is_dataclass(cls) or not isinstance(cls, type):
        raise TypeError(f"register_dataclass takes a dataclass, not {cls!r}")
    names = [f.name for f in dataclasses.fields(cls)]
    meta = tuple(meta_fields or ())
    data = tuple(data_fields) if data_fields is not None else tuple(
        n for n in names if n not in meta)
    unknown = [n for n in (*data, *meta) if n not in names]
    if unknown:
        raise ValueError(f"{cls.__qualname__} has no field {unknown[0]!r}")
    with _LOCK:
        _REGISTRY[cls] = _dataclass_node(cls, data, meta)
    return cls


def _dataclass_node(cls: type, data: tuple[str, ...], meta: tuple[str, ...]) -> Node:
    def flatten(x: Any) -> tuple[list, tuple]:
        return [getattr(x, n) for n in data], tuple(getattr(x, n) for n in meta)

    def unflatten(aux: tuple, children: list) -> Any:
        values = dict(zip(data, children)) | dict(zip(meta, aux))
        fields = {f.name: f for f in dataclasses.fields(cls)}
        made = object.__new__(cls)            # no __init__ or __post_init__: the values as given
        for name, value in values.items():
            object.__setattr__(made, name, value)
        for name, f in fields.items():        # a field neither data nor meta: its default
            if name not in values and f.default is not dataclasses.MISSING:
                object.__setattr__(made, name, f.default)
        return made
    return Node(cls, flatten, unflatten, keys=data, meta=meta)


def node_of(x: Any) -> Node | None:
    """The node type of ``x``: registered, or a dataclass instance (all its fields)."""
    node = _REGISTRY.get(type(x))
    if node is not None:
        return node
    cls = type(x)
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        names = tuple(f.name for f in dataclasses.fields(cls))
        with _LOCK:
            node = _REGISTRY.setdefault(cls, _dataclass_node(cls, names, ()))
        return node
    return None


def is_node(structure: Any) -> bool:
    """Whether a pytree structure is a node's (a 4-tuple ending with its aux data)."""
    return isinstance(structure, tuple) and len(structure) == 4 and isinstance(
        structure[3], tuple) and len(structure[3]) == 2 and isinstance(structure[3][0], Node)


def as_plain(value: Any, structure: Any) -> Any:
    """``value`` as the compiled code reads it: each node a dict of its fields (a dataclass)
    or a tuple of its children; lists, tuples and dicts holding nodes made anew."""
    if structure is None or not _holds_node(structure):
        return value
    kind, keys, children = structure[:3]
    if is_node(structure):
        node = structure[3][0]
        parts, _ = node.flatten(value)
        items = [as_plain(v, c) for v, c in zip(parts, children)]
        return dict(zip(node.keys, items)) if node.keys is not None else tuple(items)
    if kind == "dict":
        return {k: as_plain(value[k], c) for k, c in zip(keys, children)} | {
            k: value[k] for k in value if k not in keys}
    return type(value)(as_plain(v, c) for v, c in zip(value, children)) \
        if not hasattr(value, "_make") else value._make(
            as_plain(v, c) for v, c in zip(value, children))


def rebuilt(gradient: Any, structure: Any) -> Any:
    """The gradient the compiled code returned for an argument of ``structure`` (a node's as
    a tuple of its children's), with every node, and namedtuple, of its class again."""
    if structure is None or gradient is None:
        return gradient
    kind, keys, children = structure[:3]
    if kind == "dict":
        return {k: rebuilt(gradient[k], c) for k, c in zip(keys, children)} | {
            k: gradient[k] for k in gradient if k not in keys}
    items = [rebuilt(g, c) for g, c in zip(gradient, children)]
    if is_node(structure):
        node, aux = structure[3]
        return node.unflatten(aux, items)
    return kind._make(items) if hasattr(kind, "_make") else kind(items)


def _holds_node(structure: Any) -> bool:
    if structure is None:
        return False
    return is_node(structure) or any(_holds_node(c) for c in structure[2])


def typed(fn: Callable | None, trees: dict[int, Any], kind: str, wrt: tuple[int, ...],
          single: bool) -> Callable | None:
    """The compiled ``fn`` given its differentiated nodes as it reads them (:func:`as_plain`)
    and answering their gradients, and those of namedtuples, as values of their classes."""
    chosen = {i: s for i, s in trees.items() if i in wrt and _typed(s)}
    if fn is None or not chosen or kind not in ("grad", "value_and_grad", "vjp"):
        return fn

    def grads(g: Any) -> Any:
        if single:
            return rebuilt(g, chosen.get(wrt[0]))
        return tuple(rebuilt(x, chosen.get(i)) for x, i in zip(g, wrt))

    def call(*values: Any) -> Any:
        out = fn(*[as_plain(v, chosen[i]) if i in chosen else v for i, v in enumerate(values)])
        if kind == "grad":
            return grads(out)
        if kind == "value_and_grad":
            return out[0], grads(out[1])
        value, backward = out
        return value, lambda ct: grads(backward(ct))
    return call


def _typed(structure: Any) -> bool:
    """Whether a structure holds a node or a namedtuple (whose gradients are rebuilt)."""
    if structure is None or not isinstance(structure, tuple) or len(structure) < 3:
        return False
    kind = structure[0]
    return is_node(structure) or hasattr(kind, "_make") or any(
        _typed(c) for c in structure[2])
