"""Random draws compiled as users write them: methods of a RandomState or Generator passed as
an argument, held as a global or a closure variable, or made by ``np.random.default_rng``, and
the functions of ``np.random`` on its global stream.  A draw carries no gradient; the compiled
code draws what the function draws, in the same order and number, so its gradient is the
gradient of the function NumPy computes for that call (with the same seed: the eager fallback,
central differences with the seed reset for every evaluation, and autograd)."""

from __future__ import annotations

import types
import warnings

import autograd
import autograd.numpy as anp
import numpy as np
import pytest

import srcgrad
from srcgrad.errors import CompileError
from srcgrad.transforms.fallback import eager_transform

G = np.random.RandomState(11)
SEED = 7


def _rng(kind: str, seed: int = SEED):
    return np.random.default_rng(seed) if kind == "generator" else np.random.RandomState(seed)


# ---------------------------------------------------------------- the functions drawn from
def dropout(x, rs, p=0.7):
    h = np.tanh(x)
    mask = (rs.rand(*h.shape) < p) / p
    return np.sum((h * mask) ** 2)


def reparameterised(x, rs):
    eps = rs.randn(*x.shape)
    return np.sum(np.sin(x + np.exp(0.5 * x) * eps))


def draws_with_options(x, rs):
    a = rs.normal(0.5, 2.0, size=x.shape)
    b = rs.uniform(-1.0, 1.0, size=3)
    idx = rs.randint(0, 3, size=2)
    pick = rs.choice(3, 2)
    order = rs.permutation(3)
    coin = rs.binomial(1, 0.5, size=3)
    return np.sum(x * a * b) + np.sum(x[idx] ** 2) + np.sum(x[pick]) + \
        np.sum(x[order] * coin * np.arange(3))


def generator_draws(x, rng):
    z = rng.standard_normal(x.shape)
    k = rng.integers(0, 3, size=2)
    u = rng.random(3)
    n = rng.normal(size=(3,))
    return np.sum(np.cos(x * z) * u + n * x) + np.sum(x[k])


def nested_draws(x, rs):
    b = rs.normal(rs.rand(), 1.0, size=3)       # the inner draw runs once, first
    s = x * 0.0
    for _ in range(3):
        s = s + rs.rand(3) * x ** 2              # a draw in a loop body
    if np.sum(x) > 0:
        s = s * rs.randn(3)                      # and in a branch
    rs.randn(2)                                  # drawn, not used: the stream moves on
    return np.sum(s * b + x * rs.rand(*x.shape))


def with_effects(x, rs):
    print("noise of shape", rs.randn(2).shape, rs.rand() < 2.0 or rs.rand())  # as Python
    return np.sum(x * rs.rand(3))


def _noise(rs, shape):
    return rs.randn(*shape)


def with_helper(x, rs):
    return np.sum(x ** 2 * _noise(rs, x.shape)) + np.sum(x * _noise(rs, (3,)))


def seeded_global(x, seed):
    np.random.seed(seed)
    noise = 0.1 * np.random.randn(*x.shape)
    return np.sum((x + noise) ** 2 * np.random.rand(3) + np.random.normal(size=3) * x)


def global_object(x):
    return np.sum(np.sin(x * G.randn(3)))


def with_default_rng(x, seed):
    rng = np.random.default_rng(seed)
    return np.sum(x ** 3 * rng.standard_normal(3))


def _closure():
    rng = np.random.RandomState(5)

    def inner(x):
        return np.sum(np.exp(x) * rng.uniform(size=3))
    return inner


closure_object = _closure()

X = np.array([0.3, -0.2, 0.5])

# each case: the function, how to make its non-differentiated arguments (fresh, seeded), and
# whether autograd can run it with ``np`` bound to autograd.numpy
CASES = {
    "dropout": (dropout, lambda: (_rng("state"),), True),
    "reparameterised": (reparameterised, lambda: (_rng("state"),), True),
    "draws_with_options": (draws_with_options, lambda: (_rng("state"),), True),
    "generator_draws": (generator_draws, lambda: (_rng("generator"),), True),
    "nested_draws": (nested_draws, lambda: (_rng("state"),), True),
    "with_helper": (with_helper, lambda: (_rng("state"),), False),
    "with_effects": (with_effects, lambda: (_rng("state"),), True),
    "seeded_global": (seeded_global, lambda: (SEED,), True),
    "with_default_rng": (with_default_rng, lambda: (SEED,), True),
}


def _state(value):
    if isinstance(value, np.random.RandomState):
        return value.get_state(legacy=False)
    if isinstance(value, np.random.Generator):
        return value.bit_generator.state
    return np.random.get_state(legacy=False)


def _same_state(a, b) -> bool:
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same_state(a[k], b[k]) for k in a)
    if isinstance(a, np.ndarray):
        return np.array_equal(a, b)
    return a == b


def _stream(rest):
    return next((r for r in rest if isinstance(r, (np.random.RandomState,
                                                      np.random.Generator))), None)


def _fd(f, x, make, eps=1e-6):
    """Central differences, every evaluation with fresh seeded arguments (the same draws)."""
    g = np.zeros_like(x)
    for j in range(x.size):
        e = np.zeros_like(x)
        e.flat[j] = eps
        g.flat[j] = (f(x + e, *make()) - f(x - e, *make())) / (2 * eps)
    return g


def _autograd(f, x, rest):
    oracle = types.FunctionType(f.__code__, dict(f.__globals__, np=anp), f.__name__,
                                f.__defaults__, f.__closure__)
    return autograd.grad(oracle)(x, *rest)


@pytest.mark.parametrize("name", list(CASES))
def test_compiled_gradient_matches_fallback_fd_and_autograd(name):
    f, make, oracle = CASES[name]
    compiled = srcgrad.grad(f, strict=True)(X, *make())
    eager = eager_transform(f, "grad", [X, *make()], (0,), True)
    np.testing.assert_allclose(compiled, eager, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(compiled, _fd(f, X, make), rtol=1e-6, atol=1e-8)
    if oracle:
        np.testing.assert_allclose(compiled, _autograd(f, X, make()), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", list(CASES))
def test_the_stream_is_left_as_the_plain_call_leaves_it(name):
    f, make, _ = CASES[name]
    transform = srcgrad.value_and_grad(f, strict=True)
    for _ in range(2):                          # the first call, then the specialised code
        plain_rest, rest = make(), make()
        want = f(X.copy(), *plain_rest)
        want_state = _state(_stream(plain_rest))
        value, _ = transform(X, *rest)
        assert value == want
        assert _same_state(_state(_stream(rest)), want_state)


def test_globals_and_closures_draw_from_their_own_stream():
    stream_of_closure = closure_object.__closure__[0].cell_contents
    for f, stream in ((global_object, G), (closure_object, stream_of_closure)):
        start = stream.get_state()
        value, grad = srcgrad.value_and_grad(f, strict=True)(X)
        after = _state(stream)
        stream.set_state(start)
        assert value == f(X.copy()) and _same_state(_state(stream), after)
        stream.set_state(start)
        np.testing.assert_allclose(grad, eager_transform(f, "grad", [X], (0,), True),
                                   rtol=1e-12)
        assert _same_state(_state(stream), after)


def test_a_draw_printed_once_in_the_generated_source():
    transform = srcgrad.grad(nested_draws, strict=True)
    code = "\n".join(line for line in transform.source.splitlines()
                     if not line.strip().startswith("#"))        # not the comments
    assert code.count("'normal'") == 1 and code.count("'randn'") == 2
    assert code.count("'rand'") == 3 and "rs.rand(" not in code and "rs.normal(" not in code


# ----------------------------------------------------------------------- refusals
def normal_of_wrt(mu, rs):
    return np.sum(rs.normal(mu, 1.0, size=3) ** 2)


def draw_in_loop_of_wrt(x, rs):
    s = 0.0
    for _ in range(2):
        s = s + np.sum(rs.normal(x, 1.0))
    return s


def _draw_of(rs, scale):
    return rs.normal(0.0, scale)


def draw_in_helper_of_wrt(x, rs):
    return np.sum(_draw_of(rs, np.exp(x)) * x)


def shuffled(x, rs):
    y = x.copy()
    rs.shuffle(y)
    return np.sum(y ** 2)


def into_buffer(x, rng):
    buf = np.empty(3)
    rng.random(out=buf)
    return np.sum(x * buf)


@pytest.mark.parametrize("f, line_of", [
    (normal_of_wrt, "rs.normal(mu"), (draw_in_loop_of_wrt, "rs.normal(x"),
    (draw_in_helper_of_wrt, "rs.normal(0.0, scale)"), (shuffled, "rs.shuffle(y)"),
    (into_buffer, "rng.random(out=buf)")])
def test_refused_with_file_and_line(f, line_of):
    rng = np.random.default_rng(1) if f is into_buffer else np.random.RandomState(1)
    x = np.array([0.3, 0.1, 0.2])
    with pytest.raises(CompileError) as info:
        srcgrad.grad(f, strict=True)(x, rng)
    assert "test_randomness.py" in str(info.value)
    assert line_of in str(info.value)


def test_a_value_not_differentiated_may_set_a_draw():
    def f(x, rs, mu):
        return np.sum(x * rs.normal(mu, 2.0, size=3))
    got = srcgrad.grad(f, strict=True)(X, np.random.RandomState(3), 0.5)
    np.testing.assert_allclose(got, np.random.RandomState(3).normal(0.5, 2.0, size=3))


def draws_from_other(x, rs, other):
    a = rs.randn(3)
    b = other.randn(3)
    return np.sum(np.sin(x * a) * b) + np.sum(x * rs.rand(3))


def _other():
    return types.SimpleNamespace(randn=np.random.RandomState(9).randn)


def test_an_object_that_is_no_generator_runs_eagerly_with_the_same_draws():
    rs, plain_rs = np.random.RandomState(5), np.random.RandomState(5)
    want = draws_from_other(X.copy(), plain_rs, _other())
    with pytest.raises(CompileError, match="SimpleNamespace"):
        srcgrad.grad(draws_from_other, strict=True)(X, np.random.RandomState(5), _other())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value, grad = srcgrad.value_and_grad(draws_from_other)(X, rs, _other())
    assert value == want                    # the compiled code's draws were put back
    assert _same_state(_state(rs), _state(plain_rs))
    np.testing.assert_allclose(grad, _fd(draws_from_other, X, lambda: (
        np.random.RandomState(5), _other())), rtol=1e-6)


# ------------------------------------------------------------- transforms of several passes
def _plain_hessian_autograd(f, x, make):
    oracle = types.FunctionType(f.__code__, dict(f.__globals__, np=anp), f.__name__,
                                f.__defaults__, f.__closure__)
    return autograd.hessian(oracle)(x, *make())


@pytest.mark.parametrize("name", ["reparameterised", "dropout", "generator_draws"])
@pytest.mark.parametrize("how", ["hessian", "jacfwd", "jacrev"])
def test_every_pass_sees_the_draws_of_one_call(name, how):
    f, make, _ = CASES[name]
    rest, plain_rest = make(), make()
    f(X.copy(), *plain_rest)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if how == "hessian":
            got = srcgrad.hessian(f)(X, *rest)
            want = _plain_hessian_autograd(f, X, make)
        else:
            got = getattr(srcgrad, how)(f)(X, *rest)     # a scalar's Jacobian: its gradient
            want = _autograd(f, X, make())
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)
    assert _same_state(_state(_stream(rest)), _state(_stream(plain_rest)))


def test_jvp_draws_once():
    rs, plain_rs = np.random.RandomState(4), np.random.RandomState(4)
    want = reparameterised(X.copy(), plain_rs)
    t = np.array([1.0, 0.5, -2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value, tangent = srcgrad.jvp(reparameterised_of_x(rs), (X,), (t,))
    assert value == want and _same_state(_state(rs), _state(plain_rs))
    np.testing.assert_allclose(tangent, _autograd(reparameterised, X, (
        np.random.RandomState(4),)) @ t, rtol=1e-12)


def reparameterised_of_x(rs):
    def f(x):
        return reparameterised(x, rs)
    return f


def test_jvp_of_grad_and_grad_of_grad_see_one_call_s_draws():
    t = np.array([1.0, 0.5, -2.0])
    hess = _plain_hessian_autograd(reparameterised, X, lambda: (np.random.RandomState(7),))
    gradient = _autograd(reparameterised, X, (np.random.RandomState(7),))
    plain = np.random.RandomState(7)
    reparameterised(X.copy(), plain)
    rs = np.random.RandomState(7)
    _, tangent = srcgrad.jvp(srcgrad.grad(reparameterised), (X, rs), (t, None))
    np.testing.assert_allclose(tangent, hess @ t, rtol=1e-10)
    assert _same_state(_state(rs), _state(plain))
    rs = np.random.RandomState(7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = srcgrad.grad(lambda x: np.sum(srcgrad.grad(reparameterised)(x, rs) ** 2))(X)
    np.testing.assert_allclose(got, 2 * hess @ gradient, rtol=1e-10)
    assert _same_state(_state(rs), _state(plain))


def _noisy_sine(x, rs):
    eps = rs.randn(*x.shape)
    return np.sin(x + np.exp(0.5 * x) * eps)


def test_vjp_of_every_argument_and_a_backward_pass_that_fails():
    """``vjp`` differentiates every argument, the generator too (it gets no gradient); when
    the backward pass fails the eager rerun sees the draws of the forward call."""
    from srcgrad.transforms.grad import Transform
    cotangent = np.array([1.0, -0.5, 2.0])
    want = autograd.make_vjp(types.FunctionType(_noisy_sine.__code__, dict(
        _noisy_sine.__globals__, np=anp)))(X, np.random.RandomState(7))[0](cotangent)
    plain = np.random.RandomState(7)
    _noisy_sine(X.copy(), plain)
    rs = np.random.RandomState(7)
    _, back = srcgrad.vjp(_noisy_sine, X, rs, strict=True)
    np.testing.assert_allclose(back(cotangent)[0], want, rtol=1e-12)
    transform = Transform(_noisy_sine, "vjp", (0, 1), strict=False)
    compiled = transform._fn

    def failing_backward(*args):
        value, _ = compiled(*args)

        def backward(g):
            raise AttributeError("internal")
        return value, backward
    transform._fn = failing_backward
    rs = np.random.RandomState(7)
    _, back = transform(X, rs)
    with pytest.warns(srcgrad.FallbackWarning, match="AttributeError"):
        got = back(cotangent)[0]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert _same_state(_state(rs), _state(plain))


@pytest.mark.parametrize("backend", ["numba", "dask"])
def test_the_other_backends_draw_as_numpy_does(backend):
    """NumPy's draws run as plain Python in every backend's code (Dask: when the graph is
    built, so computing it later draws nothing more)."""
    pytest.importorskip(backend)
    plain = np.random.RandomState(3)
    want_value = nested_draws(X.copy(), plain)
    want_grad = eager_transform(nested_draws, "grad", [X, np.random.RandomState(3)], (0,), True)
    rs = np.random.RandomState(3)
    x = X
    if backend == "dask":
        import dask.array as da
        x = da.from_array(X, chunks=3)
    value, grad = srcgrad.value_and_grad(nested_draws, backend=backend, strict=True)(x, rs)
    if backend == "dask":
        import dask
        value, grad = dask.compute(value, grad)
    assert _same_state(_state(rs), _state(plain))
    np.testing.assert_allclose(value, want_value, rtol=1e-12)
    np.testing.assert_allclose(grad, want_grad, rtol=1e-12)


# ------------------------------------------------ a draw in a condition, under a Hessian
GLOBAL_RNG = np.random.default_rng(0)


def draw_in_if(x, rng):
    if rng.random() < 0.5:
        return np.sum(x ** 3)
    return np.sum(np.exp(x))


def normal_in_if(x, rng):
    if rng.normal() > 0.0:
        return np.sum(x ** 3)
    return np.sum(np.exp(x))


def draw_in_and(x, rng):
    if x[0] > 0 and rng.random() < 0.5:           # drawn only when x[0] > 0
        return np.sum(x ** 3)
    return np.sum(np.exp(x))


def draw_in_ternary(x, rng):
    return np.sum(x ** 3) if rng.random() < 0.5 else np.sum(np.exp(x))


def draw_in_while(x, rng):
    while rng.random() < 0.7:
        x = x * 1.1
    return np.sum(x ** 3)


def global_draw_in_if(x, rng):
    if GLOBAL_RNG.random() < 0.5:
        return np.sum(x ** 3)
    return np.sum(np.exp(x))


def _second_differences(f, x, make, eps=1e-4):
    """Central differences of central differences, each evaluation with the same draws."""
    h = np.zeros((x.size, x.size))
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = eps
        h[:, i] = (_fd(f, x + e, make, eps) - _fd(f, x - e, make, eps)) / (2 * eps)
    return h


@pytest.mark.parametrize("f", [draw_in_if, normal_in_if, draw_in_and, draw_in_ternary,
                               draw_in_while, global_draw_in_if])
@pytest.mark.parametrize("seed", [0, 1, 3])
@pytest.mark.parametrize("strict", [True, False])
def test_a_hessian_with_a_draw_in_a_condition_sees_one_call_s_draws(f, seed, strict):
    global GLOBAL_RNG
    x = np.array([0.3, -1.2, 0.8]) if seed != 1 else np.array([-0.3, -1.2, 0.8])
    rng = np.random.default_rng(seed)
    GLOBAL_RNG = np.random.default_rng(seed + 10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = srcgrad.hessian(f, strict=strict)(x, rng)
    after, global_after = _state(rng), _state(GLOBAL_RNG)
    GLOBAL_RNG = np.random.default_rng(seed + 10)
    plain = np.random.default_rng(seed)
    f(x.copy(), plain)                                 # the stream ends where one call leaves it
    assert _same_state(after, _state(plain))
    assert _same_state(global_after, _state(GLOBAL_RNG))

    def fresh():
        global GLOBAL_RNG
        GLOBAL_RNG = np.random.default_rng(seed + 10)
        return (np.random.default_rng(seed),)
    want = _second_differences(f, x, fresh)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    rest = fresh()                                     # the global reset before it is read
    oracle = types.FunctionType(f.__code__, dict(f.__globals__, np=anp), f.__name__)
    np.testing.assert_allclose(got, autograd.hessian(oracle)(x, *rest), rtol=1e-9,
                               atol=1e-12)


def test_a_draw_in_a_condition_is_drawn_through_the_helper():
    source = srcgrad.grad(draw_in_if, strict=True).source
    code = "\n".join(line for line in source.splitlines()
                     if not line.strip().startswith("#"))        # not the comments
    assert "rng.random()" not in code and code.count("'random'") == 1


# -------------------------------------------------- a draw written inside a subscript
def choice_p_inline(x, g):
    return np.sum(x[g.choice(3, size=5, p=np.exp(x) / np.sum(np.exp(x)))])


def choice_p_state(x, rs):
    p = np.exp(x) / np.sum(np.exp(x))
    return np.sum(x[rs.choice(3, size=5, p=p)])


def choice_p_global(x, seed):
    p = np.exp(x) / np.sum(np.exp(x))
    return np.sum(x[np.random.choice(3, size=5, p=p)])


def argmax_of_normal(x, g):
    return x[np.argmax(g.normal(loc=x))] * 2


def choice_p_static(x, g):
    return np.sum(x[g.choice(3, size=5, p=np.array([0.2, 0.3, 0.5]))] ** 2)


@pytest.mark.parametrize("f, make, line_of", [
    (choice_p_inline, lambda: np.random.default_rng(0), "g.choice(3, size=5, p=np.exp(x)"),
    (choice_p_state, lambda: np.random.RandomState(0), "rs.choice(3, size=5, p=p)"),
    (choice_p_global, lambda: 0, "np.random.choice(3, size=5, p=p)"),
    (argmax_of_normal, lambda: np.random.default_rng(0), "g.normal(loc=x)")])
def test_a_draw_in_a_subscript_reading_a_differentiated_value_is_refused(f, make, line_of):
    x = np.array([0.3, -1.2, 0.8])
    with pytest.raises(CompileError) as info:
        srcgrad.grad(f, strict=True)(x, make())
    assert "test_randomness.py" in str(info.value) and line_of in str(info.value)
    assert "carries a gradient" in str(info.value)
    if f is argmax_of_normal:
        with pytest.raises(CompileError):              # nor does the eager engine answer
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                srcgrad.grad(f)(x, make())
        return
    state = np.random.get_state()      # the eager engine answers: the indices drawn from
    with warnings.catch_warnings():    # p carry no derivative, so only x[idx] counts
        warnings.simplefilter("ignore")
        got = srcgrad.grad(f)(x, make())
    np.random.set_state(state)
    stream = np.random if f is choice_p_global else make()
    idx = stream.choice(3, size=5, p=np.exp(x) / np.sum(np.exp(x)))
    np.testing.assert_allclose(got, np.bincount(idx, minlength=3), rtol=1e-12)


def test_a_draw_in_a_subscript_not_reading_one_compiles_and_draws_once():
    x = np.array([0.3, -1.2, 0.8])
    g, plain = np.random.default_rng(2), np.random.default_rng(2)
    got = srcgrad.grad(choice_p_static, strict=True)(x, g)
    idx = plain.choice(3, size=5, p=np.array([0.2, 0.3, 0.5]))
    assert _same_state(_state(g), _state(plain))
    want = np.zeros(3)
    np.add.at(want, idx, 2 * x[idx])
    np.testing.assert_allclose(got, want, rtol=1e-12)
    fallback = eager_transform(choice_p_static, "grad", [x, np.random.default_rng(2)], (0,),
                               False)[0]
    np.testing.assert_allclose(got, fallback, rtol=1e-12)
    np.testing.assert_allclose(got, _autograd(choice_p_static, x, (np.random.default_rng(2),)),
                               rtol=1e-12)
