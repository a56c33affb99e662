"""Shape, joining and indexing; gathering along an axis; copies and moves between
devices."""

from __future__ import annotations

import numpy as np

from srcgrad.runtime.rules.core import along, getitem, inverse_permutation, unindex
from srcgrad.runtime.rules.primitives import (
    bind_numpy,
    defjvp,
    defvjp,
    defvjp_argnum,
    helper,
    lookup,
    primitive,
    sum_to,
)


@helper
def tile_grad(g, shape, reps):
    """Gradient of ``np.tile`` of an array of ``shape``: the tiles summed."""
    reps = (reps,) if isinstance(reps, int) else tuple(reps)
    nd = max(len(reps), len(shape))
    reps = (1,) * (nd - len(reps)) + reps
    pairs = zip(reps, (1,) * (nd - len(shape)) + tuple(shape))
    grouped = np.reshape(g, [n for pair in pairs for n in pair])
    return np.reshape(np.sum(grouped, axis=tuple(range(0, 2 * nd, 2))), shape)


@helper
def repeat_grad(g, shape, repeats, axis=None):
    """Gradient of ``np.repeat`` of an array of ``shape``: the repeats summed."""
    if np.ndim(repeats) and np.size(repeats) > 1:      # a count per element: add them up
        g = np.asarray(g)
        moved = np.reshape(g, -1) if axis is None else np.moveaxis(g, axis, 0)
        n = int(np.prod(shape)) if axis is None else shape[axis]
        owner = np.repeat(np.arange(n), repeats)
        out = np.zeros((n,) + moved.shape[1:], dtype=g.dtype)
        np.add.at(out, owner, moved)
        return np.reshape(out, shape) if axis is None else np.moveaxis(out, 0, axis)
    repeats = int(np.reshape(repeats, -1)[0]) if np.ndim(repeats) else repeats
    if axis is None:        # the count spelt out: -1 is ambiguous for an empty result
        size = int(np.prod(shape))
        return np.reshape(np.sum(np.reshape(g, (size, repeats)), axis=1), shape)
    axis = axis % len(shape)
    split = tuple(shape[:axis]) + (shape[axis], repeats) + tuple(shape[axis + 1:])
    return np.sum(np.reshape(g, split), axis=axis + 1)


@helper
def negated(shift):
    """``-shift`` for an int or a tuple of ints (``np.roll``'s shift, undone)."""
    if isinstance(shift, (tuple, list)):
        return tuple(-int(s) for s in shift)
    return -int(shift)


@helper
def take_index(indices, axis, shape):
    """The index ``x[...]`` equivalent to ``np.take(x, indices, axis)``."""
    return np.unravel_index(indices, shape) if axis is None else along(axis, indices)


def _concatenate_vjp(argnum, g, ans, *xs, axis=0):
    start = sum(x.shape[axis] for x in xs[:argnum])
    return getitem(g, index=along(axis, slice(start, start + xs[argnum].shape[axis])))


defvjp(np.reshape, lambda g, ans, x, shape=None: np.reshape(g, x.shape), nin=1)
defvjp(np.ravel, lambda g, ans, x: np.reshape(g, x.shape), nin=1)
defvjp(np.squeeze, lambda g, ans, x, axis=None: np.reshape(g, x.shape), nin=1)
defvjp(np.expand_dims, lambda g, ans, x, axis: np.reshape(g, x.shape), nin=1)
defvjp(np.transpose, lambda g, ans, x, axes=None: np.transpose(g, inverse_permutation(axes)),
       nin=1)
defvjp(np.swapaxes, lambda g, ans, x, axis1, axis2: np.swapaxes(g, axis1, axis2), nin=1)
defvjp(np.moveaxis, lambda g, ans, x, source, destination: np.moveaxis(g, destination, source),
       nin=1)
defvjp(np.broadcast_to, lambda g, ans, x, shape: sum_to(g, shape=x.shape), nin=1)
defvjp(np.flip, lambda g, ans, x, axis=None: np.flip(g, axis=axis), nin=1)
lookup(np.squeeze).shift, lookup(np.expand_dims).shift = "drop_axis", "new_axis"
for _f in (np.reshape, np.ravel, np.transpose, np.swapaxes, np.moveaxis, np.broadcast_to,
           np.flip):
    lookup(_f).shift = "rearrange"                  # a hint: see rules/__init__.py
defvjp(np.roll, lambda g, ans, x, shift, axis=None: np.roll(g, negated(shift), axis=axis),
       nin=1)
# Of a 1-D ``x`` NumPy builds a square matrix whose rows are all ``x``: the rows of the
# masked gradient are summed back (``sum_to``); of a matrix or a stack it is the mask alone.
defvjp(np.tril, lambda g, ans, x, k=0: sum_to(np.tril(g, k=k), shape=x.shape), nin=1)
defvjp(np.triu, lambda g, ans, x, k=0: sum_to(np.triu(g, k=k), shape=x.shape), nin=1)
defvjp(np.tile, lambda g, ans, x, reps: tile_grad(g, x.shape, reps), nin=1)
defvjp(np.repeat, lambda g, ans, x, repeats, axis=None: repeat_grad(g, x.shape, repeats, axis),
       nin=1)
defvjp(np.copy, lambda g, ans, x: g, nin=1)
defvjp(np.take, lambda g, ans, x, indices, axis=None: unindex(
    g, index=take_index(indices, axis, x.shape), shape=x.shape), nin=1)


@primitive(nin=None)
def concatenate(*xs, axis=0):
    return np.concatenate(xs, axis=axis)


@primitive(nin=None)
def stack(*xs, axis=0):
    return np.stack(xs, axis=axis)


def _concatenate_adapter(arrays, axis=0, out=None, **kw):
    if axis is None:
        return concatenate(*[np.ravel(a) for a in arrays], axis=0)
    return concatenate(*arrays, axis=axis)


defvjp_argnum(concatenate, _concatenate_vjp, reads={"xs": "meta"})
defvjp_argnum(stack, lambda argnum, g, ans, *xs, axis=0: getitem(g, index=along(axis, argnum)),
              reads={})
bind_numpy(np.concatenate, concatenate, _concatenate_adapter)
bind_numpy(np.stack, stack, lambda arrays, axis=0, out=None, **kw: stack(*arrays, axis=axis))
concatenate.spelling = ("sequence", np.concatenate)     # np.concatenate([a, b], axis=...)
stack.spelling = ("sequence", np.stack)



# ---------------------------------------------------------------------------------------------
# Gathering along an axis (max/min over a dim, as PyTorch's ``max(dim)``).


@primitive(dtype_rule="same")
def take_along(x, *, indices, axis, keepdims=True):
    out = np.take_along_axis(x, indices, axis=axis)
    return out if keepdims else np.squeeze(out, axis=axis)


@primitive(dtype_rule="same")
def untake_along(g, *, indices, axis, shape, keepdims=True):
    """The adjoint of ``take_along`` for indices unique within each slice (argmax, argsort)."""
    if not keepdims:
        g = np.expand_dims(g, axis)
    out = np.zeros_like(g, shape=shape)
    np.put_along_axis(out, indices, g, axis=axis)
    return out


defvjp(take_along, lambda g, ans, x, indices, axis, keepdims=True:
       untake_along(g, indices=indices, axis=axis, shape=x.shape, keepdims=keepdims))
defvjp(untake_along, lambda g, ans, gy, indices, axis, shape, keepdims=True:
       take_along(g, indices=indices, axis=axis, keepdims=keepdims))

# ---------------------------------------------------------------------------------------------
# Copies: overwriting (``copy_``, ``fill_``) and moving between devices.


@primitive(nin=2, dtype_rule="same")
def overwrite(x, src):
    """``x`` replaced by ``src`` broadcast to its shape and cast to its dtype."""
    return np.broadcast_to(src, x.shape).astype(x.dtype)


@primitive(dtype_rule="same")
def to_device(x, *, device, source):
    from srcgrad.runtime.device import device as _device
    from srcgrad.runtime.device import move
    return move(x, _device(device))


defvjp(overwrite, lambda g, ans, x, src: np.zeros_like(g), lambda g, ans, x, src: g,
       broadcasts=True)
defvjp(to_device, lambda g, ans, x, device, source: to_device(g, device=source, source=device))

# Forward mode: every primitive here moves, copies or selects entries: linear.
for _f in (np.reshape, np.ravel, np.squeeze, np.expand_dims, np.transpose, np.swapaxes,
           np.moveaxis, np.broadcast_to, np.flip, np.roll, np.tril, np.triu, np.tile,
           np.repeat, np.copy, np.take, concatenate, stack, take_along, untake_along, overwrite,
           to_device):
    defjvp(_f, linear=True)
