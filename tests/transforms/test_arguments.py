"""What a transform accepts as its function and arguments: Python floats
(the ``math`` specialisation computes what NumPy computes, or is not used), NumPy scalars,
subclasses, data of any kind, partials, methods, callable objects, ``*args``/``**kwargs``,
pytrees of lists, unknown backends, non-float arguments in ``wrt`` (TypeError naming them),
and rules given with ``srcgrad.defvjp`` in both modes."""

from __future__ import annotations

import datetime
import functools
import math
import warnings

import numpy as np
import pytest
from compiled_helpers import define
from conftest import numerical_grad

import srcgrad
from srcgrad.transforms.fallback import eager_transform

A = np.array([1.0, -2.0, 3.0])


def fd(f, x, eps=1e-6):
    """Central difference of a function of one Python float."""
    return (f(x + eps) - f(x - eps)) / (2 * eps)


def eager(f, *args, wrt=(0,)):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return eager_transform(f, "grad", list(args), wrt, True)


def quiet(g, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return g(*args)


# ---------------------------------------------------------------- Python floats
FLOAT_CASES = {
    "mean": ("def f(x):\n    return np.mean(x) * x\n", 3.5),
    "dot": ("def f(x):\n    return np.sum(np.dot(x, A))\n", 2.0),
    "sign": ("def f(x):\n    return np.sign(x) * x * x\n", -1.5),
    "elementwise": ("def f(x):\n    return np.sin(x) * np.exp(x) + x ** 3 / np.cosh(x)\n", 0.7),
    "math": ("def f(x):\n    return math.log(x) + math.sqrt(x) * math.atan(x)\n", 1.3),
    "branch": ("def f(x):\n    y = x * x\n    if y > 1.0:\n        y = np.tanh(y)\n"
               "    return y * x\n", 1.2),
    "floor": ("def f(x):\n    return np.floor(x) * x + np.ceil(x)\n", 2.5),
    "power": ("def f(x):\n    return np.abs(x) ** 1.5 + x ** 2\n", -0.8),
}


@pytest.mark.parametrize("name", sorted(FLOAT_CASES))
def test_python_float_gradient_matches_finite_differences_and_eager(name):
    source, x = FLOAT_CASES[name]
    f = define(source, {"np": np, "math": math, "A": A})
    g = srcgrad.grad(f)
    for _ in range(3):                    # the first call, then the specialisation
        result = g(x)
        assert type(result) is float
        assert result == pytest.approx(fd(f, x), rel=1e-5, abs=1e-8)
        if name != "math":                  # the eager engine cannot follow math.log
            assert result == pytest.approx(float(eager(f, x)), rel=1e-12)


def test_float_specialisation_is_used_only_for_scalar_code():
    scalar = srcgrad.grad(define("def f(x):\n    return np.sin(x) * x\n", {"np": np}))
    scalar(1.0)
    assert "math.sin" in scalar.sources["floats"]
    arrays = srcgrad.grad(FLOAT_CASES["dot"] and define(FLOAT_CASES["dot"][0],
                                                        {"np": np, "A": A}))
    assert arrays(2.0) == pytest.approx(float(np.sum(A)))
    assert "floats" not in arrays.sources           # an array constant: the NumPy code


@pytest.mark.parametrize("source, x, value", [
    ("def f(x):\n    return np.arccos(x)\n", 2.0, "nan"),
    ("def f(x):\n    return np.exp(x)\n", 1000.0, "inf"),
    ("def f(x):\n    return np.log(x)\n", 0.0, "inf"),
    ("def f(x):\n    return np.sqrt(x)\n", 0.0, "inf"),
    ("def f(x):\n    return np.sqrt(np.sin(x)) ** 0.5\n", -1.0, "nan"),
])
def test_python_floats_give_numpys_nan_and_inf(source, x, value):
    f = define(source, {"np": np})
    g = srcgrad.grad(f, strict=True)
    for _ in range(2):
        result = quiet(g, x)
        expected = float(eager(f, x))
        assert type(result) is float
        assert math.isnan(result) if value == "nan" else result == expected


def test_math_functions_raise_what_python_raises():
    f = define("def f(x):\n    return math.acos(x) * 2.0\n", {"math": math})
    g = srcgrad.grad(f)
    with pytest.raises(ValueError, match="math domain error"):
        g(2.0)
    h = srcgrad.grad(define("def h(x):\n    return math.exp(x)\n", {"math": math}))
    with pytest.raises(OverflowError):
        h(1000.0)
    assert h(1.0) == pytest.approx(math.e)


@pytest.mark.parametrize("kind", [np.float64, np.float32, np.float16])
def test_numpy_scalars_keep_their_type_call_after_call(kind):
    g = srcgrad.grad(lambda x: np.sum(x * x) * 3.0)
    for _ in range(3):
        result = g(kind(2.0))
        assert type(result) is kind and result == pytest.approx(12.0, rel=1e-3)


def test_ndarray_subclasses_and_memmaps_call_after_call(tmp_path):
    class Sub(np.ndarray):
        pass

    g = srcgrad.grad(lambda x: np.sum(np.sin(x) * x))
    mm = np.memmap(tmp_path / "m.dat", dtype=np.float64, mode="w+", shape=(3,))
    mm[:] = A
    expected = np.sin(A) + A * np.cos(A)
    for x in (mm, A, mm):
        np.testing.assert_allclose(g(x), expected)
        with pytest.raises(TypeError, match="Sub"):   # not known to keep plain semantics
            g(A.view(Sub))
    np.testing.assert_array_equal(mm, A)                       # never written


@pytest.mark.parametrize("data", [
    "hello", datetime.datetime(2020, 1, 1), np.array(["a", "bc"]),
    np.array(["2020-01-01"], dtype="datetime64[D]"), None, 3, (1, "x"),
    np.array([1, 2], dtype=np.int32), np.array([object(), 1], dtype=object)])
def test_data_arguments_may_be_anything(data):
    g = srcgrad.grad(lambda x, d: np.sum(x * x))
    for _ in range(3):
        np.testing.assert_allclose(g(A, data), 2 * A)


# ------------------------------------------------------------------ callables
def _f2(x, y):
    return np.sum(np.sin(x) * y)


class Model:
    scale = 3.0

    def __call__(self, x):
        return np.sum(x * x * x)

    def method(self, x):
        return np.sum(np.tanh(x))

    @classmethod
    def cmethod(cls, x):
        return np.sum(x * x)

    @staticmethod
    def smethod(x):
        return np.sum(np.exp(x))


@pytest.mark.parametrize("make, expected", [
    (lambda: Model(), 3 * A * A),
    (lambda: Model().method, 1 - np.tanh(A) ** 2),
    (lambda: Model.cmethod, 2 * A),
    (lambda: Model().cmethod, 2 * A),
    (lambda: Model.smethod, np.exp(A)),
])
def test_methods_and_callable_objects_compile(make, expected):
    g = srcgrad.grad(make(), strict=True)
    assert g.source is not None
    for _ in range(3):
        np.testing.assert_allclose(g(A), expected)
    np.testing.assert_allclose(srcgrad.value_and_grad(make())(A)[1], expected)


def test_partial_falls_back_cleanly_or_refuses_when_strict():
    p = functools.partial(_f2, y=A)
    with pytest.warns(srcgrad.FallbackWarning, match="functools.partial"):
        g = srcgrad.grad(p)
    np.testing.assert_allclose(g(A), np.cos(A) * A)
    np.testing.assert_allclose(g(A, y=2 * A), np.cos(A) * 2 * A)
    with pytest.raises(srcgrad.CompileError, match="functools.partial"):
        srcgrad.grad(p, strict=True)
    first = functools.partial(_f2, A)            # wrt=0 is then y; it compiles
    np.testing.assert_allclose(srcgrad.grad(first, strict=True)(2 * A), np.sin(A))


def test_varargs_and_kwargs_fall_back_and_give_the_right_gradient():
    def va(x, *rest):
        return np.sum(x * rest[0])

    def kw(x, **options):
        return np.sum(x * x) * options.get("scale", 1.0)

    gva = srcgrad.grad(va, strict=True)              # *rest compiles, as one tuple
    with pytest.warns(srcgrad.FallbackWarning, match="options"):
        gkw = srcgrad.grad(kw)                         # **options read: refused
    np.testing.assert_allclose(gva(A, 2 * A), 2 * A)
    np.testing.assert_allclose(gkw(A, scale=3.0), 6 * A)
    np.testing.assert_allclose(gkw(A), 2 * A)
    with pytest.raises(srcgrad.CompileError):
        srcgrad.grad(kw, strict=True)


def test_unknown_backend_is_a_value_error_listing_the_known_ones():
    with pytest.raises(ValueError, match="'numpy', 'numba', 'cupy', 'dask', 'auto'"):
        srcgrad.grad(lambda x: np.sum(x), backend="cuda")


def test_a_list_argument_in_wrt_is_a_pytree():
    def f(p):
        return p[0] * p[1] + np.sum(p[2] ** 2)

    g = srcgrad.grad(f)
    value = [1.5, -2.0, A.copy()]
    for _ in range(2):
        d = quiet(g, value)
        assert isinstance(d, list) and type(d[0]) is float and type(d[1]) is float
        assert d[0] == pytest.approx(-2.0) and d[1] == pytest.approx(1.5)
        np.testing.assert_allclose(d[2], 2 * A)
    np.testing.assert_array_equal(value[2], A)


# -------------------------------------------------- arguments that cannot be differentiated
BAD = {"int": 3, "bool": True, "int array": np.arange(3), "object array": np.array(
    [1.0, 2.0], dtype=object), "complex": 1 + 2j, "complex array": np.ones(2, complex),
    "string": "x", "bool array": np.array([True, False])}


@pytest.mark.parametrize("name", sorted(BAD))
@pytest.mark.parametrize("mode", ["compiled", "fallback"])
def test_non_float_arguments_in_wrt_raise_type_error_naming_them(name, mode):
    def fun(weights, data):
        return np.sum(weights * 2.0) + data

    f = fun if mode == "compiled" else functools.partial(fun, data=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = srcgrad.grad(f)
    for _ in range(2):
        with pytest.raises(TypeError, match="argument weights"):
            g(BAD[name]) if mode == "fallback" else g(BAD[name], 1.0)
    with pytest.raises(TypeError, match=r"weights\['b'\]\[1\]"):
        srcgrad.grad(lambda weights: weights["a"] * 2.0)({"a": 1.0, "b": [1.0, BAD[name]]})


def test_vjp_gives_none_for_data_and_refuses_complex():
    value, back = srcgrad.vjp(lambda x, n: x * n, A, 3)
    dx, dn = back(np.ones(3))
    np.testing.assert_allclose(dx, 3.0) and dn is None
    with pytest.raises(TypeError, match="complex"):
        srcgrad.vjp(lambda x, n: x * n, A.astype(complex), 3)


# ---------------------------------------------------------------------- defvjp
def test_defvjp_rule_of_a_user_function_is_the_same_in_both_modes():
    def blend(x, y):                      # its body is never differentiated
        return np.asarray(2.0 * np.asarray(x) + 3.0 * np.asarray(y))

    prim = srcgrad.defvjp(blend, lambda g, ans, x, y: 2.0 * g, lambda g, ans, x, y: 3.0 * g)
    f = define("def loss(x, y):\n    return np.sum(blend(x, y) ** 2)\n",
               {"np": np, "blend": blend})
    x, y = np.arange(6.0).reshape(2, 3), np.array([1.0, 2.0, 3.0])
    g = srcgrad.grad(f, wrt=(0, 1), strict=True)
    assert "np.blend" not in g.source
    dx, dy = g(x, y)
    s = 2.0 * x + 3.0 * y
    np.testing.assert_allclose(dx, 4.0 * s)
    np.testing.assert_allclose(dy, (6.0 * s).sum(axis=0))
    np.testing.assert_allclose(dx, numerical_grad(f, [x.copy(), y], 0), rtol=1e-6)
    tx, ty = srcgrad.tensor(x, requires_grad=True), srcgrad.tensor(y, requires_grad=True)
    (prim(tx, ty) ** 2).sum().backward()                   # eager: the same rule
    np.testing.assert_allclose(tx.grad.numpy(), dx)
    np.testing.assert_allclose(ty.grad.numpy(), dy)


def test_defvjp_name_resolves_under_another_name_in_the_module():
    def twice(x):
        return 2.0 * x

    srcgrad.defvjp(twice, lambda g, ans, x: 2.0 * g)
    holder = type("holder", (), {"double": staticmethod(twice)})
    f = define("def f(x):\n    return np.sum(h.double(x) * x)\n", {"np": np, "h": holder})
    g = srcgrad.grad(f)
    np.testing.assert_allclose(quiet(g, A), 4 * A)
