"""Objects passed as arguments: the code is built at the call, for their classes.

A function that reads an attribute or calls a method of a parameter cannot be compiled before
its arguments are seen (the frontend's refusal is then a :class:`NeedsArgumentTypes`).  The
transform keeps that refusal instead of falling back, and at each call gives the lowering the
shape of every argument that is a user object (:func:`srcgrad.frontend.objects.object_shape`:
its class and the kinds of its attributes), with the pytree structures of the differentiated
arguments.  The built code is keyed by those shapes, so an object of another class, or one
whose attributes are of other kinds, gets code of its own (or the refusal, for its own line).
"""

from __future__ import annotations

from typing import Any

from srcgrad.errors import CompileError
from srcgrad.frontend.objects import NeedsArgumentTypes, object_shape
from srcgrad.transforms import pytree_nodes

__all__ = ["fall_back_or_wait", "object_structures", "typed"]


def fall_back_or_wait(transform: Any, exc: CompileError, trees: dict) -> None:
    """The refusal ``exc`` of a build: kept on ``transform`` (as ``_deferred``) when it is the
    code built before any call and ``exc`` waits for the arguments' types; else said (the
    transform falls back, or with ``strict`` raises)."""
    if trees or not isinstance(exc, NeedsArgumentTypes):
        transform.fall_back(exc, once=True)
    else:
        transform._deferred = exc


def object_structures(transform: Any, values: list, found: bool = False) -> dict[int, Any]:
    """The shapes of the arguments (not differentiated) that are user objects, by position.
    None of them, nor other structures ``found``, and the code waits for one: the kept
    refusal, said now (a fallback warning, or with ``strict`` raised)."""
    shapes = {i: shape for i, v in enumerate(values)
              if i not in transform.wrt and (shape := object_shape(v)) is not None}
    waiting = getattr(transform, "_deferred", None)
    if not shapes and not found and waiting is not None:
        transform.fall_back(waiting, once=True)
    return shapes


def typed(transform: Any, key: str, trees: dict) -> Any:
    """The code built for ``trees`` (under ``key``); for pytree arguments holding dataclasses,
    registered classes or namedtuples, given them as it reads them and answering gradients of
    their classes (:func:`srcgrad.transforms.pytree_nodes.typed`)."""
    fn = transform._specialised.get(key)
    return pytree_nodes.typed(fn, trees, transform.kind, transform.wrt, transform._single)
