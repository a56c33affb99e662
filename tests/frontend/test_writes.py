"""Writes in place: through views and second names, into pytree leaves, by calls, and by
fancy indices with repeats.  Each program is compiled exactly (strict: its value equals
NumPy's, its gradient equals finite differences, the caller's arrays are untouched) or refused
with a CompileError pointing at the user's line; the eager fallback never changes the
caller's arrays either."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from compiled_helpers import define
from conftest import numerical_grad

import srcgrad

EXACT = {
    "write through a slice view": ("""
        def f(x):
            y = x * 2.0
            r = y[0:2]
            r[0] = 0.0
            return np.sum(y * x)
        """, [(3,)]),
    "write through a view of a view and a transpose": ("""
        def f(x):
            y = x * 1.0
            t = y.T
            r = t[1:, :]
            r[0, 1] = np.sin(x[0, 0])
            return np.sum(y ** 2) + np.sum(t * r[0])
        """, [(3, 3)]),
    "write into the base shows through a live view": ("""
        def f(x):
            y = x * 1.0
            r = y[1:3]
            y[1] = 5.0 * x[0]
            return np.sum(r * x[:2])
        """, [(4,)]),
    "second name sees a subscript write": ("""
        def f(x):
            y = x * 1.0
            z = y
            z[0] = x[1] ** 2
            return np.sum(y * z)
        """, [(3,)]),
    "row of a matrix written through its row view": ("""
        def f(x):
            Y = x * 1.0
            row = Y[0]
            row[1] = 3.0 * x[1, 1]
            return np.sum(Y * x)
        """, [(2, 3)]),
    "write into a pytree leaf is seen through the tree": ("""
        def f(p):
            a = p["a"]
            a[:, 1] *= 2.0
            return np.sum(p["a"] ** 2) + np.sum(a * p["b"])
        """, None),
    "common writes stay compiled": ("""
        def f(x, w):
            y = x.copy()
            y[0] = 1.0
            z = np.zeros(3)
            for i in range(3):
                z[i] = np.sum(x[: i + 1])
            u = x * 1.0
            u[1] += w[0]
            x = x + 1.0
            s = 0.0
            for i in range(2):
                s += np.sum(w * i)
            acc = x * w
            acc += 1.0
            return np.sum(y * z * u) + s + np.sum(acc)
        """, [(3,), (3,)]),
    "a view by ellipsis, a tuple and nested subscripts see the write": ("""
        def f(x):
            y = x * 1.0
            r = y[...]
            t = (y, 2.0)
            r[1] = 0.0
            y[0:2][0] = x[2] ** 2
            t[0][2] = np.sin(x[0])
            return np.sum(r * x) + np.sum(t[0]) + np.sum(y)
        """, [(4,)]),
    "write into the base shows through a live transpose": ("""
        def f(x):
            y = np.outer(x, x)
            t = y.T
            y[0, 1] = x[2] * 3.0
            return np.sum(t * np.arange(16.0).reshape(4, 4))
        """, [(4,)]),
    "a pytree leaf written by a nested subscript": ("""
        def f(p):
            p["a"][0, 1] = 3.0 * p["b"][1, 2]
            row = p["a"][1]
            row[2] = 0.0
            return np.sum(p["a"] * p["a"]) + np.sum(row)
        """, None),
    "writes in a while loop": ("""
        def f(x):
            y = x * 1.0
            k = 0
            while k < 3:
                y[k] = y[k + 1] * x[k]
                k += 1
            return np.sum(y)
        """, [(4,)]),
    "duplicate fancy writes: last wins": ("""
        def f(w, v):
            w = w * 1.0
            w[[1, 1]] += 2.0 * v[0]
            w[np.array([0, 2, 0])] = v
            return np.sum(w * np.arange(1.0, 4.0))
        """, [(3,), (3,)]),
}

REFUSED = {
    "augmented assignment with a second name": ("""
        def f(a):
            acc = a * 1.0
            b = acc
            acc += 1.0
            return np.sum(b)
        """, 5),
    "augmented assignment on a row view": ("""
        def f(x):
            Y = x * 1.0
            row = Y[0]
            row *= 3.0
            return np.sum(Y)
        """, 5),
    "write into the base of a row that may be a scalar": ("""
        def f(x):
            y = x * 1.0
            s = y[0]
            y[0] = 5.0
            return s * np.sum(y)
        """, 5),
    "write through a reshape": ("""
        def f(x):
            y = x * 1.0
            r = y.reshape(2, 2)
            r[0, 0] = 1.0
            return np.sum(y)
        """, 5),
    "out= argument": ("""
        def f(x):
            y = np.zeros(3)
            np.multiply(x, 3.0, out=y)
            return np.sum(y)
        """, 4),
    "ufunc at": ("""
        def f(x):
            y = np.zeros(3)
            np.add.at(y, [0, 0], x[:2])
            return np.sum(y * x)
        """, 4),
    "copyto": ("""
        def f(x):
            np.copyto(x, 0.0)
            return np.sum(x)
        """, 3),
    "clip with out": ("""
        def f(x):
            y = np.clip(x, 0, 1.5, out=x)
            return np.sum(y)
        """, 3),
    "fill": ("""
        def f(x):
            x.fill(0.0)
            return np.sum(x)
        """, 3),
    "sort method": ("""
        def f(x):
            y = x * 1.0
            z = y.sort()
            return np.sum(y)
        """, 4),
    "write in a loop with an alias outside": ("""
        def f(x):
            y = x * 1.0
            b = y
            s = 0.0
            for i in range(3):
                y[i] = x[i] ** 2
                s = s + np.sum(b)
            return s
        """, 6),
    "loop hands the next iteration two names of one array": ("""
        def f(x):
            a = x * 1.0
            b = x * 2.0
            s = 0.0
            for i in range(3):
                a[i] = 0.0
                s = s + np.sum(b * x)
                b = a
            return s
        """, 6),
    "np.asarray is the array itself": ("""
        def f(x):
            y = x * 1.0
            r = np.asarray(y)
            r[1] = 0.0
            return np.sum(y * x)
        """, 5),
    "a helper returns its argument": ("""
        def f(x):
            y = x * 1.0
            z = ident(y)
            z[0] = 5.0
            return np.sum(y * x)

        def ident(z):
            return z
        """, 5),
    "a branch makes a second name": ("""
        def f(x):
            a = x * 1.0
            if np.sum(x) > 0:
                b = a
            else:
                b = a * 2.0
            a[0] = 5.0
            return np.sum(b * x)
        """, 8),
    "rows of a loop written in place": ("""
        def f(x):
            Y = np.outer(x, x)
            for row in Y:
                row[0] = 0.0
            return np.sum(Y)
        """, 4),
    "ufunc with a positional output": ("""
        def f(x):
            y = -x
            np.subtract(y, x, y)
            return np.sum(y)
        """, 4),
    "sum with out": ("""
        def f(x):
            y = np.zeros(())
            t = np.sum(x, out=y)
            return np.sum(x) + t
        """, 4),
    "clip method with out": ("""
        def f(x):
            y = x.clip(0, 1.5, out=x)
            return np.sum(y)
        """, 3),
    "put, place": ("""
        def f(x):
            y = x * 1.0
            np.put(y, [0], 5.0)
            np.place(y, y > 0.5, 0.0)
            return np.sum(y * x)
        """, 4),
    "a view read in a loop that writes its base": ("""
        def f(x):
            y = x * 1.0
            r = y[1:3]
            s = 0.0
            for i in range(2):
                y[i] = x[i] * 2.0
                s = s + np.sum(r)
            return s
        """, 6),
    "a second name of a sum, then +=": ("""
        def f(x):
            s = np.sum(x)
            t = s
            s += 1.0
            return s * t
        """, 5),
    "helper writes into its argument": ("""
        def f(x):
            y = x * 1.0
            s = g(y)
            return s + np.sum(y)

        def g(z):
            z[0] = 0.0
            return np.sum(z)
        """, 4),
}


def _pytree_args(rng):
    return [{"a": rng.uniform(0.2, 1.4, (2, 3)), "b": rng.uniform(0.2, 1.4, (2, 3))}]


def _flat(value):
    if isinstance(value, dict):
        return [value[k] for k in sorted(value)]
    return [value]


@pytest.mark.parametrize("case", sorted(EXACT))
def test_writes_compile_exactly(case):
    source, spec = EXACT[case]
    fn = define(source, {"np": np})
    rng = np.random.default_rng(3)
    args = _pytree_args(rng) if spec is None else [rng.uniform(0.2, 1.4, s) for s in spec]
    snapshot = [{k: v.copy() for k, v in a.items()} if isinstance(a, dict) else a.copy()
                for a in args]
    wrt = tuple(range(len(args)))
    value, got = srcgrad.value_and_grad(fn, wrt=wrt, strict=True)(*args)
    for a, b in zip(args, snapshot):                        # the caller's arrays: untouched
        for x, y in zip(_flat(a), _flat(b)):
            np.testing.assert_array_equal(x, y)

    def copies():
        return [{k: v.copy() for k, v in a.items()} if isinstance(a, dict) else a.copy()
                for a in args]
    np.testing.assert_allclose(value, fn(*copies()), rtol=1e-12)    # NumPy's value
    for k in wrt:
        for key, g in (sorted(got[k].items()) if isinstance(args[k], dict) else [(None, got[k])]):
            def f(leaf, k=k, key=key):
                values = copies()
                if key is None:
                    values[k] = leaf.copy()
                else:
                    values[k][key] = leaf.copy()
                return float(fn(*values))
            start = args[k] if key is None else args[k][key]
            fd = numerical_grad(f, [start.copy()], 0)
            np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_unfollowed_writes_are_refused_at_the_line(case):
    source, line = REFUSED[case]
    fn = define(source, {"np": np})
    with pytest.raises(srcgrad.CompileError) as info:
        srcgrad.grad(fn, strict=True)
    assert info.value.lineno == fn.__code__.co_firstlineno + line - 2, str(info.value)


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_the_fallback_never_changes_the_callers_arrays(case):
    source, _ = REFUSED[case]
    fn = define(source, {"np": np})
    x = np.array([0.3, 0.9, 1.7, 0.5]) if "reshape" in case else np.array([0.3, 0.9, 1.7])
    before = x.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = srcgrad.grad(fn)
    try:
        got = g(x)
    except (RuntimeError, TypeError, ValueError, srcgrad.CompileError):
        got = None                                 # refused at run time: never wrong
    np.testing.assert_array_equal(x, before)
    if got is not None:
        fd = numerical_grad(lambda a: float(fn(a.copy())), [x.copy()], 0)
        np.testing.assert_allclose(got, fd, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("case", sorted(EXACT))
def test_the_eager_engine_agrees_or_refuses(case):
    from srcgrad.transforms.fallback import eager_transform
    source, spec = EXACT[case]
    fn = define(source, {"np": np})
    rng = np.random.default_rng(3)
    args = _pytree_args(rng) if spec is None else [rng.uniform(0.2, 1.4, s) for s in spec]
    wrt = tuple(range(len(args)))
    compiled = srcgrad.grad(fn, wrt=wrt, strict=True)(*args)
    try:
        eager = eager_transform(fn, "grad", list(args), wrt, False)
    except (RuntimeError, ValueError):
        return                                   # refused: never a silent wrong gradient
    for c, e in zip(compiled, eager):
        for x, y in zip(_flat(c), _flat(e)):
            np.testing.assert_allclose(x, y, rtol=1e-9, atol=1e-11)


def test_repeated_indices_give_the_gradient_to_the_write_that_stays():
    fn = define("""
        def f(x, v, m):
            y = x * 1.0
            y[[2, 0, 2]] = v[:3]
            y[np.array([[1, 1], [3, 1]])] = v[3:7].reshape(2, 2)
            y[m] = v[7]
            y[1:3] = v[8]
            z = np.zeros((3, 2))
            z[[0, 0, 1], 1] += v[9]
            return np.sum(y * np.arange(1.0, 6.0)) + np.sum(z * np.arange(6.0).reshape(3, 2))
        """, {"np": np})
    rng = np.random.default_rng(5)
    x, v = rng.uniform(0.2, 1.4, 5), rng.uniform(0.2, 1.4, 10)
    m = np.array([False, False, False, True, True])
    got = srcgrad.grad(fn, wrt=(0, 1), strict=True)(x, v, m)
    for k in (0, 1):
        fd = numerical_grad(lambda *xs: float(fn(*xs, m)), [x.copy(), v.copy()], k)
        np.testing.assert_allclose(got[k], fd, rtol=1e-6, atol=1e-8)


EAGER = {
    "a sum is a scalar: += rebinds": ("""
        def f(x):
            s = np.sum(x)
            t = s
            s += 1.0
            return s * t
        """, True),
    "a float argument: += rebinds": ("""
        def f(x):
            t = x
            x += 1.0
            return x * t
        """, True),
    "an element is a scalar copy": ("""
        def f(x):
            y = x * 1.0
            e = y[0]
            e *= 3.0
            return np.sum(y) + e
        """, True),
    "a write through a reshape": ("""
        def f(x):
            y = x * 1.0
            r = y.reshape(2, 2)
            r[0, 0] = 1.0
            return np.sum(y * x)
        """, False),
    "np.asarray then +=": ("""
        def f(x):
            v = np.zeros_like(x)
            w = np.asarray(v)                # v itself, as in NumPy: the write shows in w
            v += np.sum(x)
            return np.sum(np.sin(w))
        """, True),
}


@pytest.mark.parametrize("case", sorted(EAGER))
def test_the_eager_engine_keeps_numpys_write_semantics_or_refuses(case):
    from srcgrad.transforms.fallback import eager_transform
    source, exact = EAGER[case]
    fn = define(source, {"np": np})
    x = 0.7 if "float argument" in case else np.array([0.3, 0.9, 1.7, 0.5])
    as_given = float if isinstance(x, float) else np.copy        # a float stays a float
    fd = numerical_grad(lambda a: float(fn(as_given(a))), [np.array(x, dtype=float)], 0)
    if exact:
        got = eager_transform(fn, "grad", [x], (0,), True)
        np.testing.assert_allclose(got, fd, rtol=1e-6, atol=1e-8)
    else:
        with pytest.raises(RuntimeError):
            eager_transform(fn, "grad", [x], (0,), True)


def test_the_eager_full_like_keeps_the_gradient_of_its_value():
    from srcgrad.transforms.fallback import eager_transform
    fn = define("""
        def f(x, s):
            return np.sum(np.full_like(x, s) * x)
        """, {"np": np})
    x, s = np.array([0.3, 0.9, 1.7]), 0.8
    got = eager_transform(fn, "grad", [x, s], (0, 1), False)
    np.testing.assert_allclose(got[0], np.full(3, s))
    np.testing.assert_allclose(got[1], np.sum(x))


CONSTANTS_WRITTEN_AFTER_USE = {
    "a constant written by a ufunc's out= after a product": """
        def f(x):
            c = np.full(4, 1.24)
            y = c * x
            np.sin(c, out=c)
            return np.sum(np.sin(y))
        """,
    "a constant scaled in place after a product": """
        def f(x):
            c = np.full(4, 1.24)
            y = c * x
            c *= 2.0
            return np.sum(np.sin(y))
        """,
    "a constant written by a subscript after np.dot": """
        def f(x):
            c = np.ones((4, 2)) * 0.5
            y = np.dot(x, c)
            c[0] = 3.0
            return np.sum(np.sin(y))
        """,
    "an index array written after the fancy read": """
        def f(x):
            idx = np.array([0, 2])
            y = x[idx]
            idx[0] = 1
            return np.sum(np.sin(y) * np.array([1.0, 2.0]))
        """,
    "a constant multiplied into an array in place, then written": """
        def f(x):
            c = np.full(4, 0.7)
            y = x * 1.0
            y *= c
            c += 1.0
            return np.sum(np.sin(y))
        """,
}


@pytest.mark.parametrize("case", sorted(CONSTANTS_WRITTEN_AFTER_USE))
def test_the_eager_engine_keeps_the_constants_it_read(case):
    """The eager engine reads a plain array (a constant of the function) in backward as it
    was when used, not as the function left it: NumPy writes into plain arrays are unseen."""
    from srcgrad.transforms.fallback import eager_transform
    fn = define(CONSTANTS_WRITTEN_AFTER_USE[case], {"np": np})
    x = np.array([0.3, 0.9, 1.7, 0.5])
    fd = numerical_grad(lambda a: float(fn(np.copy(a))), [x.copy()], 0)
    np.testing.assert_allclose(eager_transform(fn, "grad", [x], (0,), True), fd,
                               rtol=1e-6, atol=1e-8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_allclose(srcgrad.grad(fn, strict=False)(x), fd, rtol=1e-6,
                                   atol=1e-8)


def test_a_written_value_may_have_leading_ones():
    """``y[:] = v[None]``: NumPy drops a value's leading 1-dims; the gradient of ``v`` gets
    them back (both modes undo it centrally, as broadcasting)."""
    fn = define("""
        def f(x):
            y = x * 1.0
            y[:] = np.sin(x)[None]
            return np.sum(y * x)
        """, {"np": np})
    x = np.array([0.1, 0.5, 0.9])
    fd = numerical_grad(lambda a: float(fn(np.copy(a))), [x.copy()], 0)
    np.testing.assert_allclose(srcgrad.grad(fn, strict=True)(x), fd, rtol=1e-6, atol=1e-8)
    from srcgrad.transforms.fallback import eager_transform
    np.testing.assert_allclose(eager_transform(fn, "grad", [x.copy()], (0,), True), fd,
                               rtol=1e-6, atol=1e-8)


def _scaled_primitive():
    """A user primitive with a keyword parameter (made in the test: the rule table is global)."""
    @srcgrad.primitive
    def _scaled(x, *, k):
        return x * k
    srcgrad.defvjp(_scaled, lambda g, ans, x, k: g * k, nin=1)
    return _scaled


def test_the_eager_engine_refuses_a_gradient_into_a_parameter():
    """A primitive's keyword parameter that carries a gradient: the rule gives none back for
    a parameter, so the eager run refuses (it recursed without end), and the user gets a
    CompileError; a parameter without a gradient is a plain value."""
    scaled = _scaled_primitive()
    from srcgrad.transforms.fallback import eager_transform
    fn = define("""
        def f(y):
            return np.sum(scaled(y ** 2, k=y[0]))
        """, {"np": np, "scaled": scaled})
    plain = define("""
        def f(y):
            return np.sum(scaled(y * 2.0, k=np.sum(np.zeros_like(y)) + 0.5))
        """, {"np": np, "scaled": scaled})
    y = np.array([-0.7, 0.5, 0.2])
    with pytest.raises(TypeError, match="k= carries a gradient"):
        eager_transform(fn, "grad", [y], (0,), True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(srcgrad.CompileError):
            srcgrad.grad(fn, strict=False)(y)
    np.testing.assert_allclose(eager_transform(plain, "grad", [y], (0,), True), [1.0, 1.0, 1.0])


def test_np_clip_bounds_carry_gradients():
    """``np.clip(x, lo, hi)``: the gradient reaches whichever of x, lo, hi gives each value
    (x on a tie; hi where lo > hi, as NumPy gives hi there), unbroadcast to each shape."""
    fn = define("""
        def f(x, lo, hi):
            return np.sum(np.clip(x, lo, hi) ** 2)
        """, {"np": np})
    x = np.array([-1.0, 0.1, 1.0, 2.0, 3.0, 0.7])
    lo = np.array([0.0, 0.5, 0.5, 0.5, 0.5, 0.9])
    hi = np.array([2.0, 2.0, 2.0, 2.5, 2.5, 0.8])
    for args, wrt in [((x, lo, hi), (0, 1, 2)), ((x, lo, 2.2), (0, 1)), ((x, 0.3, hi), (0, 2))]:
        compiled = srcgrad.grad(fn, wrt=wrt, strict=True)(*args)
        eager = srcgrad.grad(fn, wrt=wrt)(*args)
        for k, c, e in zip(wrt, compiled, eager):
            fd = numerical_grad(lambda *a: float(fn(*a)), [np.asarray(a, float) for a in args], k)
            np.testing.assert_allclose(c, fd.reshape(np.shape(args[k])), atol=1e-6)
            np.testing.assert_allclose(e, c)


@pytest.mark.parametrize("unpack", ["y, y = y, y", "y, z = y, y", "z, y = y, y"])
def test_a_written_base_unpacked_twice_keeps_one_name(unpack):
    """After a write through a view, the base's new value is named for the user's name when
    it is first unpacked into it; the other items of the same tuple follow that name."""
    fn = define(f"""
        def f(x):
            y = x * 1.0
            v = y[0:2]
            v[0] *= 1.18
            {unpack}
            return np.sum(np.sin(v) * 1.41) + np.sum(np.sin(y) * 0.67)
        """, {"np": np})
    x = np.array([-0.7, 0.5, 0.2, 0.3])
    fd = numerical_grad(lambda a: float(fn(np.copy(a))), [x.copy()], 0)
    np.testing.assert_allclose(srcgrad.grad(fn, strict=True)(x), fd, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("strict", [True, False])
def test_arguments_that_share_memory_with_a_written_one_are_refused(strict):
    """``f(s, s)`` where ``f`` writes into its second argument: NumPy's value depends on the
    sharing, which neither the compiled code nor the eager run's private copies follow."""
    fn = define("""
        def f(x, z):
            z[0] = 7.0
            return np.sum(x ** 2)
        """, {"np": np})
    s = np.array([0.3, -1.2, 2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = srcgrad.grad(fn, strict=strict)
        with pytest.raises(srcgrad.CompileError, match="share memory"):
            g(s, s)
        with pytest.raises(srcgrad.CompileError, match="share memory"):
            g(s, s[1:])                                 # a view shares it too
        np.testing.assert_allclose(g(s, s.copy()), 2 * s)     # separate arrays: fine
    np.testing.assert_array_equal(s, [0.3, -1.2, 2.0])
