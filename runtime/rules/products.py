"""Products: ``dot``, ``inner``, ``vdot``, ``outer``, ``tensordot``, ``kron``, ``cross``,
``convolve``/``correlate`` and ``polyval``, at every rank NumPy accepts.

Each NumPy function is its own primitive (so compiled code calls NumPy's function, with
NumPy's checks and errors); the rank cases live in helpers, because a rule cannot branch on
the rank of a symbolic value.  Helpers read ranks with ``np.ndim`` (a Python float is rank 0).
"""

from __future__ import annotations

import numpy as np

from srcgrad.runtime.rules.primitives import bind_numpy, defjvp, defvjp, helper, lookup, sum_to

__all__ = ["dot_lhs_grad", "dot_rhs_grad", "inner_grad", "inner_rhs_grad", "tensordot_axes",
           "tensordot_lhs_grad", "tensordot_rhs_grad", "kron_grad", "cross_grad",
           "convolve_grad", "polyval_grad", "derivative_powers"]


def known_matrices(a, b) -> bool:
    """Both operands known to be matrices (an unknown rank, as in generic code, is not)."""
    a_ndim, b_ndim = getattr(a, "ndim", None), getattr(b, "ndim", None)
    return isinstance(a_ndim, int) and isinstance(b_ndim, int) and a_ndim == 2 and b_ndim == 2


@helper
def dot_lhs_grad(g, a, b):
    """Gradient of ``np.dot(a, b)`` with respect to ``a``: scalars, vectors and N-D stacks."""
    a_nd, b_nd = np.ndim(a), np.ndim(b)
    if a_nd == 0:
        return np.sum(g * b)
    if b_nd == 0:
        return g * b
    if b_nd == 1:
        return np.expand_dims(g, -1) * b
    b_axes = [k for k in range(b_nd) if k != b_nd - 2]
    return np.tensordot(g, b, axes=(list(range(a_nd - 1, np.ndim(g))), b_axes))


@helper
def dot_rhs_grad(g, a, b):
    """Gradient of ``np.dot(a, b)`` with respect to ``b``."""
    a_nd, b_nd = np.ndim(a), np.ndim(b)
    if b_nd == 0:
        return np.sum(g * a)
    if a_nd == 0:
        return g * a
    lead = list(range(a_nd - 1))
    out = np.tensordot(a, g, axes=(lead, lead))        # (n,) + b.shape[:-2] + (m,)
    return out if b_nd == 1 else np.moveaxis(out, 0, -2)


def _dot_lhs(g, ans, a, b):
    if known_matrices(a, b):
        return g @ b.T
    return dot_lhs_grad(g, a, b)


def _dot_rhs(g, ans, a, b):
    if known_matrices(a, b):
        return a.T @ g
    return dot_rhs_grad(g, a, b)


defvjp(np.dot, _dot_lhs, _dot_rhs, nin=2)


@helper
def inner_grad(g, a, b):
    """Gradient of ``np.inner(a, b)`` with respect to ``a`` (``b``: swap the arguments)."""
    a_nd, b_nd = np.ndim(a), np.ndim(b)
    if a_nd == 0:
        return np.sum(g * b)
    if b_nd == 0:
        return g * b
    if a_nd == 1:                                      # g has the shape of b[..., 0]
        return np.tensordot(g, b, axes=(list(range(b_nd - 1)), list(range(b_nd - 1))))
    return np.tensordot(g, b, axes=(list(range(a_nd - 1, np.ndim(g))), list(range(b_nd - 1))))


@helper
def inner_rhs_grad(g, a, b):
    """Gradient of ``np.inner(a, b)`` with respect to ``b``: g's axes are a's, then b's."""
    a_nd, b_nd = np.ndim(a), np.ndim(b)
    if b_nd == 0 or a_nd == 0:
        return inner_grad(g, b, a)
    lead = list(range(a_nd - 1))
    return np.tensordot(g, a, axes=(lead, lead))


defvjp(np.inner, lambda g, ans, a, b: inner_grad(g, a, b),
       lambda g, ans, a, b: inner_rhs_grad(g, a, b), nin=2)
defvjp(np.vdot, lambda g, ans, a, b: np.reshape(g * np.ravel(b), np.shape(a)),
       lambda g, ans, a, b: np.reshape(g * np.ravel(a), np.shape(b)), nin=2)
defvjp(np.outer, lambda g, ans, a, b: np.reshape(np.matmul(g, np.ravel(b)), np.shape(a)),
       lambda g, ans, a, b: np.reshape(np.matmul(np.ravel(a), g), np.shape(b)), nin=2)


@helper
def tensordot_axes(axes, a_ndim, b_ndim):
    """NumPy's ``axes`` argument (an int, a pair of ints or of sequences) as two lists."""
    if isinstance(axes, int):
        return list(range(a_ndim - axes, a_ndim)), list(range(axes))
    a_axes, b_axes = ([ax] if isinstance(ax, int) else list(ax) for ax in axes)
    return [a % a_ndim for a in a_axes], [b % b_ndim for b in b_axes]


@helper
def tensordot_lhs_grad(g, a_ndim, b, axes):
    """Gradient of ``np.tensordot(a, b, axes)`` with respect to ``a`` (scalar results too)."""
    b_ndim = np.ndim(b)
    a_axes, b_axes = tensordot_axes(axes, a_ndim, b_ndim)
    a_free = [i for i in range(a_ndim) if i not in a_axes]
    b_free = [i for i in range(b_ndim) if i not in b_axes]
    out = np.tensordot(g, b, axes=(list(range(len(a_free), np.ndim(g))), b_free))
    order = a_free + [a_axes[b_axes.index(j)] for j in sorted(b_axes)]
    return np.transpose(out, tuple(int(i) for i in np.argsort(order)))


@helper
def tensordot_rhs_grad(g, a, b_ndim, axes):
    """Gradient of ``np.tensordot(a, b, axes)`` with respect to ``b``."""
    a_ndim = np.ndim(a)
    a_axes, b_axes = tensordot_axes(axes, a_ndim, b_ndim)
    a_free = [i for i in range(a_ndim) if i not in a_axes]
    b_free = [i for i in range(b_ndim) if i not in b_axes]
    out = np.tensordot(a, g, axes=(a_free, list(range(len(a_free)))))
    order = [b_axes[a_axes.index(j)] for j in sorted(a_axes)] + b_free
    return np.transpose(out, tuple(int(i) for i in np.argsort(order)))


defvjp(np.tensordot, lambda g, ans, a, b, axes=2: tensordot_lhs_grad(g, a.ndim, b, axes),
       lambda g, ans, a, b, axes=2: tensordot_rhs_grad(g, a, b.ndim, axes), nin=2)


@helper
def kron_grad(g, a, b, lhs):
    """Gradient of ``np.kron(a, b)`` with respect to ``a`` (``lhs``) or ``b``."""
    nd = max(np.ndim(a), np.ndim(b))
    a_shape = (1,) * (nd - np.ndim(a)) + tuple(np.shape(a))
    b_shape = (1,) * (nd - np.ndim(b)) + tuple(np.shape(b))
    pairs = np.reshape(g, [n for pair in zip(a_shape, b_shape) for n in pair])
    split = np.transpose(pairs, list(range(0, 2 * nd, 2)) + list(range(1, 2 * nd, 2)))
    if lhs:
        out = np.tensordot(split, np.reshape(b, b_shape), axes=nd)
        return np.reshape(out, np.shape(a))
    out = np.tensordot(np.reshape(a, a_shape), split, axes=nd)
    return np.reshape(out, np.shape(b))


defvjp(np.kron, lambda g, ans, a, b: kron_grad(g, a, b, True),
       lambda g, ans, a, b: kron_grad(g, a, b, False), nin=2)


@helper
def cross_grad(g, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None, lhs=True):
    """Gradient of ``np.cross(a, b, ...)`` with respect to ``a`` (``lhs``) or ``b``.

    2-element vectors are the 3-element ones with a zero third component: the product is
    linear, so the gradient is the 3-D one restricted to the components that exist.
    """
    if axis is not None:
        axisa = axisb = axisc = axis
    a3 = np.moveaxis(a, axisa, -1)
    b3 = np.moveaxis(b, axisb, -1)
    na, nb = a3.shape[-1], b3.shape[-1]
    if na == 2 and nb == 2:                            # the result is the z component
        g3 = np.stack([np.zeros_like(g), np.zeros_like(g), g], axis=-1)
    else:
        g3 = np.moveaxis(g, axisc, -1)
    pad = [(0, 0)] * (b3.ndim - 1) + [(0, 3 - nb)]
    b3 = np.pad(b3, pad) if nb == 2 else b3
    pad = [(0, 0)] * (a3.ndim - 1) + [(0, 3 - na)]
    a3 = np.pad(a3, pad) if na == 2 else a3
    if lhs:
        out = np.cross(b3, g3)[..., :na]
        return np.moveaxis(sum_to(out, shape=np.moveaxis(a, axisa, -1).shape), -1, axisa)
    out = np.cross(g3, a3)[..., :nb]
    return np.moveaxis(sum_to(out, shape=np.moveaxis(b, axisb, -1).shape), -1, axisb)


defvjp(np.cross,
       lambda g, ans, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None:
       cross_grad(g, a, b, axisa, axisb, axisc, axis, True),
       lambda g, ans, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None:
       cross_grad(g, a, b, axisa, axisb, axisc, axis, False), nin=2)


@helper
def convolve_grad(g, a, v, mode, correlate, lhs):
    """Gradient of ``np.convolve(a, v, mode)`` (or of ``np.correlate``, which is the
    convolution with ``v`` reversed) for ``a`` (``lhs``) or ``v``.

    Every mode is a window of the full convolution; only the window's start differs.
    """
    mode = {0: "valid", 1: "same", 2: "full"}.get(mode, mode)
    na, nv = np.shape(a)[0], np.shape(v)[0]
    short = min(na, nv)
    start = {"full": 0, "valid": short - 1,
             "same": short // 2 if correlate and na < nv else (short - 1) // 2}[mode]
    g_full = np.pad(g, (start, na + nv - 1 - start - np.shape(g)[0]))
    kernel = v[::-1] if correlate else v
    if lhs:
        return np.correlate(g_full, kernel, "valid")
    out = np.correlate(g_full, a, "valid")
    return out[::-1] if correlate else out


defvjp(np.convolve,
       lambda g, ans, a, v, mode="full": convolve_grad(g, a, v, mode, False, True),
       lambda g, ans, a, v, mode="full": convolve_grad(g, a, v, mode, False, False), nin=2)
defvjp(np.correlate,
       lambda g, ans, a, v, mode="valid": convolve_grad(g, a, v, mode, True, True),
       lambda g, ans, a, v, mode="valid": convolve_grad(g, a, v, mode, True, False), nin=2)


@helper
def polyval_grad(g, p, x, lhs):
    """Gradient of ``np.polyval(p, x)`` for the coefficients ``p`` (``lhs``) or for ``x``."""
    n = np.shape(p)[0]
    if lhs:
        parts = [sum_to(g * x ** (n - 1 - i), shape=np.shape(p)[1:]) for i in range(n)]
        return np.stack(parts) if parts else np.zeros_like(p)
    slope = 0.0 * x
    for i in range(n - 1):
        slope = slope * x + p[i] * (n - 1 - i)
    return g * slope


defvjp(np.polyval, lambda g, ans, p, x: polyval_grad(g, p, x, True),
       lambda g, ans, p, x: polyval_grad(g, p, x, False), nin=2, broadcasts=True)


def _polyval(p, x):
    """``np.polyval`` with a list of coefficients (numbers or arrays) stacked first."""
    if isinstance(p, (list, tuple)):
        p = np.stack([np.asarray(c) if isinstance(c, (int, float)) else c for c in p])
    return lookup(np.polyval)(p, x)


bind_numpy(np.polyval, lookup(np.polyval), _polyval)

# Forward mode: every product is linear in each factor; polyval in its coefficients only.
for _f in (np.dot, np.inner, np.vdot, np.outer, np.tensordot, np.kron, np.cross, np.convolve,
           np.correlate):
    defjvp(_f, multilinear=True)


@helper
def derivative_powers(p_shape):
    """The powers ``n-1, ..., 1`` that multiply ``p[:-1]`` in the derivative of the polynomial
    with coefficients ``p`` (of ``p_shape``, stacked along the first axis), shaped to them."""
    n = p_shape[0]
    return np.reshape(np.arange(n - 1.0, 0.0, -1.0), (max(n - 1, 0),) + (1,) * (len(p_shape) - 1))


def _polyval_jvp(tangents, ans, p, x):
    """Linear in the coefficients; in ``x`` the tangent times the derivative polynomial
    (written with np.polyval, so that it is differentiated again)."""
    tp, tx = tangents
    out = 0.0 if tp is None else np.polyval(tp, x)
    if tx is not None:
        out = out + tx * np.polyval(p[:-1] * derivative_powers(np.shape(p)), x)
    return out


defjvp(np.polyval, _polyval_jvp)
