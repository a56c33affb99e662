"""Shift invariance (srcgrad/analysis/shift.py): the ``max`` of a logsumexp or a softmax gets no
adjoint,
and a value the result does depend on always keeps its own.

Every case's gradient is compared with central differences and with JAX (``np`` rebound to
``jax.numpy``, float64); the analysis is asked directly whether ``m`` has an adjoint, and the
generated source whether it still computes the max's mask (``x == unreduce(m, ...)``).
"""

from __future__ import annotations

import importlib.util
import types

import numpy as np
import pytest

import srcgrad
from srcgrad.analysis.graph import analyse, build_graph
from srcgrad.build.lowering import lower_function

HAS_JAX = importlib.util.find_spec("jax") is not None

# --------------------------------------------------------------------------------------------
# m needs no adjoint.


def lse_row(x):
    m = np.max(x, axis=1, keepdims=True)
    return np.sum(np.log(np.sum(np.exp(x - m), axis=1, keepdims=True)) + m)


def lse_row_flat(x):
    m = np.max(x, axis=1)
    return np.sum(np.log(np.sum(np.exp(x - m[:, None]), axis=1)) + m)


def lse_row_squeezed(x):
    m = np.max(x, axis=1, keepdims=True)
    return np.sum((np.log(np.sum(np.exp(x - m), axis=1)) + m[:, 0]) * np.arange(x.shape[0]))


def lse_column(x):
    m = np.max(x, axis=0)
    return np.sum(np.log(np.sum(np.exp(x - m), axis=0)) + m)


def lse_full(x):
    m = np.max(x)
    return np.log(np.sum(np.exp(x - m))) + m


def lse_last_axis(x):
    m = np.amax(x, axis=-1, keepdims=True)
    return np.sum(np.log(np.sum(np.exp(x - m), axis=-1, keepdims=True)) + m)


def cross_entropy(x):
    m = np.max(x, axis=1, keepdims=True)
    e = np.exp(x - m)
    p = e / np.sum(e, axis=1, keepdims=True)
    return -np.mean(np.sum(np.linspace(0.0, 1.0, x.size).reshape(x.shape) * np.log(p), axis=1))


def log_softmax(x):
    m = np.max(x, axis=1, keepdims=True)
    shifted = x - m
    out = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
    return np.sum(out * np.arange(x.shape[1]))


def where_maximum_after(x):
    m = np.max(x, axis=1, keepdims=True)
    lse = np.log(np.sum(np.exp(x - m), axis=1, keepdims=True)) + m
    return np.sum(np.where(lse > 1.5, lse, 0.0) + np.maximum(lse, 1.2))


def row_max_along_columns(x):
    """m (n,) broadcasts along axis 0 of a square x: a logsumexp of each column."""
    m = np.max(x, axis=1)
    return np.sum(np.log(np.sum(np.exp(x - m), axis=0)) + m)


def loop_body_lse(x):
    total = 0.0
    for _ in range(2):
        m = np.max(x, axis=1, keepdims=True)
        total = total + np.sum(np.log(np.sum(np.exp(x - m), axis=1, keepdims=True)) + m)
    return total


def only_through_m(x):
    m = np.max(x, axis=1, keepdims=True)
    return np.sum(m - m)


def lse_leaky(x):
    """The benchmark's logsumexp (benchmarks/fused_workloads.py): of a leaky ramp of x."""
    m = np.max(x, axis=1, keepdims=True)
    z = np.where(x > 4.0, x, 0.1 * x)
    s = np.log(np.sum(np.exp(z - m), axis=1)) + m[:, 0]
    return np.sum(np.maximum(s, 3.0))


def masked_softmax(x):
    m = np.max(x, axis=1, keepdims=True)
    e = np.where(x > np.min(x, axis=1, keepdims=True), np.exp(x - m), 0.0)
    p = e / (np.sum(e, axis=1, keepdims=True) + np.sum(e, axis=1, keepdims=True))
    return np.sum(p * np.arange(x.shape[1]))


POSITIVE = [lse_row, lse_row_flat, lse_row_squeezed, lse_column, lse_full, lse_last_axis,
            cross_entropy, log_softmax, where_maximum_after, row_max_along_columns,
            loop_body_lse, only_through_m, lse_leaky, masked_softmax]

# --------------------------------------------------------------------------------------------
# m keeps its adjoint (each is nonzero).


def lse_plus_m(x):
    m = np.max(x, axis=1, keepdims=True)
    lse = np.log(np.sum(np.exp(x - m), axis=1, keepdims=True)) + m
    return np.sum(lse + m)


def sum_over_wrong_axis(x):
    m = np.max(x, axis=1, keepdims=True)
    return np.sum(np.log(np.sum(np.exp(x - m), axis=0, keepdims=True))) + np.sum(m)


def exp_times_m(x):
    m = np.max(x, axis=1, keepdims=True)
    return np.sum(np.log(np.sum(np.exp(x - m) * m, axis=1, keepdims=True)) + m)


def twice_m(x):
    m = np.max(x, axis=1, keepdims=True)
    return np.sum(np.log(np.sum(np.exp(x - 2 * m), axis=1, keepdims=True)) + m)


def column_max_along_rows(x):
    m = np.max(x, axis=0, keepdims=True)
    return np.sum(np.log(np.sum(np.exp(x - m), axis=1, keepdims=True)) + m[:, :1])


def exp_summed_over_axis0(x):
    m = np.max(x, axis=1, keepdims=True)
    return np.sum(np.log(np.sum(np.exp(x - m), axis=0)))


def row_max_along_rows(x):
    """m (n,) broadcasts along axis 0 of a square x, but the sum runs along axis 1."""
    m = np.max(x, axis=1)
    return np.sum(np.log(np.sum(np.exp(x - m), axis=1)) + m)


def branch_reads_m(x):
    m = np.max(x, axis=1, keepdims=True)
    lse = np.log(np.sum(np.exp(x - m), axis=1, keepdims=True))
    if x[0, 0] > 0:
        lse = lse + 3 * m
    else:
        lse = lse - m
    return np.sum(lse)


def loop_reads_m(x):
    m = np.max(x, axis=1, keepdims=True)
    total = 0.0
    for i in range(3):
        total = total + np.sum(np.log(np.sum(np.exp(x - m), axis=1, keepdims=True)) + m * (i + 1))
    return total


def transposed_m(x):
    m = np.max(x, axis=1, keepdims=True)
    return np.sum(np.log(np.sum(np.exp(x - m.T), axis=1, keepdims=True)) + m)


def where_one_side_shifted(x):
    m = np.max(x, axis=1, keepdims=True)
    z = np.where(x > 3.5, x - m, x)
    return np.sum(np.log(np.sum(np.exp(z), axis=1, keepdims=True)) + m)


NEGATIVE = [lse_plus_m, sum_over_wrong_axis, exp_times_m, twice_m, column_max_along_rows,
            exp_summed_over_axis0, row_max_along_rows, branch_reads_m, loop_reads_m,
            transposed_m, where_one_side_shifted]
NO_JAX = {branch_reads_m}           # a Python ``if`` on a traced value
# Each negative case's max does contribute (test_gradients_agree_with_jax holds it constant).

rng = np.random.default_rng(7)
X = rng.normal(size=(4, 4)) + 3.0   # positive: exp_times_m takes the log of a sum with m
TIES = X.copy()
TIES[1, 3] = TIES[1, 0] = TIES[1].max() + 1.0     # a tied maximum in row 1, column 0/3 too


def numerical(fn, x, eps=1e-6):
    g = np.zeros_like(x)
    for j in range(x.size):
        plus, minus = x.copy(), x.copy()
        plus.flat[j] += eps
        minus.flat[j] -= eps
        g.flat[j] = (fn(plus) - fn(minus)) / (2 * eps)
    return g


def jax_grad(fn, x, max_is_constant: bool = False):
    """JAX's gradient of ``fn`` (``np`` rebound to ``jax.numpy``); ``max_is_constant``: with
    no gradient through ``np.max``/``np.amax`` (as hand-written gradients treat it)."""
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    namespace = jnp
    if max_is_constant:
        def constant_max(*args, **kwargs):
            return jax.lax.stop_gradient(jnp.max(*args, **kwargs))
        namespace = types.SimpleNamespace(**{n: getattr(jnp, n) for n in dir(jnp)
                                             if not n.startswith("__")})
        namespace.max = namespace.amax = constant_max
    rebound = types.FunctionType(fn.__code__, {**fn.__globals__, "np": namespace}, fn.__name__)
    return np.asarray(jax.grad(rebound)(x))


def m_has_adjoint(fn) -> bool:
    """Whether the analysis gives ``m`` (of ``fn``, or of its loop's body) an adjoint."""
    ir = lower_function(fn)
    for st in ir.body:
        if st.kind == "loop" and "m" not in {s.target for s in ir.body}:
            ir = st.fn[0]
    graph = build_graph(ir, [p for p in ir.params if p not in ir.nondiff], check=False)
    assert "m" in graph and graph.nodes["m"]["active"]      # active before the analysis
    return "m" in analyse(ir, graph).active


def sources(fn) -> str:
    g = srcgrad.grad(fn)
    g(X.copy())
    return g.source + "\n".join(g.sources.values())


def masks_the_max(text: str) -> bool:
    return "== unreduce(m," in text


@pytest.mark.parametrize("fn", POSITIVE, ids=lambda f: f.__name__)
def test_no_adjoint_for_a_shift_invariant_max(fn):
    assert not m_has_adjoint(fn)
    assert not masks_the_max(sources(fn))
    got = srcgrad.grad(fn)(X.copy())
    np.testing.assert_allclose(got, numerical(fn, X.copy()), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("fn", NEGATIVE, ids=lambda f: f.__name__)
def test_the_max_keeps_its_adjoint_where_the_result_depends_on_it(fn):
    assert m_has_adjoint(fn)
    assert masks_the_max(sources(fn))
    got = srcgrad.grad(fn)(X.copy())
    np.testing.assert_allclose(got, numerical(fn, X.copy()), rtol=1e-5, atol=1e-6)


@pytest.mark.skipif(not HAS_JAX, reason="JAX is not installed")
@pytest.mark.parametrize("fn", [f for f in POSITIVE + NEGATIVE if f not in NO_JAX],
                         ids=lambda f: f.__name__)
@pytest.mark.parametrize("x", [X, TIES], ids=["distinct", "ties"])
def test_gradients_agree_with_jax(fn, x):
    got = srcgrad.grad(fn)(x.copy())
    np.testing.assert_allclose(got, jax_grad(fn, x.copy()), rtol=1e-9, atol=1e-12)
    # the max's contribution: zero exactly where the analysis drops it
    held = jax_grad(fn, x.copy(), max_is_constant=True)
    assert np.allclose(got, held, rtol=1e-9, atol=1e-12) is (fn in POSITIVE)


def test_the_row_logsumexp_gradient_reads_no_max_mask():
    g = srcgrad.grad(lse_row)
    g(X.copy())
    texts = [g.source, *g.sources.values()]
    assert len(texts) == 2                  # the generic module and the specialised one
    for text in texts:
        body = text[text.index("def lse_row_grad"):]
        body = body[:body.find("\ndef ")] if "\ndef " in body else body
        assert "np.max(x, axis=1, keepdims=True)" in body
        assert "==" not in body and "d_m" not in body and "np.where" not in body


def lse_pair(x):
    m = np.max(x, axis=1, keepdims=True)
    lse = np.log(np.sum(np.exp(x - m), axis=1, keepdims=True))
    return np.sum(lse + m), np.sum(lse)


def lse_pair_invariant(x):
    m = np.max(x, axis=1, keepdims=True)
    lse = np.log(np.sum(np.exp(x - m), axis=1, keepdims=True)) + m
    return np.sum(lse), np.sum(lse * 3.0)


@pytest.mark.parametrize("fn, kept", [(lse_pair, True), (lse_pair_invariant, False)],
                         ids=["one_output_shifts", "both_invariant"])
def test_tuple_outputs_count_every_output(fn, kept):
    assert m_has_adjoint(fn) is kept
    cotangent = (np.float64(0.7), np.float64(-1.3))
    out, back = srcgrad.vjp(fn, X.copy())
    (got,) = back(cotangent)

    def weighted(x):
        a, b = fn(x)
        return cotangent[0] * a + cotangent[1] * b

    np.testing.assert_allclose(got, numerical(weighted, X.copy()), rtol=1e-5, atol=1e-6)


def helper_lse(v):
    m = np.max(v, axis=1, keepdims=True)
    return np.log(np.sum(np.exp(v - m), axis=1, keepdims=True)) + m


def calls_helper(x):
    return np.sum(helper_lse(x) * np.arange(x.shape[0])[:, None])


def test_a_called_function_drops_its_own_max():
    assert not m_has_adjoint(helper_lse)
    assert not masks_the_max(sources(calls_helper))
    got = srcgrad.grad(calls_helper)(X.copy())
    np.testing.assert_allclose(got, numerical(calls_helper, X.copy()), rtol=1e-5, atol=1e-6)


@pytest.mark.skipif(not HAS_JAX, reason="JAX is not installed")
@pytest.mark.parametrize("fn", [lse_row, cross_entropy, lse_plus_m], ids=lambda f: f.__name__)
def test_second_derivatives_agree_with_jax(fn):
    """The gradient's own code is differentiated again (its max analysed in its turn)."""
    import jax
    jax.config.update("jax_enable_x64", True)
    x = X[:3, :3].copy()
    got = srcgrad.hessian(fn)(x)
    rebound = types.FunctionType(fn.__code__, {**fn.__globals__, "np": jax.numpy}, fn.__name__)
    np.testing.assert_allclose(got, np.asarray(jax.hessian(rebound)(x)), rtol=1e-8, atol=1e-10)


def lse_about_the_mean(x):
    m = np.mean(x, axis=1, keepdims=True)
    return np.sum(np.log(np.sum(np.exp(x - m), axis=1, keepdims=True)) + m)


def test_a_mean_keeps_its_adjoint_where_exp_may_overflow():
    # x - mean(x) does not keep exp from overflowing: there the mean's adjoint is NaN, and
    # dropping it would change which entries of the gradient are NaN
    from srcgrad.transforms.fallback import eager_transform
    x = np.array([[0.0, 2000.0], [1.0, 2.0]])
    with np.errstate(all="ignore"):
        got = srcgrad.grad(lse_about_the_mean)(x)
        want = eager_transform(lse_about_the_mean, "grad", [x], (0,), True)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    assert np.isnan(got[0]).all()
    np.testing.assert_allclose(got[1], want[1], rtol=1e-12)
