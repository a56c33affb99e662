"""Frames: how the change ``δ`` of a value ``m`` lies in each value computed from it, for the
shift-invariance analysis (:mod:`srcgrad.analysis.shift`).

``δ`` has ``m``'s shape and broadcasts as NumPy broadcasts ``m``.  A value's :class:`Frame`
says which of its axes carry which axis of ``δ`` (``δ`` is constant along the others), without
knowing ranks: the first and last axes are spelled out, and the axes between, when there are
any, carry ``δ``'s axes in order.  Every operation here either returns the exact frame or
None (the layout is not followed: the caller gives up).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Frame", "CONSTANT", "Rank", "constant_along", "drop", "insert", "meet", "embed",
           "identity", "index", "axes_of", "is_int"]

Slot = tuple[str, int] | None
"""The axis of δ that an axis of a value carries (``("L", i)``/``("R", j)``, counted from
δ's left or right end), or None: δ is constant along it."""

Rank = tuple[str | None, int]
"""A rank: a known number (base None), or the unknown rank of value ``base`` plus an
offset."""


@dataclass(frozen=True)
class Frame:
    """Where δ's axes lie in a value: its first axes carry ``left``, its last ``right``, and
    the axes between (when ``lo`` is not None) carry δ's axes from ``lo`` (from δ's left end)
    to ``hi`` (from its right end), in order.  ``lo`` None: no axes between (the rank is
    known).  No axis carrying δ (:data:`CONSTANT`): δ is a number (m has one element)."""

    left: tuple[Slot, ...] = ()
    right: tuple[Slot, ...] = ()
    lo: int | None = None
    hi: int = 0


CONSTANT = Frame()


def make_frame(left: tuple, right: tuple, lo: int | None, hi: int) -> Frame:
    """A frame, written one way only: with no middle, every axis in ``left``, and
    :data:`CONSTANT` when none carries δ."""
    if lo is None:
        left, right, hi = left + right, (), 0
        if all(s is None for s in left):
            return CONSTANT
    return Frame(left, right, lo, hi)


def _locate(f: Frame, axis: int) -> tuple[str, int] | None:
    """Where axis ``axis`` of the value lies in ``f``: ("left"|"right", position), or None."""
    if axis >= 0:
        return ("left", axis) if axis < len(f.left) else None
    if -axis <= len(f.right):
        return "right", len(f.right) + axis
    if f.lo is None and -axis <= len(f.left):
        return "left", len(f.left) + axis
    return None


def constant_along(f: Frame, axis: int) -> bool:
    """Whether δ, laid out in a value as ``f`` says, is constant along ``axis`` of it."""
    if f == CONSTANT:
        return True
    where = _locate(f, axis)
    return where is not None and getattr(f, where[0])[where[1]] is None


def drop(f: Frame, axes: tuple[int, ...]) -> Frame | None:
    """``f`` without ``axes`` (of the value), along which δ must be constant."""
    if f == CONSTANT:
        return f
    if not all(constant_along(f, a) for a in axes):
        return None
    gone = {_locate(f, a) for a in axes}
    if len(gone) != len(axes):
        return None
    left = tuple(s for i, s in enumerate(f.left) if ("left", i) not in gone)
    right = tuple(s for i, s in enumerate(f.right) if ("right", i) not in gone)
    return make_frame(left, right, f.lo, f.hi)


def insert(f: Frame, axis: int) -> Frame | None:
    """``f`` with a new axis (δ constant along it) at ``axis`` of the result."""
    if f == CONSTANT:
        return f
    if axis >= 0 and axis <= len(f.left):
        return make_frame(f.left[:axis] + (None,) + f.left[axis:], f.right, f.lo, f.hi)
    after = -axis - 1                  # axes of the result after the new one
    if axis < 0 and after <= len(f.right):
        cut = len(f.right) - after
        return make_frame(f.left, f.right[:cut] + (None,) + f.right[cut:], f.lo, f.hi)
    if axis < 0 and f.lo is None and after <= len(f.left):
        cut = len(f.left) - after
        return make_frame(f.left[:cut] + (None,) + f.left[cut:], (), None, 0)
    return None


def _peel(f: Frame, n_left: int, n_right: int) -> Frame:
    """``f`` written with ``n_left`` and ``n_right`` explicit axes (taken from the middle,
    which the caller knows has them)."""
    left, right, lo, hi = f.left, f.right, f.lo, f.hi
    while len(left) < n_left:
        left, lo = left + (("L", lo),), lo + 1
    while len(right) < n_right:
        right, hi = (("R", -hi - 1),) + right, hi + 1
    return Frame(left, right, lo, hi)


def meet(a: Frame, b: Frame) -> Frame | None:
    """The frame of a value that both ``a`` and ``b`` describe, if they are provably the
    same layout of δ; None when that is not known."""
    if a == b or b == CONSTANT:
        return a
    if a == CONSTANT:
        return b
    if (a.lo is None) != (b.lo is None):          # one knows the rank: spell the other out
        known, other = (a, b) if a.lo is None else (b, a)
        n = len(known.left) - len(other.left) - len(other.right)
        if n < 0:
            return None
        full = _peel(other, len(other.left) + n, 0)
        return a if make_frame(full.left + full.right, (), None, 0) == known else None
    if a.lo is None:
        return None
    n_left, n_right = max(len(a.left), len(b.left)), max(len(a.right), len(b.right))
    if not any(len(f.left) == n_left and len(f.right) == n_right for f in (a, b)):
        return None        # neither proves the value has n_left + n_right axes
    a, b = _peel(a, n_left, n_right), _peel(b, n_left, n_right)
    return a if a == b else None


def embed(f: Frame, inner: Rank, outer: Rank) -> Frame | None:
    """``f`` in a broadcast result of rank ``outer`` (new axes lead, δ constant along them)."""
    if f == CONSTANT or inner == outer:
        return f
    if inner[0] == outer[0] and outer[1] > inner[1]:
        return make_frame((None,) * (outer[1] - inner[1]) + f.left, f.right, f.lo, f.hi)
    return None


def identity(rank: Rank) -> Frame:
    """The frame of δ in ``m`` itself (of ``rank``): each axis carries its own."""
    if rank[0] is None:
        return make_frame(tuple(("L", i) for i in range(rank[1])), (), None, 0)
    return Frame((), (), 0, 0)


def axes_of(axis: Any) -> tuple[int, ...] | None:
    """An ``axis`` parameter as a tuple of ints (None: not a static int or tuple of them)."""
    if isinstance(axis, (int, np.integer)) and not isinstance(axis, bool):
        return (int(axis),)
    if isinstance(axis, (tuple, list)) and all(
            isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in axis):
        return tuple(int(a) for a in axis)
    return None


def is_int(v: Any) -> bool:
    """An integer index or axis (not a bool)."""
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def index(f: Frame, key: Any) -> Frame | None:
    """``f`` in ``value[key]`` (a static index: ints, slices, None, one Ellipsis): kept when
    ``key`` takes whole axes that carry δ, and picks only along axes where δ is constant."""
    items = list(key) if isinstance(key, tuple) else [key]
    if sum(i is Ellipsis for i in items) > 1 or not all(
            i is None or i is Ellipsis or isinstance(i, slice) or is_int(i) for i in items):
        return None
    if f.lo is None and Ellipsis in items:            # the rank is known: spell it out
        k = items.index(Ellipsis)
        n = len(f.left) - sum(i is not None for i in items if i is not Ellipsis)
        items[k:k + 1] = [slice(None)] * max(n, 0)
    ahead = items[:items.index(Ellipsis)] if Ellipsis in items else items
    behind = items[items.index(Ellipsis) + 1:] if Ellipsis in items else []
    left = _index_side(f, ahead, "left")
    right = _index_side(f, behind[::-1], "right")
    if left is None or right is None:
        return None
    (new_left, lo), (new_right, hi) = left, right
    return make_frame(new_left, new_right[::-1], lo, hi)


def _index_side(f: Frame, items: list, side: str) -> tuple[tuple, int | None] | None:
    """Index one end of ``f`` (``items`` outward-in); the new slots of that end (outward-in)
    and its count of δ's axes (``lo``/``hi``); None when δ's layout does not survive."""
    slots = list(f.left if side == "left" else f.right[::-1])
    count = f.lo if side == "left" else f.hi
    other_end = f.right if side == "left" else f.left
    out: list[Slot] = []
    p = 0
    for item in items:
        if item is None:
            out.append(None)
            continue
        if p == len(slots) and f.lo is not None and not other_end:   # an axis of the middle
            slots.append(("L", count) if side == "left" else ("R", -count - 1))
            count += 1
        if p >= len(slots):
            return None
        if isinstance(item, slice) and item == slice(None):
            out.append(slots[p])
        elif slots[p] is not None:
            return None                     # picks part of an axis along which δ varies
        elif isinstance(item, slice):
            out.append(None)
        p += 1
    return tuple(out) + tuple(slots[p:]), count


def own_frame(reduction: bool, params: dict, rank: Rank) -> Frame:
    """The frame of δ in ``m`` itself: every axis carries its own, except the size-1 axes
    of a ``reduction`` with ``keepdims`` (none there): ``params`` its ``axis`` and
    ``keepdims``, ``rank`` its rank."""
    keep, axis = params.get("keepdims", False), params.get("axis")
    if not reduction or keep not in (True, False):
        return identity(rank)
    if axis is None or rank == (None, 0):
        return CONSTANT                      # every axis reduced: m has one element
    axes = axes_of(axis)
    if not keep or axes is None:
        return identity(rank)
    if rank[0] is None:
        axes = tuple(a % rank[1] for a in axes)
        return make_frame(tuple(None if i in axes else ("L", i) for i in range(rank[1])),
                          (), None, 0)
    ahead = [a for a in axes if a >= 0]
    behind = [a for a in axes if a < 0]
    left = tuple(None if i in ahead else ("L", i) for i in range(max(ahead, default=-1) + 1))
    right = tuple(None if j in behind else ("R", j) for j in range(min(behind, default=0), 0))
    return Frame(left, right, len(left), len(right))
