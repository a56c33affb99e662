"""Discrete Fourier transforms: ``np.fft.fft``, ``ifft``, ``rfft`` and ``irfft`` with ``n``,
``axis`` and ``norm``, and their N-d forms (``fftn``, ``fft2`` ... with ``s`` and ``axes``).

Their results (or arguments) are complex.  The gradient of a real loss ``L`` with respect to
a complex value ``z = a + ib`` is carried as ``dL/da + i dL/db`` (PyTorch's convention), so a
real input's gradient is the real part of the adjoint map applied to it.  Each transform is
linear over the reals: ``fft``'s adjoint is the unscaled inverse transform times the
transform's own scale, ``rfft``'s the same of the half spectrum padded with zeros, and
``irfft``'s is the unscaled ``rfft`` with the entries NumPy counts twice (all but the first and,
for an even length, the last) doubled.  An ``n`` that crops or pads the input crops or pads its
gradient back.

Only the transforms and ``np.abs`` (whose rule ``g * z / |z|`` holds for complex ``z``)
follow complex values: any other rule meeting one is refused at run time
(:data:`~srcgrad.runtime.rules.primitives.Primitive.complex_vjp`).  The compiler refuses the
transforms (``eager_only``): the default mode runs such programs on the eager engine.
"""

from __future__ import annotations

import math

import numpy as np

from srcgrad.runtime.rules.core import getitem
from srcgrad.runtime.rules.primitives import defjvp, defvjp, helper, lookup

__all__ = ["fft_scale", "fit_length", "fit_shape", "hermitian_weights", "TRANSFORMS",
           "ND_TRANSFORMS"]

@helper
def fft_scale(size, norm, inverse):
    """The factor NumPy's transform of ``size`` points multiplies its sum by."""
    norm = "backward" if norm is None else norm
    if norm == "ortho":
        return 1.0 / math.sqrt(size)
    return 1.0 / size if (norm == "forward") != inverse else 1.0


@helper
def transform_size(shape, n, axis, inverse_real):
    """The number of points the transform uses (``n``, or what the input's length implies)."""
    if n is not None:
        return n
    length = shape[axis]
    return 2 * (length - 1) if inverse_real else length


@helper
def fit_length(g, length, axis):
    """``g`` cropped, or padded with zeros, to ``length`` along ``axis``: the gradient of the
    input a transform cropped or padded to ``g``'s length."""
    have = np.shape(g)[axis]
    if have >= length:
        key = [slice(None)] * np.ndim(g)
        key[axis] = slice(0, length)
        return g[tuple(key)]
    widths = [(0, 0)] * np.ndim(g)
    widths[axis % np.ndim(g)] = (0, length - have)
    return np.pad(g, widths)


@helper
def hermitian_weights(size, ndim, axis):
    """How many times ``irfft`` of ``size`` points counts each entry of the half spectrum: 1
    for the first and (an even size) the last, 2 for the others; laid along ``axis``."""
    w = np.full(size // 2 + 1, 2.0)
    w[0] = 1.0
    if size % 2 == 0:
        w[-1] = 1.0
    shape = [1] * ndim
    shape[axis] = w.shape[0]
    return w.reshape(shape)


@helper
def real_part_for(g, a):
    """``g`` as the gradient of ``a``: its real part when ``a`` is real."""
    data = getattr(a, "_data", a)
    return g if np.iscomplexobj(data) else np.real(g)


def _fft_a(g, ans, a, n=None, axis=-1, norm=None):
    size = transform_size(a.shape, n, axis, False)
    back = lookup(np.fft.ifft)(g, n=size, axis=axis, norm="forward") * fft_scale(size, norm, False)
    return real_part_for(fit_length(back, a.shape[axis], axis), a)


def _ifft_a(g, ans, a, n=None, axis=-1, norm=None):
    size = transform_size(a.shape, n, axis, False)
    back = lookup(np.fft.fft)(g, n=size, axis=axis, norm="backward") * fft_scale(size, norm, True)
    return real_part_for(fit_length(back, a.shape[axis], axis), a)


def _rfft_a(g, ans, a, n=None, axis=-1, norm=None):
    size = transform_size(a.shape, n, axis, False)
    back = lookup(np.fft.ifft)(g, n=size, axis=axis, norm="forward") * fft_scale(size, norm, False)
    return real_part_for(fit_length(back, a.shape[axis], axis), a)


def _irfft_a(g, ans, a, n=None, axis=-1, norm=None):
    size = transform_size(a.shape, n, axis, True)
    half = lookup(np.fft.rfft)(g, axis=axis, norm="backward")
    back = half * hermitian_weights(size, np.ndim(g), axis % np.ndim(g)) * fft_scale(
        size, norm, True)
    return real_part_for(fit_length(back, a.shape[axis], axis), a)


# ---------------------------------------------------------------------------------------------
# N-d transforms: the same adjoints over several axes (the last one the half spectrum's)

@helper
def nd_axes(ndim, s, axes):
    """The axes an N-d transform runs over (NumPy's defaults), non-negative."""
    if axes is None:
        axes = range(ndim) if s is None else range(ndim - len(s), ndim)
    return tuple(a % ndim for a in axes)


@helper
def nd_sizes(shape, s, axes, inverse_real):
    """The number of points along each transformed axis."""
    if s is not None:
        return tuple(s)
    sizes = [shape[a] for a in axes]
    if inverse_real:
        sizes[-1] = 2 * (sizes[-1] - 1)
    return tuple(sizes)


@helper
def nd_scale(sizes, norm, inverse):
    out = 1.0
    for n in sizes:
        out = out * fft_scale(n, norm, inverse)
    return out


@helper
def fit_shape(g, shape, axes):
    """``g`` cropped or padded with zeros, along each of ``axes``, to ``shape``."""
    for a in axes:
        g = fit_length(g, shape[a], a)
    return g


def _nd_rule(forward: bool, half: bool, default_axes: tuple | None):
    def rule(g, ans, a, s=None, axes=default_axes, norm=None):
        ax = nd_axes(np.ndim(a), s, axes)
        sizes = nd_sizes(a.shape, s, ax, half and not forward)
        if forward:                    # fftn, rfftn: the unscaled inverse, padded to sizes
            back = lookup(np.fft.ifftn)(g, s=sizes, axes=ax, norm="forward") * nd_scale(
                sizes, norm, False)
        elif half:                     # irfftn: the unscaled half transform, doubled
            back = lookup(np.fft.rfftn)(g, axes=ax, norm="backward") * hermitian_weights(
                sizes[-1], np.ndim(g), ax[-1]) * nd_scale(sizes, norm, True)
        else:                          # ifftn: the unscaled transform
            back = lookup(np.fft.fftn)(g, s=sizes, axes=ax, norm="backward") * nd_scale(
                sizes, norm, True)
        return real_part_for(fit_shape(back, a.shape, ax), a)
    return rule


ND_TRANSFORMS = {np.fft.fftn: (True, False), np.fft.fft2: (True, False),
                 np.fft.ifftn: (False, False), np.fft.ifft2: (False, False),
                 np.fft.rfftn: (True, True), np.fft.rfft2: (True, True),
                 np.fft.irfftn: (False, True), np.fft.irfft2: (False, True)}
_RULES = {np.fft.fft: _fft_a, np.fft.ifft: _ifft_a, np.fft.rfft: _rfft_a,
          np.fft.irfft: _irfft_a,
          **{f: _nd_rule(forward, half, (-2, -1) if f.__name__.endswith("2") else None)
             for f, (forward, half) in ND_TRANSFORMS.items()}}
TRANSFORMS = tuple(_RULES)
"""The transforms with rules (all eager-only)."""

for _f, _rule in _RULES.items():
    _prim = defvjp(_f, _rule, nin=1)
    defjvp(_prim, linear=True)
    _prim.complex_vjp = _prim.complex_jvp = True
    _prim.eager_only = (f"np.fft.{_f.__name__} makes or reads complex values, which srcgrad's "
                        "compiler does not differentiate (the default mode runs it on the eager "
                        "engine)")
lookup(np.abs).complex_vjp = True          # g * sign(z): z / |z| for a complex z
getitem.complex_vjp = getitem.complex_jvp = True
