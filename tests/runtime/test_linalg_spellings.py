"""Products, diagonals, norms and np.linalg as users spell them.

Every case is a small program in real NumPy spelling (``np.linalg.norm(x, ord=3)``,
``np.einsum('ii->', m)``, ``w, v = np.linalg.eigh(a)``): the compiled gradient (strict) must
equal the eager engine's and central finite differences, in float64 and in float32, and JAX
(the same source with ``np`` bound to ``jax.numpy``) where it is installed.  Calls without a
gradient must be refused with a CompileError, and then run right in the fallback.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from compiled_helpers import define
from conftest import numerical_grad

import srcgrad
from srcgrad.transforms.fallback import eager_transform

SEED = 0
_rng = np.random.default_rng(808)
W = {"W44": _rng.uniform(-1, 1, (4, 4)), "W53": _rng.uniform(-1, 1, (5, 3)),
     "W35": _rng.uniform(-1, 1, (3, 5)), "W33": _rng.uniform(-1, 1, (3, 3)),
     "W233": _rng.uniform(-1, 1, (2, 3, 3)), "W3": _rng.uniform(-1, 1, 3)}

# (source of the body, argument specs): a tuple is the shape of a random array in [-1, 1],
# a float is a Python float.  Each body returns a scalar.
CASES = {
    # np.dot at every rank (a Python float and N-D operands were wrong or crashed)
    "dot_float": ("np.sum(np.dot(2.0, a) ** 2)", [(3,)]),
    "dot_float_arg": ("np.sum(np.dot(a, b) ** 2)", [1.5, (3, 2)]),
    "dot_0d": ("np.sum(np.dot(a, b) ** 2)", [(3, 2), ()]),
    "dot_vv": ("np.dot(a, b)", [(3,), (3,)]),
    "dot_vm": ("np.sum(np.dot(a, b) ** 2)", [(3,), (3, 4)]),
    "dot_mv": ("np.sum(np.dot(a, b) ** 2)", [(2, 3), (3,)]),
    "dot_3d": ("np.sum(np.dot(a, b) ** 2)", [(2, 2, 3), (4, 3, 5)]),
    "dot_3d_v": ("np.sum(np.dot(a, b) ** 2)", [(2, 2, 3), (3,)]),
    "dot_method": ("np.sum(a.dot(b) ** 2)", [(2, 3), (3, 2)]),
    # np.inner crashed at every shape
    "inner_vv": ("np.inner(a, b)", [(4,), (4,)]),
    "inner_mv": ("np.sum(np.inner(a, b) ** 2)", [(2, 3), (3,)]),
    "inner_nd": ("np.sum(np.inner(a, b) ** 2)", [(2, 2, 3), (4, 3)]),
    "inner_float": ("np.sum(np.inner(2.0, b) ** 2)", [(4, 3)]),
    "vdot": ("np.vdot(a, b)", [(2, 3), (3, 2)]),
    "outer": ("np.sum(np.outer(a, b) ** 2)", [(2, 3), (3,)]),
    # np.tensordot crashed when the result is a scalar
    "tensordot_scalar": ("np.tensordot(a, b, axes=2)", [(2, 3), (2, 3)]),
    "tensordot_0": ("np.sum(np.tensordot(a, b, axes=0) ** 2)", [(2,), (3,)]),
    "tensordot_pairs": ("np.sum(np.tensordot(a, b, axes=([0, 2], [2, 0])) ** 2)",
                        [(2, 3, 4), (4, 5, 2)]),
    "tensordot_ints": ("np.sum(np.tensordot(a, b, axes=(1, 0)) ** 2)", [(2, 3), (3, 4)]),
    # np.einsum in every form ('ii->' failed at call time)
    "einsum_trace": ("np.einsum('ii->', m)", [(3, 3)]),
    "einsum_diag": ("np.sum(np.einsum('ii->i', m) ** 2)", [(3, 3)]),
    "einsum_iij": ("np.sum(np.einsum('iij->j', m) ** 2)", [(3, 3, 2)]),
    "einsum_implicit": ("np.sum(np.einsum('ij,jk', a, b) ** 2)", [(2, 3), (3, 4)]),
    "einsum_implicit_trace": ("np.einsum('ii', m)", [(3, 3)]),
    "einsum_ellipsis": ("np.sum(np.einsum('...ij,...jk->...ik', a, b) ** 2)",
                        [(5, 1, 2, 3), (4, 3, 4)]),
    "einsum_sublist": ("np.sum(np.einsum(a, [0, 1], b, [1, 2], [0, 2]) ** 2)",
                       [(2, 3), (3, 4)]),
    "einsum_sublist_implicit": ("np.sum(np.einsum(a, [0, 1], b, [1, 2]) ** 2)",
                                [(2, 3), (3, 4)]),
    "einsum_optimize": ("np.sum(np.einsum('ij,jk->ik', a, b, optimize=True) ** 2)",
                        [(2, 3), (3, 4)]),
    "einsum_sum_out": ("np.sum(np.einsum('ij->', a) ** 2)", [(2, 3)]),
    # diagonals and traces (np.trace crashed)
    "trace": ("np.trace(m)", [(3, 3)]),
    "trace_offset": ("np.trace(m, offset=1)", [(3, 4)]),
    "trace_negative": ("np.trace(m, -1)", [(4, 3)]),
    "trace_axes": ("np.sum(np.trace(m, 1, 0, 2) ** 2)", [(3, 2, 4)]),
    "trace_method": ("m.trace()", [(3, 3)]),
    "diagonal": ("np.sum(np.diagonal(m) ** 2)", [(3, 4)]),
    "diagonal_axes": ("np.sum(np.diagonal(m, 1, 2, 0) ** 2)", [(3, 2, 4)]),
    "diag_build": ("np.sum(np.diag(v, 1) ** 2 * np.arange(16.0).reshape(4, 4))", [(3,)]),
    "diag_read": ("np.sum(np.diag(m, -1) ** 2)", [(3, 4)]),
    "diagflat": ("np.sum(np.diagflat(v, 1) * np.arange(25.0).reshape(5, 5))", [(2, 2)]),
    "tril": ("np.sum(np.tril(m, -1) * np.arange(24.0).reshape(2, 3, 4))", [(2, 3, 4)]),
    "triu": ("np.sum(np.triu(m, 1) * np.arange(24.0).reshape(2, 3, 4))", [(2, 3, 4)]),
    # other products
    "cross": ("np.sum(np.cross(a, b) ** 2)", [(4, 3), (3,)]),
    "cross_2d": ("np.sum(np.cross(a, b) ** 2)", [(2,), (2,)]),
    "cross_2_3": ("np.sum(np.cross(a, b) ** 2)", [(4, 2), (3,)]),
    "cross_axes": ("np.sum(np.cross(a, b, axisa=0, axisb=1, axisc=0) ** 2)", [(3, 4), (4, 3)]),
    "cross_axis": ("np.sum(np.cross(a, b, axis=0) ** 2)", [(3, 4), (3, 1)]),
    "kron": ("np.sum(np.kron(a, b) ** 2 * np.arange(24.0).reshape(4, 6))", [(2, 3), (2, 2)]),
    "kron_ranks": ("np.sum(np.kron(a, b) ** 2)", [(3,), (2, 2)]),
    "convolve": ("np.sum(np.convolve(a, b) ** 2)", [(5,), (3,)]),
    "convolve_same": ("np.sum(np.convolve(a, b, 'same') ** 2)", [(2,), (5,)]),
    "convolve_valid": ("np.sum(np.convolve(a, b, mode='valid') ** 2)", [(4,), (6,)]),
    "correlate": ("np.sum(np.correlate(a, b) ** 2)", [(5,), (3,)]),
    "correlate_same": ("np.sum(np.correlate(a, b, 'same') ** 2)", [(2,), (7,)]),
    "correlate_full": ("np.sum(np.correlate(a, b, 'full') ** 2)", [(5,), (3,)]),
    "polyval": ("np.sum(np.polyval(p, x) ** 2)", [(4,), (3,)]),
    "polyval_float": ("np.sum(np.polyval(p, x) ** 2)", [(4,), 0.7]),
    "polyval_list": ("np.sum(np.polyval([p, 2.0, p], x) ** 2)", [0.3, (3,)]),
    # np.linalg
    "cholesky_sym": ("np.sum(np.linalg.cholesky(x @ x.T + 3.0 * np.eye(4)) * W44)", [(4, 4)]),
    "cholesky_upper": ("np.sum(np.linalg.cholesky(x @ x.T + 3.0 * np.eye(3), upper=True) "
                       "* W33)", [(3, 3)]),
    "eigh_values": ("np.sum(np.linalg.eigh(x + x.T)[0] * np.arange(4.0))", [(4, 4)]),
    "eigh_vectors": ("w, v = np.linalg.eigh(x + x.T)\n    return np.sum(w ** 2) + np.sum("
                     "(v @ np.diag(np.arange(4.0)) @ v.T) * W44)", [(4, 4)]),
    "eigh_upper": ("w, v = np.linalg.eigh(x + x.T, UPLO='U')\n    return np.sum(v * v * W44)",
                   [(4, 4)]),
    "eigh_batched": ("np.sum(np.linalg.eigh(x + np.swapaxes(x, -1, -2))[0] ** 3)", [(2, 3, 3)]),
    "svd_s": ("np.sum(np.linalg.svd(x, compute_uv=False) ** 3)", [(2, 4, 3)]),
    "svdvals": ("np.sum(np.linalg.svdvals(x) ** 3)", [(4, 3)]),
    "eigvalsh": ("np.sum(np.linalg.eigvalsh(x, UPLO='U') * np.arange(3.0))", [(3, 3)]),
    "svd_tall": ("u, s, vh = np.linalg.svd(x, full_matrices=False)\n    return np.sum("
                 "(u * s) @ vh * W53) + np.sum(u * u * W53)", [(5, 3)]),
    "svd_wide": ("u, s, vh = np.linalg.svd(x, full_matrices=False)\n    return np.sum("
                 "u[:, :2] @ vh[:2] * W35) + np.sum(vh * vh * W35)", [(3, 5)]),
    "qr_tall": ("q, r = np.linalg.qr(x)\n    return np.sum(q * W53) + np.sum(r * W33)", [(5, 3)]),
    "qr_wide": ("q, r = np.linalg.qr(x)\n    return np.sum(q * W33) + np.sum(r * W35)", [(3, 5)]),
    "qr_batched": ("q, r = np.linalg.qr(x)\n    return np.sum(q * W233) + np.sum(r ** 2)",
                   [(2, 3, 3)]),
    "qr_r": ("np.sum(np.linalg.qr(x, mode='r') * W33)", [(5, 3)]),
    "slogdet": ("sign, logdet = np.linalg.slogdet(x)\n    return sign * logdet", [(4, 4)]),
    "slogdet_batched": ("np.sum(np.linalg.slogdet(x)[1])", [(2, 3, 3)]),
    "pinv_tall": ("np.sum(np.linalg.pinv(x) * W35)", [(5, 3)]),
    "pinv_wide": ("np.sum(np.linalg.pinv(x) * W53)", [(3, 5)]),
    "lstsq": ("x, res, rank, s = np.linalg.lstsq(a, b, rcond=None)\n    return np.sum(x ** 2) "
              "+ np.sum(res) + np.sum(s ** 2)", [(5, 3), (5,)]),
    "lstsq_matrix": ("x, res, rank, s = np.linalg.lstsq(a, b)\n    return np.sum(x * W33[:, :2])"
                     " + np.sum(res * np.arange(2.0))", [(5, 3), (5, 2)]),
    "lstsq_wide": ("np.sum(np.linalg.lstsq(a, b)[0] ** 2)", [(3, 5), (3,)]),
    "matrix_power_3": ("np.sum(np.linalg.matrix_power(x, 3) * W44)", [(4, 4)]),
    "matrix_power_0": ("np.sum(np.linalg.matrix_power(x, 0) * W44) + np.sum(x)", [(4, 4)]),
    "matrix_power_neg": ("np.sum(np.linalg.matrix_power(x + 3.0 * np.eye(4), -2) * W44)",
                         [(4, 4)]),
    "matrix_power_batched": ("np.sum(np.linalg.matrix_power(x, 2) * W233)", [(2, 3, 3)]),
    "multi_dot": ("np.sum(np.linalg.multi_dot([a, b, c]) ** 2)", [(2, 3), (3, 4), (4, 2)]),
    "multi_dot_vectors": ("np.linalg.multi_dot([a, b, c])", [(3,), (3, 4), (4,)]),
    "solve_batched_vector": ("np.sum(np.linalg.solve(a + 3.0 * np.eye(3), b) ** 2)",
                             [(2, 3, 3), (3,)]),
    "solve_batched": ("np.sum(np.linalg.solve(a + 3.0 * np.eye(3), b) ** 2)",
                      [(2, 3, 3), (2, 3, 2)]),
    "solve_broadcast": ("np.sum(np.linalg.solve(a + 3.0 * np.eye(3), b) ** 2)",
                        [(2, 3, 3), (3, 2)]),
    "inv_batched": ("np.sum(np.linalg.inv(a + 3.0 * np.eye(3)) ** 2)", [(2, 3, 3)]),
    "det_batched": ("np.sum(np.linalg.det(a + 3.0 * np.eye(3)) ** 2)", [(2, 3, 3)]),
    "norm_flat": ("np.linalg.norm(x)", [(2, 3, 4)]),
    # NumPy 2's array-API spellings in np.linalg
    "linalg_matmul": ("np.sum(np.linalg.matmul(a, b) ** 2)", [(2, 3, 4), (4, 2)]),
    "linalg_tensordot": ("np.sum(np.linalg.tensordot(a, b, axes=1) ** 2)", [(2, 3), (3, 4)]),
    "linalg_outer": ("np.sum(np.linalg.outer(a, b) ** 2)", [(3,), (2,)]),
    "linalg_vecdot": ("np.sum(np.linalg.vecdot(a, b) ** 2)", [(2, 3), (3,)]),
    "linalg_cross": ("np.sum(np.linalg.cross(a, b, axis=0) ** 2)", [(3, 2), (3, 1)]),
    "linalg_trace": ("np.sum(np.linalg.trace(m, offset=1) ** 2)", [(2, 3, 4)]),
    "linalg_diagonal": ("np.sum(np.linalg.diagonal(m, offset=-1) ** 2)", [(2, 3, 4)]),
    "linalg_matrix_transpose": ("np.sum(np.linalg.matrix_transpose(m) * np.arange(24.0)"
                                ".reshape(2, 4, 3))", [(2, 3, 4)]),
    "linalg_matrix_norm": ("np.sum(np.linalg.matrix_norm(x, ord='nuc') * np.arange(2.0))",
                           [(2, 3, 4)]),
    "linalg_vector_norm": ("np.sum(np.linalg.vector_norm(x, ord=3, axis=(0, 2)) ** 2)",
                           [(2, 3, 4)]),
    "linalg_vector_norm_flat": ("np.linalg.vector_norm(x, ord=np.inf)", [(3, 4)]),
}
for _ord in ("None", "2", "1", "-1", "3", "0.5", "-2", "np.inf", "-np.inf", "0"):
    _key = _ord.replace("np.", "").replace("-", "neg").replace(".", "_")
    CASES[f"norm_vector_{_key}"] = (f"np.linalg.norm(x, ord={_ord})", [(5,)])
    CASES[f"norm_vector_axis_{_key}"] = (
        f"np.sum(np.linalg.norm(x, ord={_ord}, axis=1, keepdims=True) * W3[:, None])", [(3, 4)])
for _ord in ("None", "'fro'", "'nuc'", "1", "-1", "2", "-2", "np.inf", "-np.inf"):
    _key = _ord.replace("np.", "").replace("-", "neg").replace("'", "")
    CASES[f"norm_matrix_{_key}"] = (f"np.linalg.norm(x, ord={_ord})", [(3, 4)])
    CASES[f"norm_matrix_axes_{_key}"] = (
        f"np.sum(np.linalg.norm(x, ord={_ord}, axis=(2, 0)) * W3)", [(4, 3, 5)])
    CASES[f"norm_matrix_keepdims_{_key}"] = (
        f"np.sum(np.linalg.norm(x, ord={_ord}, axis=(0, 1), keepdims=True) * W3)", [(4, 5, 3)])

def _program(key, namespace_np=np):
    """The case as a function whose parameters are the one-letter names the body reads
    without assigning them, in the order a, b, c, m, v, p, x."""
    import re
    body, specs = CASES[key]
    assigned = set()
    for line in body.split("\n"):
        if " = " in line:
            assigned |= set(re.findall(r"\b([a-z]\w*)\b", line.split(" = ")[0]))
    used = set(re.findall(r"\b([a-z])\b", body)) - assigned
    names = [n for n in "abcmvpx" if n in used]
    assert len(names) == len(specs), (key, names)
    source = f"def f({', '.join(names)}):\n    " + (
        body if "return" in body else f"return {body}") + "\n"
    return define(source, {"np": namespace_np, **W})


def _arguments(key, dtype=np.float64):
    specs = CASES[key][1]
    rng = np.random.default_rng(zlib.crc32(key.encode()) + SEED)
    return [float(s) if isinstance(s, float) else rng.uniform(-1.0, 1.0, s).astype(dtype)
            for s in specs]


def _finite_differences(fn, args, k):
    if isinstance(args[k], float):
        eps = 1e-6
        plus = list(args)
        plus[k] += eps
        minus = list(args)
        minus[k] -= eps
        return (float(fn(*plus)) - float(fn(*minus))) / (2 * eps)
    return numerical_grad(lambda *xs: float(fn(*xs)), [np.array(a, copy=True) if isinstance(
        a, np.ndarray) else a for a in args], k)


@pytest.mark.filterwarnings("ignore:Arrays of 2-dimensional vectors:DeprecationWarning")
@pytest.mark.parametrize("key", sorted(CASES))
def test_compiled_equals_eager_equals_finite_differences(key):
    fn = _program(key)
    args = _arguments(key)
    before = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args]
    wrt = tuple(range(len(args)))
    compiled = srcgrad.grad(fn, wrt=wrt, strict=True)
    got = compiled(*args)
    eager = eager_transform(fn, "grad", list(args), wrt, False)
    for k, (g, e) in enumerate(zip(got, eager)):
        assert np.shape(g) == np.shape(args[k]), key
        np.testing.assert_allclose(g, e, rtol=1e-8, atol=1e-10, err_msg=f"{key}: eager {k}")
        np.testing.assert_allclose(g, _finite_differences(fn, args, k), rtol=1e-5, atol=1e-6,
                                   err_msg=f"{key}: finite differences {k}")
    for a, b in zip(args, before):
        np.testing.assert_array_equal(a, b)
    assert compiled.fallback_reason is None


@pytest.mark.filterwarnings("ignore:Arrays of 2-dimensional vectors:DeprecationWarning")
@pytest.mark.parametrize("key", sorted(CASES))
def test_float32_in_float32_out(key):
    fn = _program(key)
    args32 = _arguments(key, np.float32)
    args64 = _arguments(key)
    wrt = tuple(range(len(args32)))
    got = srcgrad.grad(fn, wrt=wrt, strict=True)(*args32)
    eager = eager_transform(fn, "grad", list(args32), wrt, False)
    reference = srcgrad.grad(fn, wrt=wrt, strict=True)(*args64)
    for k, (g, e, r) in enumerate(zip(got, eager, reference)):
        if isinstance(args32[k], float):
            assert isinstance(g, float)
            continue
        assert g.dtype == np.float32 and e.dtype == np.float32, f"{key}: input {k}"
        scale = max(1.0, float(np.max(np.abs(r))))
        np.testing.assert_allclose(g, r, rtol=2e-3, atol=2e-3 * scale, err_msg=key)
        np.testing.assert_allclose(e, r, rtol=2e-3, atol=2e-3 * scale, err_msg=key)


def _jax():
    try:
        import jax
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    return jax


# A cross-section (JAX is slow to start each operation).  JAX reads the whole matrix of
# cholesky/eigh (it symmetrizes); these programs build symmetric arguments, so they agree.
JAX_CASES = ["einsum_iij", "tensordot_pairs", "trace_axes", "cross_axes", "correlate_same",
             "cholesky_sym", "eigh_vectors", "svd_tall", "qr_wide", "slogdet", "norm_vector_3",
             "norm_matrix_nuc"]


@pytest.mark.parametrize("key", JAX_CASES)
def test_matches_jax(key):
    jax = _jax()
    if jax is None:
        pytest.skip("JAX is not installed")
    import jax.numpy as jnp
    args = _arguments(key)
    wrt = tuple(range(len(args)))
    ours = srcgrad.grad(_program(key), wrt=wrt, strict=True)(*args)
    theirs = jax.grad(_program(key, jnp), argnums=wrt)(*[jnp.asarray(a) for a in args])
    for k, (g, t) in enumerate(zip(ours, theirs)):
        np.testing.assert_allclose(g, np.asarray(t), rtol=1e-6, atol=1e-8,
                                   err_msg=f"{key}: input {k}")


REFUSED = {
    "svd_full": ("u, s, vh = np.linalg.svd(x)\n    return np.sum(u * vh) + np.sum(s)",
                 "full_matrices=True"),
    "svd_hermitian": ("return np.sum(np.linalg.svd(x, hermitian=True)[1])", "hermitian=True"),
    "qr_complete": ("q, r = np.linalg.qr(x, mode='complete')\n    return np.sum(q) + np.sum(r)",
                    "mode='complete'"),
    "eigh_attribute": ("return np.sum(np.linalg.eigh(x + x.T).eigenvalues)", "eigenvalues"),
    "einsum_out": ("return np.sum(np.einsum('ij->ij', x, out=np.zeros((3, 3))))", "out="),
    "einsum_dtype": ("return np.sum(np.einsum('ij->ij', x, dtype=np.float32))", "dtype="),
}


@pytest.mark.parametrize("key", sorted(REFUSED))
def test_refused_clearly_then_right_in_the_fallback(key):
    body, words = REFUSED[key]
    fn = define(f"def f(x):\n    {body}\n", {"np": np})
    x = np.random.default_rng(5).uniform(-1, 1, (3, 3))
    with pytest.raises(srcgrad.CompileError, match=words.replace("(", r"\(")):
        srcgrad.grad(fn, strict=True)(x)
    if key in ("svd_full", "eigh_attribute"):     # NumPy computes these: the fallback must too
        with pytest.warns(srcgrad.FallbackWarning):
            got = srcgrad.grad(fn, strict=False)(x)
        np.testing.assert_allclose(got, _finite_differences(fn, [x], 0), rtol=1e-5, atol=1e-6)


def test_einsum_subscripts_must_be_literal():
    fn = define("def f(x, s):\n    return np.einsum(s, x)\n", {"np": np})
    with pytest.raises(srcgrad.CompileError, match="literal subscripts"):
        srcgrad.grad(fn, strict=True)(np.ones((3, 3)), "ii")


def test_svd_of_a_wide_matrix_with_full_matrices_is_refused_eagerly():
    x = srcgrad.tensor(np.random.default_rng(1).uniform(-1, 1, (3, 4)), requires_grad=True)
    with pytest.raises(NotImplementedError, match="full_matrices=False"):
        np.linalg.svd(x)
