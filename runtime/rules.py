"""The table of derivative rules, one line a primitive where possible, grouped by family.

Both modes use this table: the eager engine calls a rule on arrays (or on Tensors when
``create_graph=True``), the compiler calls it on symbolic values and prints the result.  So a
rule is plain array code (see :mod:`srcgrad.runtime.primitives` for what it may use).
Constants are Python floats so that float32 gradients stay float32.
"""

from __future__ import annotations

import math

import numpy as np

from srcgrad.runtime.primitives import (
    bind_numpy,
    defvjp,
    defvjp_argnum,
    helper,
    lookup,
    primitive,
    sum_to,
    unbroadcast,
)

LN2, LN10 = math.log(2.0), math.log(10.0)


@helper
def numel(shape: tuple[int, ...]) -> int:
    """Number of elements of an array of ``shape`` (a Python int)."""
    count = 1
    for n in shape:
        count *= n
    return count


def along(axis: int, key: object) -> tuple:
    """An index that applies ``key`` on ``axis`` and takes everything elsewhere."""
    if axis < 0:
        return (Ellipsis, key) + (slice(None),) * (-axis - 1)
    return (slice(None),) * axis + (key,)


def inverse_permutation(axes: tuple[int, ...] | None) -> tuple[int, ...] | None:
    """The axes that undo ``transpose(x, axes)`` (None undoes None: a full reversal)."""
    if axes is None:
        return None
    axes = [a % len(axes) for a in axes]
    return tuple(sorted(range(len(axes)), key=axes.__getitem__))


# ---------------------------------------------------------------------------------------------
# Helper primitives: the building blocks rules are written with (each with rules of its own).

@primitive(dtype_rule="same")
def unreduce(g, *, shape, axis=None, keepdims=False):
    """Spread the gradient of a reduction back over the reduced ``shape``."""
    if isinstance(g, (int, float)) or g.ndim == 0:  # a constant: as in compiled code
        return np.full_like(g, g, shape=shape)
    if axis is not None and not keepdims:
        g = np.expand_dims(g, tuple(a % len(shape) for a in np.atleast_1d(axis).tolist()))
    return np.broadcast_to(g, shape)


@primitive(dtype_rule="same")
def unindex(g, *, index, shape):
    """The adjoint of ``x[index]``: ``g`` placed into zeros of ``shape`` (repeats add up)."""
    out = np.zeros_like(g, shape=shape)
    keys = index if isinstance(index, tuple) else (index,)
    if any(getattr(k, "dtype", None) is not None and k.dtype.kind in "iu" or isinstance(k, list)
           for k in keys):
        np.add.at(out, index, g)
    else:
        out[index] = g
    return out


@primitive(nin=2)
def index_put(x, v, *, index):
    """``x`` with ``x[index] = v``, as a new array (subscript writes are functional)."""
    out = x.copy()
    out[index] = v
    return out


@primitive(nin=2)
def matmul_lhs_grad(g, b, *, a_shape):
    """Gradient of ``a @ b`` with respect to ``a`` (of ``a_shape``), NumPy's 1-D rules included."""
    if b.ndim == 1:
        out = g * b if len(a_shape) == 1 else g[..., None] * b
    elif len(a_shape) == 1:
        out = (b @ g[..., None])[..., 0]
    else:
        out = g @ b.swapaxes(-1, -2)
    return out if out.shape == a_shape else unbroadcast(out, a_shape)


@primitive(nin=2)
def matmul_rhs_grad(g, a, *, b_shape):
    """Gradient of ``a @ b`` with respect to ``b`` (of ``b_shape``)."""
    if a.ndim == 1:
        out = g * a if len(b_shape) == 1 else a[:, None] * g[..., None, :]
    elif len(b_shape) == 1:
        out = (g[..., None, :] @ a)[..., 0, :]
    else:
        out = a.swapaxes(-1, -2) @ g
    return out if out.shape == b_shape else unbroadcast(out, b_shape)


@primitive(dtype_rule="keep")
def cast(x, *, dtype):
    return x.astype(dtype)


@primitive(nin=1, dtype_rule="bool")
def clip_mask(x, *, lo, hi):
    """Where ``x`` lies within ``[lo, hi]`` (either bound may be None): clip's pass-through."""
    inside = np.ones_like(x, dtype=bool)
    if lo is not None:
        inside = inside & (x >= lo)
    if hi is not None:
        inside = inside & (x <= hi)
    return inside


defvjp(unreduce, lambda g, ans, x, shape, axis=None, keepdims=False:
       np.sum(g, axis=axis, keepdims=keepdims))
defvjp(sum_to, lambda g, ans, x, shape: np.broadcast_to(g, x.shape))
defvjp(unindex, lambda g, ans, x, index, shape: getitem(g, index=index))
defvjp(index_put, lambda g, ans, x, v, index: index_put(g, 0, index=index),
       lambda g, ans, x, v, index: getitem(g, index=index), broadcasts=True)
defvjp(matmul_lhs_grad, lambda g, ans, gy, b, a_shape: np.matmul(g, b),
       lambda g, ans, gy, b, a_shape: matmul_rhs_grad(gy, g, b_shape=b.shape))
defvjp(matmul_rhs_grad, lambda g, ans, gy, a, b_shape: np.matmul(a, g),
       lambda g, ans, gy, a, b_shape: matmul_lhs_grad(gy, g, a_shape=a.shape))
defvjp(cast, lambda g, ans, x, dtype: cast(g, dtype=x.dtype))
defvjp(clip_mask, None)


@primitive(dtype_rule="same")
def getitem(x, *, index):
    return x[index]


defvjp(getitem, lambda g, ans, x, index: unindex(g, index=index, shape=x.shape))


@primitive(dtype_rule="same")
def stop_gradient(x):
    """``x`` itself, through which no gradient flows (``srcgrad.stop_gradient``)."""
    return x


@primitive(dtype_rule="keep")
def item(x):
    """The single element of ``x`` as a Python number (``x.item()``, ``float(x)``)."""
    return x.item()


defvjp(stop_gradient, None)
defvjp(item, lambda g, ans, x: np.reshape(g, x.shape))

# ---------------------------------------------------------------------------------------------
# Unary elementwise.

defvjp(np.negative, lambda g, ans, x: -g)
defvjp(np.positive, lambda g, ans, x: g)
defvjp(np.exp, lambda g, ans, x: g * ans, dtype_rule="float")
defvjp(np.exp2, lambda g, ans, x: g * ans * LN2, dtype_rule="float")
defvjp(np.expm1, lambda g, ans, x: g * (ans + 1), dtype_rule="float")
defvjp(np.log, lambda g, ans, x: g / x, dtype_rule="float")
defvjp(np.log2, lambda g, ans, x: g / (x * LN2), dtype_rule="float")
defvjp(np.log10, lambda g, ans, x: g / (x * LN10), dtype_rule="float")
defvjp(np.log1p, lambda g, ans, x: g / (x + 1), dtype_rule="float")
defvjp(np.sqrt, lambda g, ans, x: g / (2 * ans), dtype_rule="float")
defvjp(np.cbrt, lambda g, ans, x: g / (3 * ans * ans), dtype_rule="float")
defvjp(np.square, lambda g, ans, x: g * 2 * x)
defvjp(np.reciprocal, lambda g, ans, x: -g * ans * ans, dtype_rule="float")
defvjp(np.abs, lambda g, ans, x: g * np.sign(x))
defvjp(np.fabs, lambda g, ans, x: g * np.sign(x), dtype_rule="float")
defvjp(np.sin, lambda g, ans, x: g * np.cos(x), dtype_rule="float")
defvjp(np.cos, lambda g, ans, x: -g * np.sin(x), dtype_rule="float")
defvjp(np.tan, lambda g, ans, x: g * (1 + ans * ans), dtype_rule="float")
defvjp(np.arcsin, lambda g, ans, x: g / np.sqrt(1 - x * x), dtype_rule="float")
defvjp(np.arccos, lambda g, ans, x: -g / np.sqrt(1 - x * x), dtype_rule="float")
defvjp(np.arctan, lambda g, ans, x: g / (1 + x * x), dtype_rule="float")
defvjp(np.sinh, lambda g, ans, x: g * np.cosh(x), dtype_rule="float")
defvjp(np.cosh, lambda g, ans, x: g * np.sinh(x), dtype_rule="float")
defvjp(np.tanh, lambda g, ans, x: g * (1 - ans * ans), dtype_rule="float")
defvjp(np.arcsinh, lambda g, ans, x: g / np.sqrt(x * x + 1), dtype_rule="float")
defvjp(np.arccosh, lambda g, ans, x: g / np.sqrt(x * x - 1), dtype_rule="float")
defvjp(np.arctanh, lambda g, ans, x: g / (1 - x * x), dtype_rule="float")
defvjp(np.deg2rad, lambda g, ans, x: g * (math.pi / 180), dtype_rule="float")
defvjp(np.rad2deg, lambda g, ans, x: g * (180 / math.pi), dtype_rule="float")
bind_numpy(np.radians, lookup(np.deg2rad))
bind_numpy(np.degrees, lookup(np.rad2deg))


@primitive(elementwise=True, dtype_rule="float")
def sigmoid(x):
    """The logistic function, computed without overflow."""
    return np.exp(-np.logaddexp(0, -x))


@primitive(elementwise=True)
def relu(x):
    return np.maximum(x, 0)


defvjp(sigmoid, lambda g, ans, x: g * ans * (1 - ans))
defvjp(relu, lambda g, ans, x: g * (ans > 0))

# Piecewise constant: a zero gradient (PyTorch records a node that returns zeros).
for _f in (np.sign, np.floor, np.ceil, np.trunc, np.rint):
    defvjp(_f, lambda g, ans, x: np.zeros_like(g))

# ---------------------------------------------------------------------------------------------
# Binary elementwise (broadcasting: gradients are summed back to each input's shape centrally).

defvjp(np.add, lambda g, ans, x, y: g, lambda g, ans, x, y: g)
defvjp(np.subtract, lambda g, ans, x, y: g, lambda g, ans, x, y: -g)
defvjp(np.multiply, lambda g, ans, x, y: g * y, lambda g, ans, x, y: g * x)
defvjp(np.divide, lambda g, ans, x, y: g / y, lambda g, ans, x, y: -g * x / (y * y),
       dtype_rule="float")
defvjp(np.power,
       lambda g, ans, x, y: np.where(y == 0, 0, g * y * x ** np.where(y == 0, 1, y - 1)),
       lambda g, ans, x, y: g * np.where((x == 0) & (y >= 0), 0, ans * np.log(x)))


@primitive(elementwise=True)
def pow_scalar(x, *, p):
    """``x ** p`` for a Python number ``p`` (PyTorch's ``pow(Tensor, Scalar)``)."""
    return x ** p


@primitive(elementwise=True)
def rsub(x, *, other):
    """``other - x`` for a Python number ``other`` (PyTorch's ``rsub(Tensor, Scalar)``)."""
    return other - x


defvjp(pow_scalar, lambda g, ans, x, p: g * p * x ** (p - 1) if p != 0 else np.zeros_like(g))
defvjp(rsub, lambda g, ans, x, other: -g)
defvjp(np.maximum, lambda g, ans, x, y: np.where(x == y, g / 2, np.where(x > y, g, 0)),
       lambda g, ans, x, y: np.where(x == y, g / 2, np.where(y > x, g, 0)))
defvjp(np.minimum, lambda g, ans, x, y: np.where(x == y, g / 2, np.where(x < y, g, 0)),
       lambda g, ans, x, y: np.where(x == y, g / 2, np.where(y < x, g, 0)))
defvjp(np.arctan2, lambda g, ans, y, x: g * x / (x * x + y * y),
       lambda g, ans, y, x: -g * y / (x * x + y * y), dtype_rule="float")
defvjp(np.hypot, lambda g, ans, x, y: g * x / ans, lambda g, ans, x, y: g * y / ans,
       dtype_rule="float")
defvjp(np.logaddexp, lambda g, ans, x, y: g * np.exp(x - ans),
       lambda g, ans, x, y: g * np.exp(y - ans), dtype_rule="float")
defvjp(np.logaddexp2, lambda g, ans, x, y: g * np.exp2(x - ans),
       lambda g, ans, x, y: g * np.exp2(y - ans), dtype_rule="float")
defvjp(np.remainder, lambda g, ans, x, y: g, lambda g, ans, x, y: -g * np.floor_divide(x, y))
defvjp(np.fmod, lambda g, ans, x, y: g, lambda g, ans, x, y: -g * np.trunc(x / y))
defvjp(np.where, None, lambda g, ans, c, x, y: np.where(c, g, 0),
       lambda g, ans, c, x, y: np.where(c, 0, g), nin=3, broadcasts=True)
defvjp(np.clip, lambda g, ans, x, a_min=None, a_max=None:
       g * clip_mask(x, lo=a_min, hi=a_max), nin=1)

# Comparisons and logic: boolean results, no gradient.
for _f in (np.greater, np.greater_equal, np.less, np.less_equal, np.equal, np.not_equal,
           np.logical_and, np.logical_or, np.logical_xor):
    defvjp(_f, None, None, dtype_rule="bool")
for _f in (np.logical_not, np.isnan, np.isinf, np.isfinite):
    defvjp(_f, None, dtype_rule="bool")
for _f in (np.argmax, np.argmin, np.argsort):
    defvjp(_f, None, dtype_rule="index")
defvjp(np.floor_divide, None, None)

# ---------------------------------------------------------------------------------------------
# Reductions (``axis`` and ``keepdims`` as in NumPy).


def _extremum_vjp(g, ans, x, axis=None, keepdims=False):
    """max/min: the gradient is shared equally between tied extrema (as PyTorch's ``max()``)."""
    hit = x == unreduce(ans, shape=x.shape, axis=axis, keepdims=keepdims)
    count = np.sum(hit, axis=axis, keepdims=keepdims)
    return unreduce(g / count, shape=x.shape, axis=axis, keepdims=keepdims) * hit


def _var_vjp(g, ans, x, axis=None, ddof=0, keepdims=False):
    n = numel(x.shape) / numel(ans.shape) - ddof
    centred = x - np.mean(x, axis=axis, keepdims=True)
    return unreduce(g * (2 / n), shape=x.shape, axis=axis, keepdims=keepdims) * centred


def _std_vjp(g, ans, x, axis=None, ddof=0, keepdims=False):
    n = numel(x.shape) / numel(ans.shape) - ddof
    centred = x - np.mean(x, axis=axis, keepdims=True)
    scale = np.where(ans == 0, 0, g / (ans * n))
    return unreduce(scale, shape=x.shape, axis=axis, keepdims=keepdims) * centred


@primitive(dtype_rule="same")
def prod_others(x, *, axis=None):
    """Product of all other elements along ``axis`` (the gradient of prod, safe at zeros)."""
    flat = x.reshape(-1) if axis is None else np.moveaxis(x, axis, -1)
    ones = np.ones_like(flat[..., :1])
    left = np.cumprod(np.concatenate([ones, flat[..., :-1]], axis=-1), axis=-1)
    right = np.cumprod(np.concatenate([ones, flat[..., :0:-1]], axis=-1), axis=-1)[..., ::-1]
    out = left * right
    return out.reshape(x.shape) if axis is None else np.moveaxis(out, -1, axis)


defvjp(np.sum, lambda g, ans, x, axis=None, keepdims=False:
       unreduce(g, shape=x.shape, axis=axis, keepdims=keepdims))
defvjp(np.mean, lambda g, ans, x, axis=None, keepdims=False:
       unreduce(g * (numel(ans.shape) / numel(x.shape)), shape=x.shape, axis=axis,
                keepdims=keepdims), dtype_rule="float")
defvjp(np.prod, lambda g, ans, x, axis=None, keepdims=False:
       unreduce(g, shape=x.shape, axis=axis, keepdims=keepdims) * prod_others(x, axis=axis))
defvjp(np.max, _extremum_vjp)
defvjp(np.min, _extremum_vjp)
defvjp(np.var, _var_vjp, dtype_rule="float")
defvjp(np.std, _std_vjp, dtype_rule="float")
defvjp(np.cumsum, lambda g, ans, x, axis=None: np.reshape(
    np.flip(np.cumsum(np.flip(g, axis=axis), axis=axis), axis=axis), x.shape))


@primitive(dtype_rule="float")
def logsumexp(x, *, axis=None, keepdims=False):
    top = np.max(x, axis=axis, keepdims=True)
    top = np.where(np.isfinite(top), top, 0)
    out = np.log(np.sum(np.exp(x - top), axis=axis, keepdims=True)) + top
    return out if keepdims else np.squeeze(out, axis=axis)


@primitive(dtype_rule="float")
def softmax(x, *, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


@primitive(dtype_rule="float")
def log_softmax(x, *, axis=-1):
    shifted = x - np.max(x, axis=axis, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


defvjp(logsumexp, lambda g, ans, x, axis=None, keepdims=False:
       unreduce(g, shape=x.shape, axis=axis, keepdims=keepdims)
       * np.exp(x - unreduce(ans, shape=x.shape, axis=axis, keepdims=keepdims)))
defvjp(softmax, lambda g, ans, x, axis=-1: ans * (g - np.sum(g * ans, axis=axis, keepdims=True)))
defvjp(log_softmax, lambda g, ans, x, axis=-1:
       g - np.exp(ans) * np.sum(g, axis=axis, keepdims=True))

# ---------------------------------------------------------------------------------------------
# Linear algebra.


def _tensordot_axes(axes, a_ndim, b_ndim):
    if isinstance(axes, int):
        return list(range(a_ndim - axes, a_ndim)), list(range(axes))
    a_axes, b_axes = ([ax] if isinstance(ax, int) else list(ax) for ax in axes)
    return [a % a_ndim for a in a_axes], [b % b_ndim for b in b_axes]


@helper
def tensordot_lhs_grad(g, a_ndim, b, axes):
    a_axes, b_axes = _tensordot_axes(axes, a_ndim, b.ndim)
    a_free = [i for i in range(a_ndim) if i not in a_axes]
    b_free = [i for i in range(b.ndim) if i not in b_axes]
    out = np.tensordot(g, b, axes=(list(range(len(a_free), g.ndim)), b_free))
    order = a_free + [a_axes[b_axes.index(j)] for j in sorted(b_axes)]
    return np.transpose(out, inverse_permutation(tuple(order)))


@helper
def tensordot_rhs_grad(g, a, b_ndim, axes):
    a_axes, b_axes = _tensordot_axes(axes, a.ndim, b_ndim)
    a_free = [i for i in range(a.ndim) if i not in a_axes]
    b_free = [i for i in range(b_ndim) if i not in b_axes]
    out = np.tensordot(a, g, axes=(a_free, list(range(len(a_free)))))
    order = [b_axes[a_axes.index(j)] for j in sorted(a_axes)] + b_free
    return np.transpose(out, inverse_permutation(tuple(order)))


@helper
def einsum_grad(argnum, g, ans, *ops, subscripts):
    ins, out = _parse_einsum(subscripts, [op.ndim for op in ops])
    target = ins[argnum]
    if len(set(target)) != len(target):
        raise NotImplementedError(f"einsum gradient with a repeated index in {target!r}")
    others = [s for j, s in enumerate(ins) if j != argnum]
    known = set(out).union(*others)
    kept = "".join(c for c in target if c in known)
    grad = np.einsum(",".join([out] + others) + "->" + kept, g,
                     *[op for j, op in enumerate(ops) if j != argnum])
    missing = tuple(i for i, c in enumerate(target) if c not in known)
    if missing:
        grad = np.broadcast_to(np.expand_dims(grad, missing), ops[argnum].shape)
    return grad


def _parse_einsum(subscripts, ndims):
    spec = subscripts.replace(" ", "")
    lhs, arrow, out = spec.partition("->")
    ins = lhs.split(",")
    spare = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ" if c not in spec]
    width = max((n - len(s.replace("...", "")) for s, n in zip(ins, ndims) if "..." in s),
                default=0)
    ell = "".join(spare[:width])
    ins = [s.replace("...", ell[len(ell) - (n - len(s.replace("...", ""))):] if width else "")
           for s, n in zip(ins, ndims)]
    if arrow:
        out = out.replace("...", ell)
    else:
        letters = "".join(ins)
        out = ell + "".join(sorted(c for c in set(letters) if letters.count(c) == 1
                                   and c not in ell))
    return ins, out


def _matrices(a_ndim, b_ndim) -> bool:
    """Both operands known to be matrices (an unknown rank, as in generic code, is not)."""
    return isinstance(a_ndim, int) and isinstance(b_ndim, int) and a_ndim == 2 and b_ndim == 2


def _matmul_lhs(g, ans, a, b):
    if _matrices(a.ndim, b.ndim):
        return g @ b.T
    return matmul_lhs_grad(g, b, a_shape=a.shape)


def _matmul_rhs(g, ans, a, b):
    if _matrices(a.ndim, b.ndim):
        return a.T @ g
    return matmul_rhs_grad(g, a, b_shape=b.shape)


defvjp(np.matmul, _matmul_lhs, _matmul_rhs, broadcasts=False)
defvjp(np.dot, _matmul_lhs, _matmul_rhs, nin=2)
defvjp(np.tensordot, lambda g, ans, a, b, axes=2: tensordot_lhs_grad(g, a.ndim, b, axes),
       lambda g, ans, a, b, axes=2: tensordot_rhs_grad(g, a, b.ndim, axes), nin=2)
defvjp(np.outer, lambda g, ans, a, b: np.reshape(np.matmul(g, np.ravel(b)), a.shape),
       lambda g, ans, a, b: np.reshape(np.matmul(np.ravel(a), g), b.shape), nin=2)


@helper
def trace_grad(g, shape):
    """Gradient of the trace of a matrix of ``shape``: ``g`` on the diagonal."""
    return g * np.eye(shape[0], shape[1], dtype=g.dtype)


defvjp(np.trace, lambda g, ans, x: trace_grad(g, x.shape), nin=1)


@primitive(nin=None)
def einsum(*operands, subscripts):
    return np.einsum(subscripts, *operands)


defvjp_argnum(einsum, einsum_grad)
bind_numpy(np.einsum, einsum, lambda subscripts, *operands: einsum(*operands,
                                                                    subscripts=subscripts))
defvjp(np.linalg.solve,
       lambda g, ans, A, b: -matmul_lhs_grad(np.linalg.solve(np.swapaxes(A, -1, -2), g), ans,
                                             a_shape=A.shape),
       lambda g, ans, A, b: np.linalg.solve(np.swapaxes(A, -1, -2), g), nin=2,
       dtype_rule="float")
defvjp(np.linalg.inv, lambda g, ans, x: -np.matmul(
    np.swapaxes(ans, -1, -2), np.matmul(g, np.swapaxes(ans, -1, -2))), nin=1, dtype_rule="float")
defvjp(np.linalg.det, lambda g, ans, x: np.expand_dims(g * ans, (-2, -1))
       * np.swapaxes(np.linalg.inv(x), -1, -2), nin=1, dtype_rule="float")


@primitive(dtype_rule="float")
def norm(x, *, ord=None, axis=None, keepdims=False):
    """The Euclidean (Frobenius) norm; other orders are refused rather than mis-differentiated."""
    matrix = (axis is None and x.ndim == 2) or (isinstance(axis, tuple) and len(axis) == 2)
    if not (ord is None or ord == "fro" and matrix or ord == 2 and not matrix):
        raise NotImplementedError(f"srcgrad differentiates norm with ord=None, 'fro' or 2 "
                                  f"(vectors) only, not ord={ord!r}")
    return np.linalg.norm(x, ord=ord, axis=axis, keepdims=keepdims)


defvjp(norm, lambda g, ans, x, ord=None, axis=None, keepdims=False:
       unreduce(np.where(ans == 0, 0, g / ans), shape=x.shape, axis=axis, keepdims=keepdims) * x)
bind_numpy(np.linalg.norm, norm)

# ---------------------------------------------------------------------------------------------
# Shape, joining and indexing.


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
    if axis is None:
        return np.reshape(np.sum(np.reshape(g, (-1, repeats)), axis=1), shape)
    axis = axis % len(shape)
    split = tuple(shape[:axis]) + (shape[axis], repeats) + tuple(shape[axis + 1:])
    return np.sum(np.reshape(g, split), axis=axis + 1)


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
defvjp(np.roll, lambda g, ans, x, shift, axis=None: np.roll(
    g, -shift if isinstance(shift, int) else tuple(-s for s in shift), axis=axis), nin=1)
defvjp(np.tril, lambda g, ans, x, k=0: np.tril(g, k=k), nin=1)
defvjp(np.triu, lambda g, ans, x, k=0: np.triu(g, k=k), nin=1)
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


def _dot_adapter(a, b, out=None):
    """``np.dot``: a product for scalars, matmul up to 2-D, a tensordot beyond."""
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return np.multiply(a, b)
    if np.ndim(a) <= 2 and np.ndim(b) <= 2:
        return lookup(np.dot)(a, b)
    return lookup(np.tensordot)(a, b, axes=([np.ndim(a) - 1], [max(np.ndim(b) - 2, 0)]))


def _inner_adapter(a, b):
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return np.multiply(a, b)
    return lookup(np.tensordot)(a, b, axes=([np.ndim(a) - 1], [np.ndim(b) - 1]))


bind_numpy(np.dot, lookup(np.dot), _dot_adapter)
bind_numpy(np.inner, lookup(np.tensordot), _inner_adapter)

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
# Neural-network family: fused losses and the affine map, one node each as in PyTorch.


def _reduce(loss, reduction):
    if reduction == "mean":
        return np.mean(loss)
    return np.sum(loss) if reduction == "sum" else loss


def _loss_scale(g, x_shape, reduction):
    """The upstream gradient spread over the elements of an unreduced loss."""
    if reduction == "none":
        return g
    return np.broadcast_to(g / numel(x_shape) if reduction == "mean" else g, x_shape)


@primitive(nin=2)
def mse_loss(x, y, *, reduction="mean"):
    return _reduce((x - y) ** 2, reduction)


@primitive(nin=2, dtype_rule="float")
def binary_cross_entropy_with_logits(x, y, *, reduction="mean"):
    return _reduce(np.maximum(x, 0) - x * y + np.log1p(np.exp(-np.abs(x))), reduction)


@primitive(dtype_rule="float")
def nll_loss(logp, *, target, reduction="mean", ignore_index=-100):
    """Negative log-likelihood of class ``target`` along axis 1 (PyTorch's layout)."""
    keep = target != ignore_index
    picked = np.take_along_axis(logp, np.expand_dims(np.where(keep, target, 0), 1), axis=1)
    loss = -np.squeeze(picked, axis=1) * keep
    if reduction == "mean":
        return np.sum(loss) / np.sum(keep)
    return np.sum(loss) if reduction == "sum" else loss


@primitive(dtype_rule="same")
def nll_loss_grad(g, *, target, shape, reduction="mean", ignore_index=-100):
    """Gradient of ``nll_loss``: ``-g`` at each target class, scaled for the reduction."""
    keep = target != ignore_index
    scale = g / np.sum(keep) if reduction == "mean" else g
    picked = np.where(keep, -scale, 0)
    out = np.zeros_like(g, shape=shape)
    np.put_along_axis(out, np.expand_dims(np.where(keep, target, 0), 1),
                      np.expand_dims(picked, 1), axis=1)
    return out


@primitive(nin=3)
def addmm(c, a, b):
    """``c + a @ b`` (``nn.Linear`` on a batch)."""
    return c + np.matmul(a, b)


defvjp(mse_loss, lambda g, ans, x, y, reduction="mean":
       _loss_scale(g, x.shape, reduction) * 2 * (x - y),
       lambda g, ans, x, y, reduction="mean": _loss_scale(g, x.shape, reduction) * 2 * (y - x),
       broadcasts=True)
defvjp(binary_cross_entropy_with_logits, lambda g, ans, x, y, reduction="mean":
       _loss_scale(g, x.shape, reduction) * (sigmoid(x) - y),
       lambda g, ans, x, y, reduction="mean": _loss_scale(g, x.shape, reduction) * -x,
       broadcasts=True)
defvjp(nll_loss, lambda g, ans, logp, target, reduction="mean", ignore_index=-100:
       nll_loss_grad(g, target=target, shape=logp.shape, reduction=reduction,
                     ignore_index=ignore_index))
defvjp(nll_loss_grad, lambda g, ans, gy, target, shape, reduction="mean", ignore_index=-100:
       nll_loss(g, target=target, reduction=reduction, ignore_index=ignore_index))  # linear map
defvjp(addmm, lambda g, ans, c, a, b: g,
       lambda g, ans, c, a, b: np.matmul(g, np.swapaxes(b, -1, -2)),
       lambda g, ans, c, a, b: np.matmul(np.swapaxes(a, -1, -2), g), broadcasts=True)

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
