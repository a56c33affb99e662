"""Float64 ``exp``, ``expm1``, ``log``, ``log1p``, ``sin``, ``cos`` and ``tanh`` that LLVM
vectorises, for the numba kernels (``backend="numba"``), the row reductions they use, and
``sign``, ``maximum`` and ``minimum`` with NumPy's signed zeros (numba's differ).

numba compiles ``np.exp(x)`` on a scalar to a call of libm's ``exp``, one element at a time
(4 to 15 ns each here), so a fused loop of transcendental functions is no faster than NumPy.
The functions here have no branches and no calls once inlined (a conditional expression over
values already computed becomes a select; powers of two are built from integer bit
patterns), so a kernel loop that calls them compiles to packed SIMD code.  They are fdlibm's
algorithms (FreeBSD's msun, as in musl) with branch-free argument reductions, and ``tanh``
in double-double arithmetic; each is within 1 ulp of the exact result, and special values
are NumPy's: NaN, infinities, signed zeros, overflow to inf, gradual underflow.  ``sin`` and
``cos`` reduce their argument exactly for ``|x| <= NEAR`` (2**20) and give NaN beyond: a
kernel that calls them counts such arguments and then computes with libm's functions.

A generated module runs without srcgrad, so it defines the helpers it calls: each is a
function of this module, whose source :func:`definitions` copies (plain Python on NumPy
scalars: it also runs, slowly, with ``NUMBA_DISABLE_JIT=1`` or without numba, and never
raises where NumPy only warns).  The functions a kernel calls are inlined by numba
(``inline='always'``); the pieces they call are small enough for LLVM to inline (compiling
is faster so).
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable

import numpy as np

from srcgrad.runtime.rules.operators import operations

__all__ = ["SPELLINGS", "ZEROS", "HELPERS", "NEAR", "LIMITED", "spelling", "definitions"]

NEAR = 1048576.0
"""``sin_f64`` and ``cos_f64`` are exact for ``|x| <= NEAR`` (2**20), and NaN beyond."""
LIMITED = frozenset({"sin_f64", "cos_f64"})
"""The helpers exact only up to :data:`NEAR`."""
_INLINED = "@njit(inline='always', error_model='numpy')"
_PLAIN = "@njit(error_model='numpy')"


def scale2_f64(y, k):
    """``y * 2**k`` for an int64 ``k`` in [-2100, 2046], rounded once: two factors that are
    normal numbers, the first product exact (``y`` is about 1)."""
    half = k >> 1
    first = np.int64((half + 1023) << 52).view(np.float64)
    return (y * first) * np.int64((k - half + 1023) << 52).view(np.float64)


def exp_parts_f64(z):
    """``e**z = 2**k (y + tail)`` for ``z`` in [-1100, 1100] (``|tail| <= ulp(y) / 2``):
    ``z = k ln2 + r`` (Cody-Waite, ``|r| <= ln(2)/2``), ``e**r`` by Taylor's polynomial to
    ``r**13`` (truncation below 2**-57) added to ``1 + r`` in double-double.  ``k`` is an
    int64; NaN gives NaN parts."""
    magic, ln2_hi, ln2_lo = 6755399441055744.0, 6.93147180369123816490e-01, 1.9082149292705877e-10
    k = (z * 1.4426950408889634 + magic) - magic            # rint(z / ln2): 1.5 * 2**52
    k = 0.0 if k != k else k
    hi = z - k * ln2_hi                                     # exact: ln2_hi has 32 bits
    lo = k * ln2_lo
    r = hi - lo
    c2, c3, c4, c5 = 0.5, 0.16666666666666666, 0.041666666666666664, 0.008333333333333333
    c6, c7, c8 = 0.001388888888888889, 0.0001984126984126984, 2.48015873015873e-05
    c9, c10, c11 = 2.7557319223985893e-06, 2.755731922398589e-07, 2.505210838544172e-08
    c12, c13 = 2.08767569878681e-09, 1.6059043836821613e-10          # 1 / 13!
    q = c2 + r * (c3 + r * (c4 + r * (c5 + r * (c6 + r * (c7 + r * (
        c8 + r * (c9 + r * (c10 + r * (c11 + r * (c12 + r * c13))))))))))
    one = 1.0 + hi
    rest = (((1.0 - one) + hi) - lo) + r * r * q
    y = one + rest
    return y, (one - y) + rest, np.int64(k)


def exp_f64(x):
    """``e**x``, from :func:`exp_parts_f64`."""
    x = np.float64(x)
    z = 710.0 if x > 710.0 else x                # beyond, inf or 0; NaN goes through
    z = -1000.0 if z < -1000.0 else z
    y, _, k = exp_parts_f64(z)
    return np.float64(scale2_f64(y, k))


def expm1_f64(x):
    """``e**x - 1`` (fdlibm's ``expm1``): every case of its final step is computed and the
    one for ``k`` selected."""
    Q1, Q2 = -3.33333333333331316428e-02, 1.58730158725481460165e-03
    Q3, Q4 = -7.93650757867487942473e-05, 4.00821782732936239552e-06
    Q5 = -2.01099218183624371326e-07
    magic, ln2_hi, ln2_lo = 6755399441055744.0, 6.93147180369123816490e-01, 1.9082149292705877e-10
    x = np.float64(x)
    z = 710.0 if x > 710.0 else x                # beyond, inf or -1; NaN goes through
    z = -60.0 if z < -60.0 else z
    k = (z * 1.4426950408889634 + magic) - magic
    k = 0.0 if k != k else k
    hi = z - k * ln2_hi
    lo = k * ln2_lo
    r = hi - lo
    c = (hi - r) - lo                            # what rounding r lost
    hfx = 0.5 * r
    hxs = r * hfx
    r1 = 1.0 + hxs * (Q1 + hxs * (Q2 + hxs * (Q3 + hxs * (Q4 + hxs * Q5))))
    t = 3.0 - r1 * hfx
    e = hxs * ((r1 - t) / (6.0 - r * t))
    small = r - (r * e - hxs)                    # k == 0
    e = (r * (e - c) - c) - hxs
    n = np.int64(k)
    m = n if n > 1 else np.int64(1)              # 2**k and 2**-k for k in [2, 56]
    m = m if m < 57 else np.int64(57)
    twopk = np.int64((m + 1023) << 52).view(np.float64)
    twomk = np.int64((1023 - m) << 52).view(np.float64)
    y = (r - e + (1.0 - twomk)) * twopk if n < 20 else (r - (e + twomk) + 1.0) * twopk
    y = scale2_f64(r - e + 1.0, n) - 1.0 if n < -1 or n > 56 else y
    y = (-2.0 * (e - (r + 0.5)) if r < -0.25 else 1.0 + 2.0 * (r - e)) if n == 1 else y
    y = 0.5 * (r - e) - 0.5 if n == -1 else y
    y = small if n == 0 else y
    return np.float64(x if abs(x) < 5.551115123125783e-17 else y)    # 2**-54; keeps -0.0


def log_poly_f64(f, k, c):
    """``log(1 + f) + k ln2 + c`` for ``1 + f`` in [sqrt(2)/2, sqrt(2)) (fdlibm's ``log``:
    ``s = f / (2 + f)``, a polynomial in ``s**2``)."""
    Lg1, Lg2, Lg3 = 6.666666666666735130e-01, 3.999999999940941908e-01, 2.857142874366239149e-01
    Lg4, Lg5, Lg6 = 2.222219843214978396e-01, 1.818357216161805012e-01, 1.531383769920937332e-01
    Lg7 = 1.479819860511658591e-01
    s = f / (2.0 + f)
    z = s * s
    w = z * z
    t1 = w * (Lg2 + w * (Lg4 + w * Lg6))
    t2 = z * (Lg1 + w * (Lg3 + w * (Lg5 + w * Lg7)))
    hfsq = 0.5 * f * f
    return (s * (hfsq + (t2 + t1)) + (k * 1.90821492927058770002e-10 + c) - hfsq + f
            + k * 6.93147180369123816490e-01)


def log_f64(x):
    """The natural logarithm: ``x = 2**k (1 + f)`` from the bits of ``x`` (subnormals scaled
    by 2**54 first), then :func:`log_poly_f64`."""
    x = np.float64(x)
    tiny = x < 2.2250738585072014e-308
    v = x * 18014398509481984.0 if tiny else x
    v = v if v < np.inf else 1.0                 # +inf and NaN: see the end
    bits = np.float64(v).view(np.int64) + 0x95f6200000000     # sqrt(2)/2 moves to 1
    k = (bits >> 52) - (1077 if tiny else 1023)
    f = np.int64((bits & 0xfffffffffffff) + 0x3fe6a09e00000000).view(np.float64) - 1.0
    y = log_poly_f64(f, np.float64(k), 0.0)
    y = y if x < np.inf else x
    return np.float64(y if x > 0.0 else (-np.inf if x == 0.0 else np.nan))


def log1p_f64(x):
    """``log(1 + x)`` (musl's ``log1p``): ``u = 1 + x`` split as in :func:`log_f64`, with
    the correction ``c = (1 + x - u) / u``; no reduction where ``1 + x`` is near 1."""
    x = np.float64(x)
    u = 1.0 + x
    u = u if u < np.inf and u > 0.0 else 2.0     # inf, NaN, x <= -1: see the end
    bits = np.float64(u).view(np.int64) + 0x95f6200000000
    k = (bits >> 52) - 1023
    c = (1.0 - (u - x) if k >= 2 else x - (u - 1.0)) / u
    c = c if k < 54 else 0.0
    f = np.int64((bits & 0xfffffffffffff) + 0x3fe6a09e00000000).view(np.float64) - 1.0
    near = x > -0.2928932188134524 and x < 0.41421356237309503   # 1 + x in [sqrt(2)/2, sqrt(2))
    y = log_poly_f64(x if near else f, 0.0 if near else np.float64(k), 0.0 if near else c)
    y = x if abs(x) < 1.1102230246251565e-16 else y       # 2**-53; keeps -0.0
    y = y if x < np.inf else x
    return np.float64(y if x > -1.0 else (-np.inf if x == -1.0 else np.nan))


def reduce_pio2_f64(x):
    """``x - n pi/2`` as ``y + tail`` with ``|y| <= pi/4``, and ``n mod 4``, for ``|x| <=
    2**20``: pi/2 in four parts (fdlibm's), the first three 33 bits long so that ``n`` times
    each is exact, summed in double-double (two-sums); good to 2**-130 absolute."""
    pio2_1, pio2_2 = 1.57079632673412561417e+00, 6.07710050630396597660e-11
    pio2_3, pio2_3t = 2.02226624871116645580e-21, 8.47842766036889956997e-32
    n = (x * 6.36619772367581382433e-01 + 6755399441055744.0) - 6755399441055744.0
    a = x - n * pio2_1                           # exact (Sterbenz)
    b = -(n * pio2_2)                            # exact
    s = a + b
    back = s - a
    e1 = (a - (s - back)) + (b - back)           # s + e1 == a + b
    c = -(n * pio2_3)                            # exact
    s2 = s + c
    back = s2 - s
    e2 = (s - (s2 - back)) + (c - back)
    tail = (e1 + e2) - n * pio2_3t
    y = s2 + tail
    return y, tail - (y - s2), np.int64(n) & 3


def sin_poly_f64(y, tail):
    """``sin(y + tail)`` for ``|y| <= pi/4`` (fdlibm's ``__kernel_sin``)."""
    S1, S2 = -1.66666666666666324348e-01, 8.33333333332248946124e-03
    S3, S4 = -1.98412698298579493134e-04, 2.75573137070700676789e-06
    S5, S6 = -2.50507602534068634195e-08, 1.58969099521155010221e-10
    z = y * y
    w = z * z
    r = S2 + z * (S3 + z * S4) + z * w * (S5 + z * S6)
    v = z * y
    return y - ((z * (0.5 * tail - v * r) - tail) - v * S1)


def cos_poly_f64(y, tail):
    """``cos(y + tail)`` for ``|y| <= pi/4`` (fdlibm's ``__kernel_cos``)."""
    C1, C2 = 4.16666666666666019037e-02, -1.38888888888741095749e-03
    C3, C4 = 2.48015872894767294178e-05, -2.75573143513906633035e-07
    C5, C6 = 2.08757232129817482790e-09, -1.13596475577881948265e-11
    z = y * y
    w = z * z
    r = z * (C1 + z * (C2 + z * C3)) + w * w * (C4 + z * (C5 + z * C6))
    hz = 0.5 * z
    w = 1.0 - hz
    return w + (((1.0 - w) - hz) + (z * r - y * tail))


def sin_f64(x):
    """``sin(x)`` for ``|x| <= 2**20``: the polynomial of quadrant ``n`` of the reduced
    argument; NaN beyond (inf too)."""
    x = np.float64(x)
    near = abs(x) <= 1048576.0
    y, tail, n = reduce_pio2_f64(x if near else np.float64(0.0))
    v = cos_poly_f64(y, tail) if n & 1 else sin_poly_f64(y, tail)
    v = -v if n & 2 else v
    v = x if abs(x) < 7.450580596923828e-09 else v       # 2**-27: sin(x) rounds to x
    return np.float64(v if near else np.nan)


def cos_f64(x):
    """``cos(x)`` for ``|x| <= 2**20``, as :func:`sin_f64`."""
    x = np.float64(x)
    near = abs(x) <= 1048576.0
    y, tail, n = reduce_pio2_f64(x if near else np.float64(0.0))
    v = sin_poly_f64(y, tail) if n & 1 else cos_poly_f64(y, tail)
    v = -v if (n + 1) & 2 else v
    return np.float64(v if near else np.nan)


def tanh_f64(x):
    """``tanh(x) = (E - 1) / (E + 1)`` for ``E = e**(2|x|)`` from :func:`exp_parts_f64`, in
    double-double arithmetic (``E - 1`` keeps its relative precision near 0; the quotient is
    corrected by its remainder, computed exactly with Dekker's product), with the sign of
    ``x``; 1 beyond ``|x| > 22``."""
    x = np.float64(x)
    a = abs(x)
    y, tail, k = exp_parts_f64(2.0 * (22.0 if a > 22.0 else a))
    scale = np.int64((k + 1023) << 52).view(np.float64)     # 2**k, k in [0, 64]
    big, small = y * scale, tail * scale                    # E, exactly
    num = big - 1.0                                         # two-sums: E - 1 and E + 1
    back = num - big
    num_rest = ((big - (num - back)) + (-1.0 - back)) + small
    den = big + 1.0
    back = den - big
    den_rest = ((big - (den - back)) + (1.0 - back)) + small
    q = num / den
    split = 134217729.0 * q                                 # q = qh + ql, 26 bits each
    qh = split - (split - q)
    split = 134217729.0 * den
    dh = split - (split - den)
    p = q * den                                             # p + error == q * den
    error = ((qh * dh - p) + qh * (den - dh) + (q - qh) * dh) + (q - qh) * (den - dh)
    z = q + ((((num - p) - error) + num_rest) - q * den_rest) / den
    z = 1.0 if a > 22.0 else z
    z = a if a < 7.450580596923828e-09 else z            # 2**-27: tanh(x) rounds to x
    return np.float64(np.copysign(z, x))


def sign_f64(x):
    """NumPy's ``np.sign``: +0.0 for either zero (numba's keeps -0.0), NaN for NaN."""
    return np.float64(1.0 if x > 0.0 else -1.0 if x < 0.0 else 0.0 if x == 0.0 else x)


def maximum_f64(a, b):
    """NumPy's ``np.maximum``: NaN propagates, and ``b`` where they are equal
    (``np.maximum(0.0, -0.0)`` is -0.0; numba's gives ``a``)."""
    return np.float64(a if a > b or a != a else b)


def minimum_f64(a, b):
    """NumPy's ``np.minimum``: NaN propagates, and ``b`` where they are equal."""
    return np.float64(a if a < b or a != a else b)


def sum_row(row, count):
    """``row[:count].sum()`` with eight partial sums, as NumPy's pairwise sum starts."""
    s0 = s1 = s2 = s3 = s4 = s5 = s6 = s7 = 0.0
    stop = count - count % 8
    for j in range(0, stop, 8):
        s0, s1, s2, s3 = s0 + row[j], s1 + row[j + 1], s2 + row[j + 2], s3 + row[j + 3]
        s4, s5, s6, s7 = s4 + row[j + 4], s5 + row[j + 5], s6 + row[j + 6], s7 + row[j + 7]
    total = ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))
    for j in range(stop, count):
        total += row[j]
    return total


def max_row(row, count):
    """``row[:count].max()`` (NaN propagates; -inf for no elements), four at a time."""
    m0 = m1 = m2 = m3 = -np.inf
    stop = count - count % 4
    for j in range(0, stop, 4):
        a, b, c, d = row[j], row[j + 1], row[j + 2], row[j + 3]
        m0 = a if a > m0 or a != a else m0
        m1 = b if b > m1 or b != b else m1
        m2 = c if c > m2 or c != c else m2
        m3 = d if d > m3 or d != d else m3
    for j in range(stop, count):
        m0 = row[j] if row[j] > m0 or row[j] != row[j] else m0
    m0 = m0 if m0 > m1 or m0 != m0 else m1
    m2 = m2 if m2 > m3 or m2 != m2 else m3
    return m0 if m0 > m2 or m0 != m0 else m2


def min_row(row, count):
    """``row[:count].min()`` (NaN propagates; inf for no elements), four at a time."""
    m0 = m1 = m2 = m3 = np.inf
    stop = count - count % 4
    for j in range(0, stop, 4):
        a, b, c, d = row[j], row[j + 1], row[j + 2], row[j + 3]
        m0 = a if a < m0 or a != a else m0
        m1 = b if b < m1 or b != b else m1
        m2 = c if c < m2 or c != c else m2
        m3 = d if d < m3 or d != d else m3
    for j in range(stop, count):
        m0 = row[j] if row[j] < m0 or row[j] != row[j] else m0
    m0 = m0 if m0 < m1 or m0 != m0 else m1
    m2 = m2 if m2 < m3 or m2 != m2 else m3
    return m0 if m0 < m2 or m0 != m0 else m2


_FUNCTIONS = (scale2_f64, exp_parts_f64, exp_f64, expm1_f64, log_poly_f64, log_f64, log1p_f64,
              reduce_pio2_f64, sin_poly_f64, cos_poly_f64, sin_f64, cos_f64, tanh_f64,
              sign_f64, maximum_f64, minimum_f64, sum_row, max_row, min_row)
_USES = {"exp_f64": ("exp_parts_f64", "scale2_f64"), "expm1_f64": ("scale2_f64",),
         "log_f64": ("log_poly_f64",), "log1p_f64": ("log_poly_f64",),
         "sin_f64": ("reduce_pio2_f64", "sin_poly_f64", "cos_poly_f64"),
         "cos_f64": ("reduce_pio2_f64", "sin_poly_f64", "cos_poly_f64"),
         "tanh_f64": ("exp_parts_f64",)}
"""The helpers each helper calls."""

HELPERS = tuple(f.__name__ for f in _FUNCTIONS)
"""Every name :func:`definitions` may define (a kernel's own names must avoid them)."""



def _twins(kind: str) -> dict[object, str]:
    """The ufuncs whose ``f64_twin`` hint is ``kind``, with their helper here (``exp_f64``)."""
    twins = {f: f"{f.__name__}_f64" for f, p in operations().items() if p.f64_twin == kind}
    assert set(twins.values()) <= set(HELPERS), twins
    return twins


SPELLINGS = _twins("fast")
"""The ufuncs a kernel writes as a call of a helper here, for a float64 result."""
ZEROS = _twins("zeros")
"""The ufuncs whose float64 results numba's ``np.f`` gives with another signed zero than
NumPy's: a kernel (its libm twin too) always calls these helpers for them."""


def spelling(func: object, dtype: np.dtype) -> str | None:
    """The helper that computes ``func`` for a ``dtype`` result, or None (then libm's,
    through numba's ``np.func``)."""
    if np.dtype(dtype) != np.float64:
        return None
    try:
        return SPELLINGS.get(func) or ZEROS.get(func)
    except TypeError:                  # unhashable: no ufunc
        return None


_TEXT: dict[str, str] = {}


def _text(name: str) -> str:
    if name not in _TEXT:
        function = next(f for f in _FUNCTIONS if f.__name__ == name)
        inlined = name in SPELLINGS.values() or name in ZEROS.values()
        decorator = _INLINED if inlined else _PLAIN
        _TEXT[name] = decorator + "\n" + inspect.getsource(function).rstrip()
    return _TEXT[name]


def definitions(names: Iterable[str]) -> list[str]:
    """The module-level definitions of the helpers ``names`` and of those they call, in a
    fixed order (callees first), each decorated with numba's ``njit`` (inlined by numba where
    a kernel calls it)."""
    wanted, todo = set(), list(names)
    while todo:
        name = todo.pop()
        if name not in HELPERS:
            raise ValueError(f"no helper {name!r} in numba_math")
        if name not in wanted:
            wanted.add(name)
            todo.extend(_USES.get(name, ()))
    return [_text(name) for name in HELPERS if name in wanted]
