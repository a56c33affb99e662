"""Common NumPy idioms in a function that falls back: the eager run follows them exactly.

Discrete random draws of probabilities that carry a gradient (REINFORCE), ``np.add.at``,
``a.fill``, ``a.put``, ``a.clip(min=...)``, ``np.vectorize`` and ``np.apply_along_axis``.
Each function starts with an attribute assignment (``_box.v = ...``), which the compiler
refuses, so that ``srcgrad.grad`` answers on the eager engine.  Gradients are checked
against central differences and, where it runs the same code, jax or HIPS autograd; the
caller's arguments are checked unchanged, and what is refused names the user's line.
"""

from __future__ import annotations

import copy
import types
import warnings

import numpy as np
import pytest

import srcgrad
from srcgrad.transforms.grad import Transform

_box = types.SimpleNamespace(rng=None)
RS = np.random.RandomState(11)
GEN = np.random.default_rng(4)
PLAIN_BUFFER = np.zeros(4)
X = np.array([0.3, -0.7, 1.2, 0.4])
M = np.random.RandomState(2).randn(3, 4)


def _softmax(z):
    e = np.exp(z - np.max(z))
    return e / np.sum(e)


def choice_global_stream(x):
    _box.v = 0
    np.random.seed(5)
    p = _softmax(x)
    actions = [np.random.choice(len(p), p=p) for _ in range(3)]
    return sum(np.log(p[a]) for a in actions) + np.sum(x ** 2)


def multinomial_global_generator(x):
    _box.v = 0
    RS.seed(1)
    p = _softmax(x)
    counts = RS.multinomial(5, p)
    return np.sum(counts * np.log(p)) + np.sum(np.sin(x))


def bernoulli_scalar(x):
    _box.v = 0
    GEN.bit_generator.state = np.random.default_rng(9).bit_generator.state
    np.random.seed(2)
    q = 1.0 / (1.0 + np.exp(-np.sum(x)))
    b = GEN.binomial(1, q)
    pick = np.random.choice(2, p=[1 - q, q])
    return b * np.log(q) + (1 - b) * np.log(1 - q) + pick * q


def poisson_local_generator(x):
    _box.v = 0
    rng = np.random.default_rng(3)
    lam = np.exp(x)
    k = rng.poisson(lam)
    return np.sum(k * x - lam)


def choice_attribute_generator(x):
    _box.rng = np.random.RandomState(8)
    p = _softmax(x * 2.0)
    a = _box.rng.choice(len(p), size=2, p=p)
    return np.sum(np.log(p[a]))


def choice_argument_generator(x, rng):
    _box.v = 0
    p = _softmax(x)
    return np.log(p[rng.choice(x.shape[0], p=p)]) + rng.integers(0, 3) * np.sum(x)


def add_at(x):
    _box.v = 0
    out = np.zeros(5)
    np.add.at(out, [0, 1, 1, 4], x)
    np.subtract.at(out, np.array([2, 2]), x[1])
    counts = np.zeros(3)
    np.add.at(counts, [0, 0, 2], 1.0)                  # no gradient: NumPy's values
    return np.sum(out ** 2) + np.sum(counts * x[:3])


def add_at_rows(m):
    _box.v = 0
    acc = np.zeros((2, 4))
    np.add.at(acc, ([0, 1, 0], slice(None)), m)
    np.add.at(acc, (1, [0, 0, 3]), m[0, 0])
    return np.sum(np.tanh(acc) * acc)


def fill_and_put(x):
    _box.v = 0
    out = np.empty(3)
    out.fill(x[0])
    out[1:] = out[1:] * x[1:3]
    out += 1.0
    buf = np.zeros((2, 3))
    buf[1].fill(x[3])
    y = np.zeros(4)
    y.put([0, 2, 2], x[:3])
    np.put(y, [-1], x[3] * 2.0, mode="wrap")
    return np.sum(out ** 2) + np.sum(buf ** 3) + np.sum(y ** 2)


def clip_keywords(x):
    _box.v = 0
    return (np.sum(x.clip(min=0.0) ** 2) + np.sum(x.clip(max=0.5)) + np.sum(x.clip(None, 1.0))
            + np.sum(np.clip(x, min=-0.5, max=0.8) ** 3) + np.sum(np.clip(x, 0.35, None)))


@np.vectorize
def _smooth(v):
    return v * v if v < 0.5 else np.sin(v)


def vectorized(x):
    _box.v = 0
    twice = np.vectorize(lambda v, w: v * w + 1.0)
    pair = np.vectorize(lambda v: (v * 2.0, v ** 3))
    a, b = pair(x)
    scaled = np.vectorize(lambda v, k: v * k, excluded={1})(x, 3.0)
    return (np.sum(_smooth(x)) + np.sum(twice(x[:, None], x[None, :]) ** 2)
            + np.sum(a * b) + np.sum(scaled) + np.sum(np.vectorize(np.exp, otypes=[float])(x)))


def along_axes(m):
    _box.v = 0
    rows = np.apply_along_axis(lambda r: np.sum(r ** 2), 1, m)
    cols = np.apply_along_axis(lambda c: c * c[0], 0, m)
    outer = np.apply_along_axis(lambda r: np.outer(r, r[:2]), 1, m)
    return np.sum(rows) + np.sum(cols ** 2) + np.sum(np.tanh(outer))


def closures_over_the_parameter(w):
    _box.v = 0
    rows = np.apply_along_axis(lambda r: np.sum(r * w), 1, M)    # plain data, w closed over
    each = np.vectorize(lambda v: v * w[0] + w[1] ** 2)(np.arange(3.0))
    return np.sum(rows ** 2) + np.sum(each)


CASES = {
    "choice_global_stream": (choice_global_stream, lambda: (X.copy(),)),
    "multinomial_global_generator": (multinomial_global_generator, lambda: (X.copy(),)),
    "bernoulli_scalar": (bernoulli_scalar, lambda: (X.copy(),)),
    "poisson_local_generator": (poisson_local_generator, lambda: (X.copy(),)),
    "choice_attribute_generator": (choice_attribute_generator, lambda: (X.copy(),)),
    "add_at": (add_at, lambda: (X.copy(),)),
    "add_at_rows": (add_at_rows, lambda: (M.copy(),)),
    "fill_and_put": (fill_and_put, lambda: (X.copy(),)),
    "clip_keywords": (clip_keywords, lambda: (X.copy(),)),
    "vectorized": (vectorized, lambda: (X.copy(),)),
    "along_axes": (along_axes, lambda: (M.copy(),)),
    "closures_over_the_parameter": (closures_over_the_parameter, lambda: (X.copy(),)),
}


def _fd(f, args, eps=1e-6):
    x = args[0]
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += eps
        down[i] -= eps
        g[i] = (f(up, *args[1:]) - f(down, *args[1:])) / (2 * eps)
    return g


def _fallback(f, *args, kind="grad"):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        out = Transform(f, kind, 0)(*args)              # made anew: it warns again
    assert any(issubclass(w.category, srcgrad.FallbackWarning) for w in seen)
    return out


@pytest.mark.parametrize("name", sorted(CASES))
def test_fallback_gradient_equals_finite_differences(name):
    f, make = CASES[name]
    args = make()
    kept = copy.deepcopy(args)
    value, g = _fallback(f, *args, kind="value_and_grad")
    for a, b in zip(args, kept):
        np.testing.assert_array_equal(a, b)             # the caller's arguments are not written
    assert value == pytest.approx(f(*make()), rel=1e-13)    # the same draws, the same values
    np.testing.assert_allclose(g, _fd(f, make()), rtol=1e-6, atol=1e-7)


def test_a_discrete_draw_draws_what_numpy_draws_and_has_no_derivative():
    x = X.copy()
    p = _softmax(x * 2.0)
    a = np.random.RandomState(8).choice(4, size=2, p=p)
    want = 2.0 * (np.eye(4)[a].sum(axis=0) - 2 * p)           # the gradient of sum(log p[a])
    np.testing.assert_allclose(_fallback(choice_attribute_generator, x), want, rtol=1e-12)
    choice_global_stream(x)
    plain_after = np.random.get_state()
    np.random.seed(0)
    _fallback(choice_global_stream, x)
    after = np.random.get_state()
    assert after[2] == plain_after[2]                       # the same stream, as far drawn
    np.testing.assert_array_equal(after[1], plain_after[1])


def test_a_generator_passed_as_an_argument():
    g = _fallback(choice_argument_generator, X.copy(), np.random.default_rng(0))
    want = _fd(lambda x: choice_argument_generator(x, np.random.default_rng(0)), (X.copy(),))
    np.testing.assert_allclose(g, want, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", ["add_at", "clip_keywords"])
def test_fallback_gradient_equals_jax(name):
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    def add_at_twin(x):
        out = jnp.zeros(5).at[jnp.array([0, 1, 1, 4])].add(x)
        out = out.at[jnp.array([2, 2])].add(-x[1])
        counts = jnp.zeros(3).at[jnp.array([0, 0, 2])].add(1.0)
        return jnp.sum(out ** 2) + jnp.sum(counts * x[:3])

    twins = {"add_at": add_at_twin,
             "clip_keywords": types.FunctionType(clip_keywords.__code__,
                                                 {**clip_keywords.__globals__, "np": jnp})}
    f, make = CASES[name]
    np.testing.assert_allclose(_fallback(f, *make()), jax.grad(twins[name])(*make()),
                               rtol=1e-12, atol=1e-12)


def test_fallback_gradient_equals_hips_autograd_for_vectorize():
    autograd = pytest.importorskip("autograd")
    import autograd.numpy as anp

    def twin(x):                      # the elements mapped by hand, as vectorize maps them
        smooth = anp.stack([v * v if v < 0.5 else anp.sin(v) for v in x])
        return anp.sum(smooth) + anp.sum((x[:, None] * x[None, :] + 1.0) ** 2) \
            + anp.sum(2.0 * x * x ** 3) + anp.sum(3.0 * x) + anp.sum(anp.exp(x))
    np.testing.assert_allclose(_fallback(vectorized, X.copy()), autograd.grad(twin)(X.copy()),
                               rtol=1e-12)


def test_vectorize_calls_the_function_as_numpy_does():
    calls = []

    def counted(x):
        _box.v = 0
        return np.sum(np.vectorize(lambda v: calls.append(1) or v * 2.0)(x))
    counted(X.copy())
    plain = len(calls)
    calls.clear()
    _fallback(counted, X.copy())
    assert len(calls) == plain == X.size + 1            # the first element twice
    out = np.vectorize(lambda v: v * 2.0)(2.0)
    assert type(out) is np.ndarray and out.shape == ()


@pytest.mark.parametrize("call", [
    lambda vec: vec(lambda v: v * 2)(np.arange(4).reshape(2, 2)),
    lambda vec: vec(lambda v, w: v + w, otypes=[np.float32])(np.arange(3.0), 1),
    lambda vec: vec(lambda v: (v, v > 1))(np.arange(3.0)),
    lambda vec: vec(lambda v: v, otypes="d")(np.zeros((0, 2))),
    lambda vec: vec(lambda v, k: v * k, excluded={"k"})(np.arange(3), k=2.5),
    lambda vec: vec(type)(np.arange(2.0)),
])
def test_vectorize_of_plain_operands_is_numpys(call):
    from srcgrad.runtime.eager.mapped import Vectorize
    want, got = call(np.vectorize), call(Vectorize)
    for w, g in zip(want if isinstance(want, tuple) else (want,),
                    got if isinstance(got, tuple) else (got,)):
        assert type(g) is type(w) and g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)


def test_apply_along_axis_of_plain_operands_is_numpys():
    from srcgrad.runtime.eager.mapped import apply_along_axis
    for f, axis in ((lambda r: r[::-1] * 2, 0), (lambda r: np.outer(r, r), -1),
                    (lambda r: int(r[0] > 0), 1)):
        want, got = np.apply_along_axis(f, axis, M), apply_along_axis(f, axis, M)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)


def _normal_of_parameter(x):
    _box.v = 0
    return np.sum(RS.normal(x, 1.0))


def _normal_from_argument(x, rng):
    _box.v = 0
    return np.sum(rng.normal(x, 1.0))


def _choice_of_values(x):
    _box.v = 0
    return np.sum(GEN.choice(x, size=2))


def _choice_of_values_from_argument(x, rng):
    _box.v = 0
    return np.sum(rng.choice(x, size=2))


def _bernoulli_of_a_scalar_from_argument(x, rng):
    _box.v = 0
    q = 1.0 / (1.0 + np.exp(-np.sum(x)))
    return rng.binomial(1, q) * np.log(q)


def _multiply_at(x):
    _box.v = 0
    out = np.ones(4)
    np.multiply.at(out, [0, 0], x[:2])
    return np.sum(out)


def _add_at_into_a_global(x):
    _box.v = 0
    np.add.at(PLAIN_BUFFER, [0, 1], x[:2])
    return np.sum(PLAIN_BUFFER)


def _vectorize_with_signature(x):
    _box.v = 0
    return np.sum(np.vectorize(lambda r: r * 2.0, signature="(n)->(n)")(x))


REFUSED = {
    "_normal_of_parameter": ((X.copy(),), r"RS\.normal\(x, 1\.0\).*normal\(\) is given a "
                                          r"parameter that carries a gradient"),
    "_normal_from_argument": ((X.copy(), np.random.default_rng(1)),
                              r"rng\.normal\(x, 1\.0\).*requires grad"),
    "_choice_of_values": ((X.copy(),), r"GEN\.choice\(x, size=2\).*picks elements"),
    "_choice_of_values_from_argument": ((X.copy(), np.random.default_rng(1)),
                                        r"rng\.choice\(x, size=2\).*requires grad"),
    "_bernoulli_of_a_scalar_from_argument": ((X.copy(), np.random.default_rng(1)),
                                             r"rng\.binomial\(1, q\).*float"),
    "_multiply_at": ((X.copy(),), r"np\.multiply\.at\(out.*multiply\.at of values"),
    "_add_at_into_a_global": ((X.copy(),), r"PLAIN_BUFFER.*add\.at"),
    "_vectorize_with_signature": ((X.copy(),), r"signature="),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_what_is_not_followed_is_refused_with_the_users_line(name):
    args, message = REFUSED[name]
    with pytest.raises(srcgrad.CompileError, match=message) as caught:
        _fallback(globals()[name], *args)
    if name != "_vectorize_with_signature":
        assert "test_fallback_draws_and_writes.py:" in str(caught.value)
    with pytest.raises(srcgrad.CompileError):
        srcgrad.grad(globals()[name], strict=True)(*args)
