"""Valid code that users write, compiled strict: compiled == eager == finite differences, on
every path; or, where srcgrad does not model it exactly, a CompileError saying why ("valid code
refused"): early returns nested in branches, loops over pytrees of tuples
(``enumerate``, ``zip``, ``range(len(layers))``, sorted dict items), items of lists changed
in place, helpers taking and returning tuples, comprehensions, jumps, recursion."""

from __future__ import annotations

import numpy as np
import pytest
from compiled_helpers import define

import srcgrad
from srcgrad.transforms import pytree
from srcgrad.transforms.fallback import eager_transform

_rng = np.random.default_rng(7)


def A(*shape):
    return _rng.uniform(0.2, 1.4, shape)


def layers():
    return [(A(3, 3), A(3)), (A(3, 3), A(3))]


def _copy(tree):
    flat, structure = pytree.flatten(tree)
    return pytree.unflatten(structure, [v.copy() if isinstance(v, np.ndarray) else v
                                        for v in flat])


def _finite_differences(fn, args, i, eps=1e-6):
    flat, structure = pytree.flatten(args[i])
    out = []
    for j, leaf in enumerate(flat):
        g = np.zeros_like(leaf)
        for idx in np.ndindex(leaf.shape):
            values = []
            for sign in (1.0, -1.0):
                moved = [v.copy() for v in flat]
                moved[j][idx] += sign * eps
                call = [_copy(a) for a in args]
                call[i] = pytree.unflatten(structure, moved)
                values.append(float(fn(*call)))
            g[idx] = (values[0] - values[1]) / (2 * eps)
        out.append(g)
    return out


def check(fn, args):
    """Compiled (strict) == eager == finite differences for every argument holding arrays
    (pytrees leaf by leaf); the caller's arrays are never changed."""
    wrt = tuple(i for i, a in enumerate(args)
                if any(isinstance(v, np.ndarray) for v in pytree.flatten(a)[0]))
    before = [_copy(a) for a in args]
    got = srcgrad.grad(fn, wrt=wrt, strict=True)(*args)
    got = got if len(wrt) > 1 else (got,)
    for a, b in zip(args, before):
        for x, y in zip(pytree.flatten(a)[0], pytree.flatten(b)[0]):
            np.testing.assert_array_equal(x, y)
    eager = eager_transform(fn, "grad", [_copy(a) for a in args], wrt, False)
    for k, i in enumerate(wrt):
        mine, theirs = pytree.flatten(got[k])[0], pytree.flatten(eager[k])[0]
        numeric = _finite_differences(fn, args, i)
        assert len(mine) == len(numeric)
        for g, e, n in zip(mine, theirs, numeric):
            np.testing.assert_allclose(g, e, rtol=1e-9, atol=1e-11)
            np.testing.assert_allclose(g, n, rtol=1e-5, atol=1e-7)


# name: (source, a list of argument lists, each made afresh)
COMPILED = {
    "nested early return, then an assignment": ("""
        def f(x, flag):
            if flag > 0:
                if flag > 1:
                    return np.sum(x)
                y = x * 2
            else:
                y = x * 3
            return np.sum(y * y)
        """, lambda: [[A(3), 0], [A(3), 1], [A(3), 2]]),
    "early returns in elif, two names after": ("""
        def f(x, flag):
            if flag > 0:
                z = x * 1.5
                if flag > 2:
                    return np.sum(z)
                elif flag > 1:
                    return np.sum(z * z)
                y = z * 2
                w = y + 1
            else:
                y = x * 3
                w = y
            return np.sum(y * w)
        """, lambda: [[A(3), 0], [A(3), 1], [A(3), 2], [A(3), 3]]),
    "early return in a loop in a branch, a list after": ("""
        def f(x, n):
            if n > 0:
                for i in range(n):
                    x = np.sin(x)
                    if np.sum(x) < 0.5:
                        return np.sum(x)
                ys = []
                for i in range(2):
                    ys.append(x * i)
            else:
                ys = [x, x * 2]
            return np.sum(np.stack(ys))
        """, lambda: [[A(3), 0], [A(3), 2], [A(3) * 0.1, 2]]),
    "nested early return in a helper": ("""
        def h(x, flag):
            if flag > 0:
                if flag > 1:
                    return x * 2
                y = x * 3
            else:
                y = x * 4
            return np.sin(y)
        def f(x, flag):
            return np.sum(h(x, flag) * x)
        """, lambda: [[A(3), 0], [A(3), 1], [A(3), 2]]),
    "return and continue before a new name in a loop": ("""
        def f(x, n):
            acc = 0.0
            for i in range(n):
                if i == 1:
                    continue
                if i == 3:
                    return acc + np.sum(x)
                t = x * i
                acc = acc + np.sum(t * t)
            return acc
        """, lambda: [[A(3), 2], [A(3), 5]]),
    "enumerate with a tuple target over layers": ("""
        def f(layers, x):
            for i, (W, b) in enumerate(layers):
                x = np.tanh(W @ x + b) * (i + 1)
            for i, (W, b) in enumerate(layers, start=2):
                x = x + np.sum(W) * i
            return np.sum(x)
        """, lambda: [[layers(), A(3)]]),
    "range(len(layers)) indexing layers": ("""
        def f(layers, x):
            for i in range(len(layers)):
                W, b = layers[i]
                x = np.tanh(W @ x + b)
            for i in range(len(layers) - 1):
                x = x * layers[i + 1][1]
            return np.sum(x)
        """, lambda: [[layers(), A(3)]]),
    "zip, reversed and a comprehension over layers": ("""
        def f(layers, scales, x):
            for (W, b), s in zip(layers, scales):
                x = np.tanh(W @ x + b) * s
            for W, b in reversed(layers):
                x = np.tanh(W.T @ x + b)
            hs = [np.tanh(W @ x + b) for W, b in layers]
            return np.sum(np.stack(hs)) + sum(np.sum(W) for W, b in layers)
        """, lambda: [[layers(), [A(3), A(3)], A(3)]]),
    "starred unpacking of layers, in a helper": ("""
        def mlp(params, x):
            *hidden, last = params
            for W, b in hidden:
                x = np.maximum(W @ x + b, 0.0)
            W, b = last
            return W @ x + b
        def f(params, x):
            return np.sum(mlp(params, x) ** 2)
        """, lambda: [[layers(), A(3)]]),
    "a list of tuples built in the function": ("""
        def f(W1, b1, W2, b2, x):
            layers = [(W1, b1), (W2, b2)]
            for i in range(len(layers)):
                W, b = layers[i]
                x = np.tanh(W @ x + b)
            for i, (W, b) in enumerate(layers):
                x = x * (i + 1) + b
            return np.sum(x)
        """, lambda: [[A(3, 3), A(3), A(3, 3), A(3), A(3)]]),
    "sorted items and keys of a dict argument": ("""
        def f(d, p, x):
            out = []
            for k, v in sorted(d.items()):
                out.append(v * x)
            for name in sorted(p):
                W, b = p[name]
                x = np.tanh(W @ x + b)
            return np.sum(np.stack(out) * np.arange(2.0)[:, None]) + np.sum(x)
        """, lambda: [[{"b": A(3), "a": A(3)}, {"l2": (A(3, 3), A(3)),
                                              "l1": (A(3, 3), A(3))}, A(3)]]),
    "an item of a list changed in place": ("""
        def f(x, y):
            L = [x * 1.0, y * 2.0]
            L[1] += x
            L[-1] /= y + 1.0
            L[0] @= np.eye(3)
            M = [x, 0.0]
            M[0] *= y
            M[1] += np.sum(y)
            return np.sum(L[0] * L[1]) + np.sum(M[0]) * M[1]
        """, lambda: [[A(3), A(3)]]),
    "a helper adding tuples": ("""
        def add(p, q):
            return (p[0] + q[0], p[1] + q[1])
        def scale(p, s=2.0):
            return [p[0] * s, p[1] * s]
        def f(x, y):
            a, b = add((x, y), (y * 2, x * 3))
            t = scale(add((a, b), (x, x)), s=0.5)
            return np.sum(a * b) + np.sum(t[0] * t[1])
        """, lambda: [[A(3), A(3)]]),
    "a tuple read in a branch and a loop": ("""
        def f(x, y, c):
            t = (x * 2, y)
            if c > 0:
                z = t[0] * t[1]
            else:
                a, b = t
                z = a - b
            for i in range(2):
                a, b = t
                z = np.sin(z * a + b)
            return np.sum(z ** 2)
        """, lambda: [[A(3), A(3), 1], [A(3), A(3), -1]]),
    "zip of lists, comprehensions, sum of a generator": ("""
        def f(params, xs, x):
            acc = 0.0
            for p, v in zip(params, xs):
                acc = acc + np.sum(p * v)
            ys = [W @ x for W in params[2:]]
            acc = acc + sum(np.sum(W @ x * i) for i in range(2) for W in params[2:])
            return acc + np.sum(np.stack(ys) ** 2) + sum([np.sum(x ** k) for k in range(1, 4)
                                                          if k != 2])
        """, lambda: [[[A(3), A(3), A(3, 3), A(3, 3)], [A(3), A(3)], A(3)]]),
    "counters, break, continue, while": ("""
        def f(x):
            n = 0
            for i in range(5):
                if i == 3:
                    break
                if i == 1:
                    continue
                x = np.sin(x) + 1
                n += 1
            k = 0
            while True:
                x = np.sin(x) * 1.2
                k += 1
                if k >= 3:
                    break
            return np.sum(x) * n
        """, lambda: [[A(3)]]),
    "ternaries, keyword arguments, defaults, recursion": ("""
        def layer(x, w, scale=2.0, shift=0.5):
            return np.tanh(w * x * scale + shift)
        def rec(x, n):
            if n == 0:
                return x
            return rec(np.tanh(x) + x, n - 1) * 0.5
        def f(x, w, a):
            y = x if a > 1 else (x * 2 if a > 0 else x ** 2)
            return np.sum(layer(y, w, shift=0.1) + layer(x, w=w)) + np.sum(rec(x, 3))
        """, lambda: [[A(3), A(3), 2], [A(3), A(3), 0.5], [A(3), A(3), -1]]),
    "tuple-returning helper in a loop, copies written, appends": ("""
        def step(h, c, x):
            return np.tanh(h + x), c * 0.5 + h
        def f(x, y):
            h, c = x, x * 0
            out = []
            for t in range(3):
                h, c = step(h, c, x)
                out.append(h * t)
            z = x.copy()
            z[0] += y[1]
            return np.sum(h * c) + np.sum(np.stack(out)) + np.sum(sum(out)) + np.sum(z ** 2)
        """, lambda: [[A(3), A(3)]]),
}

# name: (source, arguments, what the CompileError says)
REFUSED = {
    "an item of a list changed in place, seen by another item": ("""
        def f(x):
            a = x * 2
            L = [a, a]
            L[0] += x
            return np.sum(L[0] * L[1])
        """, lambda: [A(3)], r"L\[0\] \+=.*the array that L\[1\] also names"),
    "an item of a tuple changed in place": ("""
        def f(x, y):
            T = (x * 1.0, y)
            T[0] += y
            return np.sum(T[0])
        """, lambda: [A(3), A(3)], "'T' is a tuple: Python raises TypeError"),
    "a tuple assigned in a branch": ("""
        def f(x, y, c):
            if c > 0:
                t = (x * 2, y)
            else:
                t = (y, x * 3)
            a, b = t
            return np.sum(a * b)
        """, lambda: [A(3), A(3), 1], "'t' is a tuple assigned in a branch"),
    "a tuple carried through a loop": ("""
        def f(x, y):
            state = (x, y)
            for i in range(3):
                h, c = state
                state = (np.tanh(h + c), c * 0.5 + h)
            return np.sum(state[0] * state[1])
        """, lambda: [A(3), A(3)], "'state' is a tuple carried through a loop"),
    "break in a loop over layers": ("""
        def f(layers, x):
            for W, b in layers:
                if np.sum(x) > 100.0:
                    break
                x = np.tanh(W @ x + b)
            return np.sum(x)
        """, lambda: [layers(), A(3)], "does not compile break, continue, return or else"),
}


@pytest.mark.parametrize("case", sorted(COMPILED))
def test_valid_code_compiles_exactly(case):
    source, argument_lists = COMPILED[case]
    fn = define(source, {"np": np}, name="f")
    for args in argument_lists():
        check(fn, args)


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_code_not_modelled_exactly_is_refused(case):
    source, args, message = REFUSED[case]
    fn = define(source, {"np": np}, name="f")
    with pytest.raises(srcgrad.CompileError, match=message):
        values = args()
        srcgrad.grad(fn, wrt=tuple(range(len(values))), strict=True)(*values)
