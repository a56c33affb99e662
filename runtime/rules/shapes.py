"""Shapes: ``atleast_1d/2d/3d``, splitting (``split`` and its relatives return lists), joining
(``hstack`` and its relatives), ``append``, ``diff``, ``pad``, ``rot90``, flips and
``rollaxis``.

A NumPy function whose call is a valid call of the primitive is registered under its own
name.  The others are a primitive of their own that is never printed as the NumPy function
(``split_piece``, ``joined``): NumPy's name is bound, with an adapter, to the primitive that
describes it best (``getitem``, ``concatenate``), and the compiler lowers the call in
``SPECIAL_CALLS``.
"""

from __future__ import annotations

import numpy as np

from srcgrad.runtime.rules.arrays import concatenate
from srcgrad.runtime.rules.core import along, getitem, numel, unindex
from srcgrad.runtime.rules.primitives import (
    bind_numpy,
    defjvp,
    defvjp,
    defvjp_argnum,
    helper,
    lookup,
    primitive,
)

__all__ = ["split_piece", "joined", "joined_rows", "rows_source", "split_index", "join_index",
           "section_count", "carries_gradient", "ATLEAST", "JOINS", "SPLITS", "PAD_MODES",
           "pad_options", "diff_grad", "pad_source", "rollaxis_back"]

ATLEAST = {1: np.atleast_1d, 2: np.atleast_2d, 3: np.atleast_3d}
JOINS = {np.hstack: "hstack", np.vstack: "vstack", np.dstack: "dstack",
         np.column_stack: "column_stack"}
if hasattr(np, "row_stack"):              # vstack's old name (deprecated in NumPy 2.0)
    JOINS[np.row_stack] = "vstack"
SPLITS = {np.split: (0, True), np.array_split: (0, False), np.hsplit: ("h", True),
          np.vsplit: ("v", True), np.dsplit: ("d", True)}
"""NumPy's split functions → (axis, or the letter of hsplit/vsplit/dsplit; whether the
sections must be equal, as in ``np.split``)."""
PAD_MODES = {"constant": ("constant_values",), "edge": (), "wrap": (),
             "reflect": ("reflect_type",), "symmetric": ("reflect_type",)}
"""``np.pad`` modes whose result copies input entries (→ the keywords each takes)."""


def carries_gradient(value: object) -> bool:
    """Whether an eager argument is an array that requires a gradient."""
    return bool(getattr(value, "requires_grad", False))


def pad_options(mode: object, options: dict) -> None:
    """Refuse an ``np.pad`` mode or keyword that the rule does not model exactly."""
    if not isinstance(mode, str) or mode not in PAD_MODES:
        raise TypeError(f"np.pad(mode={mode!r}) is not supported by srcgrad (supported: "
                        f"{', '.join(PAD_MODES)})")
    for key, value in options.items():
        if key not in PAD_MODES[mode]:
            raise TypeError(f"np.pad(mode={mode!r}) argument {key!r} is not supported by srcgrad")
        if key == "reflect_type" and value != "even":
            raise TypeError("np.pad(reflect_type='odd') is not supported by srcgrad")
        if carries_gradient(value):
            raise TypeError("np.pad(constant_values=) that requires a gradient is not supported "
                            "by srcgrad")


# ---------------------------------------------------------------------------------------------
# atleast_1d/2d/3d: one primitive each (a reshape); several arguments give a tuple.

def _atleast_adapter(prim):
    def call(*arys):
        outs = [prim(a) for a in arys]
        return outs[0] if len(outs) == 1 else tuple(outs)
    return call


for _f in ATLEAST.values():
    _prim = defvjp(_f, lambda g, ans, x: np.reshape(g, x.shape), nin=1)
    bind_numpy(_f, _prim, _atleast_adapter(_prim))


# ---------------------------------------------------------------------------------------------
# Splitting: piece k of the list NumPy returns.

@helper
def split_axis(ndim, axis):
    """The axis a split works on: ``axis``, or that of ``np.hsplit``/``vsplit``/``dsplit``
    ("h", "v", "d"), with NumPy's errors."""
    if axis == "h":
        if ndim == 0:
            raise ValueError("hsplit only works on arrays of 1 or more dimensions")
        return 1 if ndim > 1 else 0
    if axis in ("v", "d"):
        need = 2 if axis == "v" else 3
        if ndim < need:
            raise ValueError(f"{axis}split only works on arrays of {need} or more dimensions")
        return 0 if axis == "v" else 2
    return np.lib.array_utils.normalize_axis_index(axis, ndim)


def section_count(sections: object) -> int:
    """How many pieces a split gives: the number of sections, or one more than the indices."""
    if isinstance(sections, (int, np.integer)):
        if sections <= 0:
            raise ValueError("number sections must be larger than 0.")
        return int(sections)
    return len(sections) + 1


@helper
def split_index(shape, sections, axis, k, even):
    """The index of piece ``k`` of ``np.array_split(x, sections, axis)`` for ``x`` of
    ``shape`` (``np.split`` when ``even``: unequal sections raise as in NumPy)."""
    axis = split_axis(len(shape), axis)
    n = shape[axis]
    if isinstance(sections, int):
        if even and n % sections:
            raise ValueError("array split does not result in an equal division")
        size, extra = divmod(n, sections)
        start = k * size + min(k, extra)
        stop = start + size + (1 if k < extra else 0)
    else:
        points = [0] + list(sections) + [n]
        start, stop = points[k], points[k + 1]
    return along(axis, slice(start, stop))


@primitive(dtype_rule="same")
def split_piece(x, *, sections, axis=0, k=0, even=False):
    """Piece ``k`` of ``np.array_split(x, sections, axis)`` (of ``np.split`` when ``even``)."""
    return x[split_index(np.shape(x), sections, axis, k, even)]


defvjp(split_piece, lambda g, ans, x, sections, axis=0, k=0, even=False: unindex(
    g, index=split_index(x.shape, sections, axis, k, even), shape=x.shape))


def _split_adapter(fun, axis_code, even):
    def call(ary, indices_or_sections, axis=0):
        sections = indices_or_sections
        sections = int(sections) if isinstance(sections, (int, np.integer)) else [
            int(i) for i in sections]
        return [split_piece(ary, sections=sections, axis=axis if axis_code == 0 else axis_code,
                            k=k, even=even) for k in range(section_count(sections))]
    if axis_code != 0:
        return lambda ary, indices_or_sections: call(ary, indices_or_sections)
    return call


for _f, (_axis, _even) in SPLITS.items():
    bind_numpy(_f, getitem, _split_adapter(_f, _axis, _even))


# ---------------------------------------------------------------------------------------------
# Joining: hstack, vstack, dstack, column_stack of several arrays.

@helper
def join_index(how, argnum, *shapes):
    """Where input ``argnum`` lies in ``np.<how>`` of arrays of ``shapes``: an index of the
    result (of the shape the join gives that input)."""
    def at_least(shape, nd):
        shape = tuple(shape)
        if len(shape) >= nd:
            return shape
        if nd < 3:
            return (1,) * (nd - len(shape)) + shape
        return {0: (1, 1, 1), 1: (1,) + shape + (1,), 2: shape + (1,)}[len(shape)]
    if how == "column_stack":
        shapes = [tuple(s) + (1,) if len(s) == 1 else at_least(s, 2) for s in shapes]
        axis = 1
    elif how == "hstack":
        shapes = [at_least(s, 1) for s in shapes]
        axis = 0 if len(shapes[0]) == 1 else 1
    else:
        shapes = [at_least(s, 2 if how == "vstack" else 3) for s in shapes]
        axis = 0 if how == "vstack" else 2
    start = sum(s[axis] for s in shapes[:argnum])
    return along(axis, slice(start, start + shapes[argnum][axis]))


@primitive(nin=None)
def joined(*xs, how):
    """``np.hstack(xs)`` (``how`` names the join: hstack, vstack, dstack, column_stack)."""
    return getattr(np, how)(xs)


defvjp_argnum(joined, lambda argnum, g, ans, *xs, how: np.reshape(getitem(
    g, index=join_index(how, argnum, *[np.shape(x) for x in xs])), np.shape(xs[argnum])),
              reads={"xs": "meta"})


@helper
def rows_source(how, shape):
    """For each entry of ``np.<how>(x)`` of an array ``x`` of ``shape`` (NumPy joins its
    rows ``x[0], x[1], …``): the flat position of the entry of ``x`` it copies."""
    return getattr(np, how)(np.reshape(np.arange(numel(shape)), shape))


@primitive
def joined_rows(x, *, how):
    """``np.<how>(x)`` of one array (not a list of them): NumPy joins its rows."""
    return getattr(np, how)(x)


defvjp(joined_rows, lambda g, ans, x, how: np.reshape(unindex(
    np.reshape(g, (-1,)), index=np.reshape(rows_source(how, x.shape), (-1,)),
    shape=(numel(x.shape),)), x.shape))


def _join_adapter(how):
    def call(tup, *, dtype=None, casting="same_kind"):
        if dtype is not None or casting != "same_kind":
            raise TypeError(f"np.{how}() arguments dtype and casting are not supported by "
                            "srcgrad")
        if hasattr(tup, "shape") and hasattr(tup, "ndim"):     # one array: its rows
            return joined_rows(tup, how=how)
        return joined(*tup, how=how)
    return call


for _f, _how in JOINS.items():
    bind_numpy(_f, concatenate, _join_adapter(_how))


def _append(arr, values, axis=None):
    if axis is None:
        return concatenate(np.ravel(arr), np.ravel(values), axis=0)
    return concatenate(arr, values, axis=axis)


bind_numpy(np.append, concatenate, _append)


# ---------------------------------------------------------------------------------------------
# diff, pad, rot90, flips, rollaxis.

@helper
def diff_grad(g, shape, n, axis, prepend=None, append=None):
    """Gradient of ``np.diff(x, n, axis, prepend, append)`` for ``x`` of ``shape``."""
    axis = np.lib.array_utils.normalize_axis_index(axis, len(shape))
    for _ in range(n):
        zero = np.zeros(g.shape[:axis] + (1,) + g.shape[axis + 1:], dtype=g.dtype)
        g = -np.diff(np.concatenate([zero, g, zero], axis=axis), axis=axis)
    before = 0 if prepend is None else 1 if np.ndim(prepend) == 0 else np.shape(prepend)[axis]
    return g[along(axis, slice(before, before + shape[axis]))]


defvjp(np.diff, lambda g, ans, a, n=1, axis=-1, prepend=None, append=None: diff_grad(
    g, a.shape, n, axis, prepend, append), nin=1)


def _checked_diff(a, n=1, axis=-1, **ends):
    for key, value in ends.items():
        if carries_gradient(value):
            raise TypeError(f"np.diff({key}=) that requires a gradient is not supported by "
                            "srcgrad")
    return lookup(np.diff)(a, n=n, axis=axis, **ends)


bind_numpy(np.diff, lookup(np.diff), _checked_diff)


@helper
def pad_source(shape, pad_width, mode, reflect_type="even"):
    """For each entry of ``np.pad(x, pad_width, mode)`` of ``x`` of ``shape``: the flat
    position of the entry of ``x`` it copies (``numel(shape)`` for a constant)."""
    size = numel(shape)
    positions = np.arange(size).reshape(shape)
    if mode == "constant":
        return np.pad(positions, pad_width, mode="constant", constant_values=size)
    if mode in ("reflect", "symmetric"):
        return np.pad(positions, pad_width, mode=mode, reflect_type=reflect_type)
    return np.pad(positions, pad_width, mode=mode)


def _pad_vjp(g, ans, array, pad_width, mode="constant", constant_values=0, reflect_type="even"):
    size = numel(array.shape)
    flat = unindex(np.reshape(g, (-1,)), index=np.reshape(
        pad_source(array.shape, pad_width, mode, reflect_type), (-1,)), shape=(size + 1,))
    return np.reshape(getitem(flat, index=slice(0, size)), array.shape)


defvjp(np.pad, _pad_vjp, nin=1)


def _pad(array, pad_width, mode="constant", **options):
    pad_options(mode, options)
    return lookup(np.pad)(array, pad_width=pad_width, mode=mode, **options)


bind_numpy(np.pad, lookup(np.pad), _pad)


@helper
def rollaxis_back(ndim, axis, start):
    """The axes that undo ``np.rollaxis(x, axis, start)`` for ``x`` of ``ndim`` dimensions."""
    axis = np.lib.array_utils.normalize_axis_index(axis, ndim)
    start = start + ndim if start < 0 else start
    if not 0 <= start <= ndim:
        raise np.exceptions.AxisError(f"start arg {start} out of bounds for {ndim} dims")
    start = start - 1 if axis < start else start
    order = [a for a in range(ndim) if a != axis]
    order.insert(start, axis)
    return tuple(int(i) for i in np.argsort(order))


defvjp(np.rot90, lambda g, ans, m, k=1, axes=(0, 1): np.rot90(g, -k, axes=axes), nin=1)
defvjp(np.fliplr, lambda g, ans, m: np.fliplr(g), nin=1)
defvjp(np.flipud, lambda g, ans, m: np.flipud(g), nin=1)
defvjp(np.rollaxis, lambda g, ans, a, axis, start=0: np.transpose(
    g, rollaxis_back(a.ndim, axis, start)), nin=1)

# Forward mode: all linear, except that ``diff``'s ``prepend``/``append`` and ``pad``'s
# ``constant_values`` are constants, whose tangent is zero.
for _f in (*ATLEAST.values(), split_piece, joined, joined_rows, np.rot90, np.fliplr, np.flipud,
           np.rollaxis):
    defjvp(_f, linear=True)


def _diff_jvp(tangents, ans, a, n=1, axis=-1, **ends):
    """``diff``'s tangent: the ends it adds (``prepend``, ``append``) are constants."""
    return np.diff(tangents[0], n=n, axis=axis, **{k: 0.0 * v for k, v in ends.items()
                                                   if v is not None})


def _pad_jvp(tangents, ans, array, pad_width, mode="constant", **options):
    """``pad``'s tangent: the constant it pads with has none."""
    return np.pad(tangents[0], pad_width, mode=mode,
                  **{k: v for k, v in options.items() if k != "constant_values"})


defjvp(np.diff, _diff_jvp)
defjvp(np.pad, _pad_jvp)
