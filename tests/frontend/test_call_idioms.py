"""Functions as values and call idioms: ``f(*args)``, ``g(**kw)``, ``[*xs, y]``, ``zip(*pairs)``,
callbacks passed to helpers or to the function differentiated, ``map``/``functools.partial``/
``functools.reduce``, closures returned or defined in loops.  Each compiles strict and equals
the eager engine, central finite differences and HIPS autograd; what cannot be spelled out when
compiling is refused with a CompileError naming file and line."""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest
from compiled_helpers import define
from conftest import numerical_grad

import srcgrad
from srcgrad.transforms import pytree
from srcgrad.transforms.fallback import eager_transform

HELPERS = """
def relu(v):
    return np.maximum(v, 0.0)


def rhs(y, t, a, b):
    return -a * y + b * np.sin(t)


def step(f, y, t, dt, *args):
    k1 = f(y, t, *args)
    k2 = f(y + dt * k1, t + dt, *args)
    return y + dt / 2 * (k1 + k2)


def integrate(f, y0, ts, *args):
    y = y0
    for i in range(len(ts) - 1):
        y = step(f, y, ts[i], ts[i + 1] - ts[i], *args)
    return y


def affine(x, g, b=0.0):
    return g * x + b


def layer(x, W, act=np.tanh):
    return act(x @ W)


def apply_n(g, x, n):
    for i in range(n):
        x = g(x)
    return x


def dense(x, W, activation):
    return activation(x @ W)


def make_affine(W, b):
    def apply(x):
        return x @ W + b
    return apply


def weighted(x, w=np.array([1.0, 2.0, 3.0])):
    return np.sum(x * w)


def pair(x):
    return x, 2.0 * x
"""

R = np.random.RandomState(3)
X3 = R.uniform(0.2, 1.2, 3)
M = R.uniform(-1, 1, (4, 3))
W33 = R.uniform(-1, 1, (3, 3))

CASES = {
    "f(*args) of a tuple literal": ("""
        def f(x):
            args = (x, 3.0)
            return np.sum(np.power(*args))
        """, (X3,), 0),
    "f(*xs) and [*xs, y] of a list literal": ("""
        def f(x):
            xs = [x, 2.0 * x]
            return np.sum(np.stack([*xs, np.sin(x)])) + np.sum(np.multiply(*xs))
        """, (X3,), 0),
    "f(*helper()) of a helper's tuple, after an argument computed first": ("""
        def f(x):
            return np.sum(np.where(np.sin(x) > 0.3, *pair(x))) + np.sum(np.add(*pair(x)))
        """, (X3,), 0),
    "*args handed on through a loop (RK2 of a callback)": ("""
        def f(theta, y0, ts):
            a, b = theta
            return np.sum(integrate(rhs, y0, ts, a, b) ** 2)
        """, (np.array([0.7, 1.3]), X3, np.linspace(0.0, 0.5, 6)), 0),
    "**kw of a dict argument and of a dict literal": ("""
        def f(p, x):
            opts = {"b": 1.0}
            return np.sum(affine(x, **p["ln"], **opts) ** 2)
        """, ({"ln": {"g": X3 * 2.0}}, X3), 0),
    "zip(*pairs) of a list of tuples, starred unpacking of the result": ("""
        def f(params, x):
            Ws, bs = zip(*params)
            first, *rest = Ws
            h = x @ first + bs[0]
            for W, b in zip(rest, bs[1:]):
                h = np.tanh(h) @ W + b
            for W, b in zip(*[Ws, bs]):
                h = h + np.sum(W) * b[0]
            for W, b in zip(*params):
                h = h * np.sum(b)
            return np.sum(h ** 2)
        """, ([(W33, X3), (W33.T.copy(), X3 * 0.5)], M), 0),
    "a user function, a ufunc, a default and a lambda passed to a helper": ("""
        def f(W, x):
            return (np.sum(layer(x, W, relu)) + np.sum(layer(x, W)) +
                    np.sum(layer(x, W, np.sin)) + np.sum(layer(x, W, lambda z: z ** 2)))
        """, (W33, M), 0),
    "a closure over the caller's variable passed to a helper's loop": ("""
        def f(x, s):
            def g(v):
                return np.tanh(v * s)
            return np.sum(apply_n(g, x, 3))
        """, (X3, X3[::-1].copy()), (0, 1)),
    "map, list(map), sum(map), partial and reduce": ("""
        def f(Ws, x):
            layers = list(map(lambda W: functools.partial(dense, W=W, activation=np.tanh), Ws))
            h = functools.reduce(lambda acc, lay: lay(acc), layers, x)
            penalties = map(lambda W: np.sum(W ** 2), Ws)
            return np.sum(h ** 2) + 0.1 * sum(penalties)
        """, ([W33, W33 * 0.5], M), 0),
    "a function made by a helper, and one composed by reduce": ("""
        def f(W, b, x):
            net = make_affine(W, b)
            compose = functools.reduce(lambda f1, f2: lambda v: f2(f1(v)), [net, np.tanh],
                                       lambda v: v)
            return np.sum(compose(x) ** 2)
        """, (W33, X3, M), (0, 1)),
    "a nested function defined in a loop": ("""
        def f(x):
            for i in range(2):
                def g(v):
                    return v * (i + 1.5)
                x = g(x)
            return np.sum(x ** 2)
        """, (X3,), 0),
    "a closure over a name assigned again after it": ("""
        def f(x):
            c = 2.0
            def g(v):
                return v * c
            c = x * 3.0
            return np.sum(g(x))
        """, (X3,), 0),
    "a closure reading a name a loop carries (late binding)": ("""
        def f(x):
            c = 1.0
            def g(v):
                return v * c
            tot = 0.0
            for i in range(3):
                c = c + x
                tot = tot + g(x)
            for v in map(np.sin, [x, 2.0 * x]):
                tot = tot + v
            return np.sum(tot)
        """, (X3,), 0),
    "a lambda made by a lambda reads the enclosing name when called": ("""
        def f(x):
            a = 1.0
            g = (lambda: lambda v: v * a)()
            a = x * 2.0
            return np.sum(g(x))
        """, (X3,), 0),
    "a helper with an array default": ("""
        def f(x):
            return weighted(x) + weighted(x, w=x)
        """, (X3,), 0),
}


def _namespace(numpy):
    ns = {"np": numpy, "functools": functools}
    define(HELPERS, ns)                       # the helpers, readable as a file's
    return ns


def _leaves_fd(fn, args, k):
    """Central differences with respect to every leaf of argument ``k`` (a pytree)."""
    leaves, structure = pytree.flatten(args[k])
    out = []
    for j in range(len(leaves)):
        def g(x, j=j):
            new = [leaf.copy() for leaf in leaves]
            new[j] = x
            values = list(args)
            values[k] = pytree.unflatten(structure, new)
            return float(fn(*values))
        out.append(numerical_grad(g, [leaves[j].copy()], 0))
    return out


def _check(source: str, args: tuple, wrt):
    fn = define(source, _namespace(np))
    many = isinstance(wrt, tuple)
    positions = wrt if many else (wrt,)
    with warnings.catch_warnings():
        warnings.simplefilter("error", srcgrad.FallbackWarning)
        got = srcgrad.grad(fn, wrt=wrt, strict=True)(*args)
    got = got if many else (got,)
    eager = eager_transform(fn, "grad", list(args), positions, False)
    autograd = pytest.importorskip("autograd")
    import autograd.numpy as anp
    oracle = define(source, _namespace(anp))
    want = autograd.grad(oracle, wrt)(*args)
    want = want if many else (want,)
    for n, k in enumerate(positions):
        mine = pytree.flatten(got[n])[0]
        for a, b in zip(mine, pytree.flatten(eager[n])[0]):
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-11)
        for a, b in zip(mine, _leaves_fd(fn, args, k)):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)
        for a, b in zip(mine, pytree.flatten(want[n])[0]):
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("case", sorted(CASES))
def test_compiled_equals_eager_fd_and_autograd(case):
    source, args, wrt = CASES[case]
    _check(source, args, wrt)


# ---------------------------------------------------- functions passed to the transform
def _act(x, act):
    return np.sum(layer_fn(x, act) ** 2)


def layer_fn(x, act):
    return act(x * 2.0)


def _relu(v):
    return np.maximum(v, 0.0)


def _with_default(x, act=np.tanh):
    return np.sum(act(x))


def test_a_function_passed_to_the_transform_is_compiled_for_each_one():
    g = srcgrad.grad(_act, strict=True)
    before = len(g.sources)
    square = lambda v: v ** 2                                     # noqa: E731
    cube = lambda v: v ** 3                                       # noqa: E731
    for act in (np.sin, _relu, square, cube, np.sin):
        with warnings.catch_warnings():
            warnings.simplefilter("error", srcgrad.FallbackWarning)
            got = g(X3, act)
        eager = eager_transform(_act, "grad", [X3, act], (0,), True)
        np.testing.assert_allclose(got, eager, rtol=1e-9)
        np.testing.assert_allclose(got, numerical_grad(functools.partial(_act, act=act), [X3],
                                                       0), rtol=1e-5, atol=1e-7)
    assert len(g.sources) - before <= 4           # one build a function, np.sin's reused


SCALE = 2.0


def _scaled(v):
    return v * SCALE


def test_a_function_passed_is_built_again_when_its_globals_change():
    global SCALE
    g = srcgrad.grad(_act, strict=True)
    before = len(g.sources)
    try:
        np.testing.assert_allclose(g(X3, _scaled), 8 * 2.0 ** 2 * X3)   # d/dx (2 S x)^2
        SCALE = 3.0
        np.testing.assert_allclose(g(X3, _scaled), 8 * 3.0 ** 2 * X3)
        for _ in range(2):                        # a new lambda each time, one code: one build
            np.testing.assert_allclose(g(X3, lambda v: v * SCALE), 8 * 3.0 ** 2 * X3)
    finally:
        SCALE = 2.0
    assert len(g.sources) - before == 3         # _scaled twice, the lambdas once


def test_another_function_for_a_default_is_compiled_too():
    g = srcgrad.grad(_with_default, strict=True)
    np.testing.assert_allclose(g(X3), 1 - np.tanh(X3) ** 2)
    np.testing.assert_allclose(g(X3, np.sin), np.cos(X3))
    np.testing.assert_allclose(g(X3, act=_relu), np.ones(3))
    np.testing.assert_allclose(g(X3), 1 - np.tanh(X3) ** 2)


def test_autograd_agrees_on_a_function_passed():
    autograd = pytest.importorskip("autograd")
    import autograd.numpy as anp
    got = srcgrad.grad(_act, strict=True)(X3, np.sin)
    want = autograd.grad(lambda x: anp.sum(anp.sin(x * 2.0) ** 2))(X3)
    np.testing.assert_allclose(got, want, rtol=1e-9)


def _mapped(x, act):
    return np.sum(sum(map(act, [x, x * 2.0])) ** 2)


def _reduced(x, combine):
    return np.sum(functools.reduce(combine, [x, np.sin(x), 0.5]))


def _plus_product(u, v):
    return u + u * v


def test_map_and_reduce_of_a_function_passed_are_built_for_it():
    """``map(act, xs)`` where ``act`` is an argument: built at the call, as ``act(x)`` is."""
    for fn, f in ((_mapped, np.tanh), (_mapped, _relu), (_reduced, _plus_product)):
        with warnings.catch_warnings():
            warnings.simplefilter("error", srcgrad.FallbackWarning)
            got = srcgrad.grad(fn, strict=True)(X3, f)
        eager = eager_transform(fn, "grad", [X3, f], (0,), True)
        np.testing.assert_allclose(got, eager, rtol=1e-9)
        np.testing.assert_allclose(got, numerical_grad(functools.partial(fn, **{
            fn.__code__.co_varnames[1]: f}), [X3], 0), rtol=1e-5, atol=1e-7)
    autograd = pytest.importorskip("autograd")
    import autograd.numpy as anp
    want = autograd.grad(lambda x: anp.sum((anp.tanh(x) + anp.tanh(x * 2.0)) ** 2))(X3)
    np.testing.assert_allclose(srcgrad.grad(_mapped, strict=True)(X3, np.tanh), want,
                               rtol=1e-9)


# ------------------------------------------------------------------------------ refused
REFUSED = {
    "*xs of a list built in a loop": ("""
        def f(x):
            ys = []
            for i in range(2):
                ys.append(x * (i + 1.0))
            return np.sum(np.add(*ys))
        """, "known length", True),
    "a map object read twice": ("""
        def f(x):
            m = map(np.sin, [x, x])
            a = sum(m)
            b = sum(m)
            return np.sum(a + b)
        """, "map or zip object", True),
    "a map object read later than the next statement": ("""
        def f(x):
            m = map(np.sin, [x, 2.0 * x])
            y = x * 2.0
            return np.sum(sum(m) * y)
        """, "map or zip object", True),
    "a map object handed to a function (which may iterate it twice)": ("""
        def f(x):
            return np.sum(twice(map(np.sin, [x, x])))

        def twice(it):
            return sum(it) + sum(it)
        """, "consumed at once", True),
    "a function passed out and back reading a name assigned again": ("""
        def f(x):
            a = 1.0
            g = same(lambda v: v * a)
            a = 2.0
            return np.sum(g(x))

        def same(fn):
            return fn
        """, "assigned again after it", True),
    "**d of a dict with keys that are not strings": ("""
        def f(x):
            d = {1: x}
            return np.sum(affine(x, **d))
        """, "string keys", False),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_refused_naming_file_and_line(case):
    source, message, python_runs_it = REFUSED[case]
    fn = define(source, _namespace(np))
    with pytest.raises(srcgrad.CompileError, match=message) as info:
        srcgrad.grad(fn, strict=True)(X3)
    assert "<test-source-" in str(info.value) and "line" in str(info.value)
    if not python_runs_it:                        # Python raises: nothing to differentiate
        with pytest.raises(TypeError):
            fn(X3)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = srcgrad.grad(fn)(X3)                # the eager engine answers in default mode
    np.testing.assert_allclose(got, numerical_grad(fn, [X3.copy()], 0), rtol=1e-5, atol=1e-7)


def _spreads_its_argument(x):
    return np.sum(np.add(*x))


def _calls_its_argument(x, act):
    return np.sum(act(x))


def test_spelling_out_an_array_or_calling_an_array_is_refused():
    with pytest.raises(srcgrad.CompileError, match=r"\*x"):
        srcgrad.grad(_spreads_its_argument, strict=True)(M)
    with pytest.raises(srcgrad.CompileError, match="functions it can see"):
        srcgrad.grad(_calls_its_argument, strict=True)(X3, X3)
