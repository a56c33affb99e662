"""The helpers of ``backend="dask"`` that differ from NumPy's.

A Dask module keeps NumPy's helper sources: NumPy hands its functions to Dask arrays through
``__array_function__``, so ``np.broadcast_to(g, shape)`` of a Dask ``g`` is Dask's, lazy.
These are the exceptions, printed in a Dask module under the NumPy helpers' names:

- what NumPy would compute eagerly: ``np.full(shape, g)`` and ``np.full_like(g, g, ...)`` of
  a 0-d Dask ``g`` read its value (a compute on the client), where ``da.broadcast_to`` keeps
  it in the graph;
- what Dask arrays cannot do: ``np.add.at`` (no ufunc methods) becomes ``da.bincount`` over
  the flat positions the index reads, a tree reduction of one partial sum a chunk;
- what should be chunked like the data: a gradient spread over an array of the data's shape
  takes that array's chunks, so that it meets the data chunk for chunk.

Each function here has the NumPy helper's name and signature, and on NumPy values computes
what NumPy's does (they are also the whole module's code where no Dask array is passed).
"""

from __future__ import annotations

import dask.array as da
import numpy as np

from srcgrad.codegen.common.support import match_input as numpy_match_input
from srcgrad.runtime.rules.constructors import full_of as numpy_full_of
from srcgrad.runtime.rules.core import index_put as numpy_index_put
from srcgrad.runtime.rules.core import numel as numpy_numel
from srcgrad.runtime.rules.core import scatter_add as numpy_scatter_add
from srcgrad.runtime.rules.core import unreduce as numpy_unreduce
from srcgrad.runtime.rules.decompositions import qr_q as numpy_qr_q
from srcgrad.runtime.rules.decompositions import qr_r as numpy_qr_r
from srcgrad.runtime.rules.decompositions import svd_u as numpy_svd_u
from srcgrad.runtime.rules.decompositions import svd_vh as numpy_svd_vh
from srcgrad.runtime.rules.primitives import unbroadcast as numpy_unbroadcast
from srcgrad.runtime.rules.statistics import vector_gradient as numpy_vector_gradient

__all__ = ["HELPERS", "filled"]


def is_dask(x):
    """Whether ``x`` is a Dask array (told by its class, without importing Dask)."""
    return type(x).__module__.split(".")[0] == "dask"


def numel(shape):
    """Number of elements of an array of ``shape``; refused where Dask does not know it."""
    if any(n != n for n in shape):    # nan: chunk sizes Dask learns only by computing
        unknown_size()
    return numpy_numel(shape)


def unknown_size():
    """Refuse an array of a size Dask knows only once computed."""
    raise NotImplementedError('an array of unknown size (a Dask array with unknown chunk '
                              'sizes, after a boolean mask or from a DataFrame); call '
                              'x.compute_chunk_sizes() first')


def filled(like, value):
    """``np.full(np.shape(like), value)``: chunked as ``like``, lazily, when either is Dask."""
    if not (is_dask(like) or is_dask(value)):
        return np.full(np.shape(like), value)
    return da.broadcast_to(value, np.shape(like), chunks=like.chunks if is_dask(like) else None)


def match_input(g, x):
    """The gradient ``g`` shaped as the input ``x``, as NumPy's ``match_input``; a Dask
    gradient stays lazy (a 0-d Dask array for a float), and the gradient of a Dask input is
    a Dask array in its chunks."""
    if is_dask(x) and not is_dask(g) and x.dtype.kind in 'fc':
        g = np.asarray(g)
        if 0 in g.strides:            # a broadcast view: its one copy of each value suffices
            g = g[tuple(slice(0, 1) if s == 0 else slice(None) for s in g.strides)].copy()
        lead = x.ndim - g.ndim
        chunks = tuple(c if n == m else (n,) for c, n, m in
                       zip(x.chunks[lead:], g.shape, x.shape[lead:]))
        g = da.broadcast_to(da.from_array(g, chunks=chunks), x.shape, chunks=x.chunks)
    if not is_dask(g):
        return numpy_match_input(g, x)
    if isinstance(x, float):
        dtype = np.float64 if type(x) is float else x.dtype
    elif hasattr(x, 'dtype') and x.dtype.kind in 'fc':
        dtype = x.dtype
    else:
        return None
    if g.shape != np.shape(x):
        g = da.broadcast_to(g, np.shape(x), chunks=x.chunks if is_dask(x) else None)
    elif is_dask(x) and g.chunks != x.chunks:
        g = g.rechunk(x.chunks)
    return g if g.dtype == dtype else g.astype(dtype)


def unreduce(g, *, shape, axis=None, keepdims=False):
    """Spread the gradient of a reduction back over the reduced ``shape``."""
    if not is_dask(g):
        return numpy_unreduce(g, shape=shape, axis=axis, keepdims=keepdims)
    if g.ndim and axis is not None and not keepdims:
        g = np.expand_dims(g, tuple(a % len(shape) for a in np.atleast_1d(axis).tolist()))
    if g.ndim not in (0, len(shape)):
        return np.broadcast_to(g, shape)
    chunks = tuple(c if n == m else 'auto' for c, n, m in zip(g.chunks, g.shape, shape)) \
        if g.ndim else 'auto'         # spread axes in chunks of Dask's usual size
    return da.broadcast_to(g, shape, chunks=da.core.normalize_chunks(chunks, tuple(shape),
                                                                     dtype=g.dtype))


def scatter_add(out, index, g):
    """``out[index] += g``, repeated indices adding up; returns ``out`` (a Dask ``out`` is
    a new array: Dask's item assignment builds a new graph)."""
    keys = index if isinstance(index, tuple) else (index,)
    fancy = any(getattr(k, 'dtype', None) is not None and k.dtype.kind in 'iu'
                or isinstance(k, list) for k in keys)
    if not (is_dask(out) or is_dask(g) or any(is_dask(k) for k in keys)):
        return numpy_scatter_add(out, index, g)
    if any(is_dask(k) and k.dtype.kind == 'b' for k in keys) or unknown(g):
        raise NotImplementedError(
            'a boolean mask of Dask values selects a number of elements known only once '
            'computed, so Dask cannot place their gradient lazily; np.where(mask, x, 0) '
            'keeps the shape')
    out = da.asarray(out)
    if not fancy:                     # slices, integers, masks: each position once
        return put(out, index, taken(out, index) + g)
    if out.size > 4194304:            # a partial sum a chunk: up to 32 MiB of float64 each
        raise NotImplementedError(
            f'a gradient scattered through an integer index into {out.size} elements: Dask '
            f'cannot add repeated positions in place, and srcgrad sums a whole partial '
            f'output a chunk only up to 4194304 elements')
    positions = da.arange(out.size).reshape(out.shape)
    if hasattr(index, 'ndim') and index.ndim > 1:      # Dask takes one axis of indices
        positions = positions[index.ravel()].reshape(index.shape + out.shape[1:])
    else:
        positions = positions[index]
    g = da.broadcast_to(g, positions.shape).rechunk(positions.chunks)
    added = da.bincount(positions.ravel(), weights=g.ravel(), minlength=out.size)
    return out + added.reshape(out.shape).astype(out.dtype)


def full_of(value, *, shape, dtype=None):
    """``np.full(shape, value, dtype)``; a Dask ``value`` stays in the graph."""
    if not is_dask(value):
        return numpy_full_of(value, shape=shape, dtype=dtype)
    out = da.broadcast_to(value, shape)
    return out if dtype is None else out.astype(dtype)


def index_put(x, v, *, index):
    """``x`` with ``x[index] = v``, as a new array; Dask's when either is."""
    keys = index if isinstance(index, tuple) else (index,)
    if not (is_dask(x) or is_dask(v) or any(is_dask(k) for k in keys)):
        return numpy_index_put(x, v, index=index)
    return put(da.asarray(x), index, v)


def put(out, index, v):
    """A new Dask array: ``out`` with ``out[index] = v``.  A boolean mask of ``out``'s shape
    is ``da.where`` for one value, and its flat positions for several (a mask of Dask values
    leaves those unknown: refused); ``None`` axes are dropped (Dask's item assignment takes
    none)."""
    keys = index if isinstance(index, tuple) else (index,)
    mask = keys[0] if len(keys) == 1 and getattr(keys[0], 'dtype', None) is not None and \
        keys[0].dtype.kind == 'b' and keys[0].shape == out.shape else None
    if mask is not None and np.ndim(v) == 0:
        return da.where(mask, v, out).astype(out.dtype)
    if any(is_dask(k) and k.dtype.kind == 'b' for k in keys) or unknown(v):
        raise NotImplementedError(
            'values placed through a boolean mask of Dask values have no known positions '
            'until it is computed; np.where(mask, value, x) keeps the shape')
    if mask is not None:
        at = np.flatnonzero(mask)
        flat = out.ravel().copy()
        flat[at] = da.broadcast_to(da.asarray(v).ravel(), at.shape)
        return flat.reshape(out.shape)
    index, v = without_new_axes(keys, da.broadcast_to(v, out[index].shape))
    out = out.copy()                  # item assignment rebinds the graph of its Array
    out[index] = v
    return out


def taken(out, index):
    """``out[index]``; through a NumPy mask of ``out``'s shape, by the flat positions it
    selects (Dask's indexing by an N-d mask leaves the size unknown)."""
    if getattr(index, 'dtype', None) is not None and index.dtype.kind == 'b' and \
            not is_dask(index) and index.shape == out.shape and index.ndim > 1:
        return out.ravel()[np.flatnonzero(index)]
    return out[index]


def unknown(x):
    """Whether ``x``'s shape holds a size Dask knows only once computed (nan)."""
    return any(n != n for n in np.shape(x))


def unbroadcast(x, shape):
    """Sum ``x`` down to ``shape``, undoing NumPy broadcasting; refused for sizes Dask does
    not know yet."""
    if unknown(x) or any(n != n for n in shape):
        unknown_size()
    return numpy_unbroadcast(x, shape)


def indexed(x, index):
    """``x[index]`` for an index known when the code runs; a NumPy ``x`` indexed by Dask
    values becomes Dask's (NumPy's indexing would compute the index)."""
    keys = index if isinstance(index, tuple) else (index,)
    if not any(is_dask(k) for k in keys):
        return x[index]
    x = da.asarray(x)
    if is_dask(index) and index.dtype.kind in 'iu' and index.ndim > 1:    # one axis at a time
        return x[index.ravel()].reshape(index.shape + x.shape[1:])
    return x[index]


def signs_differ():
    """Refuse a factor of Dask's QR or SVD."""
    raise NotImplementedError("Dask's blocked QR and SVD may give factors of other signs than "
                              "NumPy's, which makes a function of Q, R, U or Vh another "
                              "function than NumPy's")


def qr_q(a):
    """``Q`` of ``np.linalg.qr(a)``: NumPy's; refused for a Dask ``a``."""
    if is_dask(a):
        signs_differ()
    return numpy_qr_q(a)


def qr_r(a):
    """``R`` of ``np.linalg.qr(a)``: NumPy's; refused for a Dask ``a``."""
    if is_dask(a):
        signs_differ()
    return numpy_qr_r(a)


def svd_u(a):
    """``U`` of ``np.linalg.svd(a, full_matrices=False)``: NumPy's; refused for Dask's."""
    if is_dask(a):
        signs_differ()
    return numpy_svd_u(a)


def svd_vh(a):
    """``Vh`` of ``np.linalg.svd(a, full_matrices=False)``: NumPy's; refused for Dask's."""
    if is_dask(a):
        signs_differ()
    return numpy_svd_vh(a)


def vector_gradient(f, *, edge_order=1):
    """``np.gradient(f, edge_order=edge_order)`` of a 1-D ``f``; refused for a Dask ``f``
    (Dask's returns a list of one array, where NumPy's returns the array)."""
    if is_dask(f):
        raise NotImplementedError("np.gradient of a 1-d Dask array returns a list, where "
                                  "NumPy's returns an array")
    return numpy_vector_gradient(f, edge_order=edge_order)


def without_new_axes(keys, g):
    """``(index, g)`` with the ``None`` of a basic index dropped and ``g``'s axes of length
    one that they made squeezed out (Dask's item assignment takes no new axis)."""
    if not any(k is None for k in keys) or any(hasattr(k, 'ndim') and k.ndim for k in keys):
        return keys, g
    slices = sum(isinstance(k, slice) for k in keys)
    nones = sum(k is None for k in keys)
    axis, new = 0, []
    for k in keys:
        if k is None:
            new.append(axis)
            axis += 1
        elif isinstance(k, slice):
            axis += 1
        elif k is Ellipsis:                 # the axes it stands for
            axis += g.ndim - slices - nones
    return tuple(k for k in keys if k is not None), da.squeeze(g, axis=tuple(new))


HELPERS = {f.__name__: f for f in (numel, unbroadcast, match_input, unreduce, scatter_add,
                                   filled, full_of, indexed,
                                   index_put, qr_q, qr_r, svd_u, svd_vh, vector_gradient)}
"""The Dask versions, by the name of the NumPy helper each replaces."""
