"""Dicts, lists and tuples passed as arguments that are not differentiated (hyper-parameters,
settings, sequences of indices): the code is built at the call, for their structure.

Code built before any call cannot read ``d.get(k)``, ``d.items()`` or ``dict(d)`` of a
parameter whose kind it does not know, nor unroll ``for t in range(len(xs))``; the frontend
then defers its refusal (:class:`srcgrad.frontend.objects.NeedsArgumentTypes`).  At a call,
each such argument not differentiated is given to the lowering with its structure (a dict's
keys in insertion order, a list's length), as a differentiated one is: its values are read
when the code runs, with no gradient, and the code built is keyed by the structures, so
another set of keys, or another length, builds anew.
"""

from __future__ import annotations

from typing import Any

from srcgrad.frontend.structural import NONE
from srcgrad.transforms import pytree

__all__ = ["argument_structures"]


def argument_structures(transform: Any, values: list) -> dict[int, Any]:
    """The structures of the arguments, by position: the differentiated pytrees, and the
    dict, list and tuple arguments not differentiated (and those that are None) when the code
    built before any call waits for the arguments' kinds (else that code serves them)."""
    trees = {i: pytree.flatten(values[i])[1] for i in transform.wrt
             if not pytree.is_leaf(values[i])}
    if getattr(transform, "_deferred", None) is None:
        return trees
    return trees | {i: NONE if v is None else pytree.flatten(v)[1] for i, v in enumerate(values)
                    if i not in transform.wrt and (v is None or type(v) in (dict, list, tuple))}
