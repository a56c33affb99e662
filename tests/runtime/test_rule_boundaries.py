"""Edge cases of the rule table: Python floats, empty and length-1 axes, singular
matrices, complex-number functions of real values, single-array joins, masked rules.

Each case: strict compiled == eager == finite differences, or a CompileError; never another
exception (NumPy's own errors excepted).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import srcgrad
from srcgrad import CompileError


def _fd(f, args, i, eps=1e-6):
    x = np.array(args[i], dtype=float)
    out = np.zeros_like(x)
    for k in np.ndindex(x.shape):
        for sign in (1, -1):
            y = x.copy()
            y[k] += sign * eps
            moved = list(args)
            moved[i] = float(y) if isinstance(args[i], float) else y
            out[k] += sign * float(np.sum(f(*moved))) / (2 * eps)
    return out


def _both(f, *args, wrt=0):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [srcgrad.grad(f, wrt=wrt, strict=s)(*args) for s in (True, False)]


def _check(f, *args, wrt=0):
    for g in _both(f, *args, wrt=wrt):
        np.testing.assert_allclose(g, _fd(f, args, wrt), atol=1e-6)
    return g


def f_ceil(x):
    return np.ceil(x) * x


def f_sign(x):
    return 3.0 * np.sign(x) + x


def f_pow0(x):
    return x ** 0 + np.power(x, 0) + np.power(x, 0.0) + np.floor(x)


@pytest.mark.parametrize("f", [f_ceil, f_sign, f_pow0])
@pytest.mark.parametrize("x", [-0.3, 1.7, np.array([0.4, -1.2])])
def test_piecewise_constants_of_python_floats(f, x):
    g = _check(lambda v: np.sum(f(v)), x) if not isinstance(x, float) else _check(f, x)
    assert isinstance(g, float) == isinstance(x, float)


def f_diff0(x):
    return np.sum(np.diff(x, axis=0))


@pytest.mark.parametrize("shape", [(1,), (1, 1), (1, 3), (3, 1)])
def test_diff_along_an_axis_of_length_one(shape):
    _check(f_diff0, np.ones(shape) * 0.5)


def f_repeat0(x):
    return np.sum(np.repeat(x, 0)) + np.sum(x)


def f_repeat0_axis(x):
    return np.sum(np.repeat(x, [0], axis=1)) + np.sum(x * x)


def test_repeat_zero_times():
    _check(f_repeat0, np.array([0.5, 1.0, 2.0]))
    _check(f_repeat0_axis, np.ones((2, 3)))


def f_var0(x):
    return np.var(x[:0]) + np.sum(x)


def f_median0(x):
    return np.median(x[:0]) + np.sum(x)


@pytest.mark.parametrize("f", [f_var0, f_median0])
def test_statistics_of_no_values_are_nan_with_an_empty_gradient(f):
    # NumPy's value is nan (no values); the gradient of the empty part is empty, as for
    # np.mean of an empty array: the rest of the program keeps its gradient.
    for g in _both(f, np.array([0.5, -1.0, 2.0])):
        np.testing.assert_array_equal(g, [1.0, 1.0, 1.0])


def f_gradient(x):
    return np.sum(np.gradient(x)[0])


def test_gradient_of_an_nd_array_without_axis_is_refused_or_eager():
    x = np.arange(16.0).reshape(4, 4) ** 2
    with pytest.raises(CompileError, match="does not model these arguments"):
        srcgrad.grad(f_gradient, strict=True)(x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = srcgrad.grad(f_gradient)(x)
    np.testing.assert_allclose(g, _fd(f_gradient, (x,), 0), atol=1e-5)


def f_atleast(x):
    return np.atleast_1d(x) * 2.0


def f_atleast3(x):
    return np.atleast_3d(x) * 2.0


def f_append(x, y):
    return np.append(x, y)


def f_tensordot(x, y):
    return np.tensordot(x, y, axes=0)


def f_append_list(a, b, c, d):
    return np.append([a, b, c], d)


@pytest.mark.parametrize("f, args", [
    (f_atleast, (1.2,)), (f_atleast3, (1.2,)), (f_append, (np.ones(3), 4.0)),
    (f_tensordot, (np.arange(4.0), 1.3)), (f_append_list, (0.1, 0.2, 0.3, 0.4))])
@pytest.mark.parametrize("strict", [True, False])
def test_vjp_with_python_floats(f, args, strict):
    out, back = srcgrad.vjp(f, *args, strict=strict)
    v = np.random.default_rng(0).normal(size=np.shape(out))
    grads = back(v)
    for i, a in enumerate(args):
        expected = _fd(lambda *xs: np.sum(f(*xs) * v), args, i)
        np.testing.assert_allclose(grads[i], expected, atol=1e-6)
        assert np.shape(grads[i]) == np.shape(a)


def f_hstack(x):
    return np.sum(np.hstack(x) ** 2 * np.arange(np.hstack(x).size).reshape(np.hstack(x).shape))


def f_vstack(x):
    return np.sum(np.vstack(x) ** 2 * np.arange(np.vstack(x).size).reshape(np.vstack(x).shape))


def f_column_stack(x):
    return np.sum(np.column_stack(x) ** 3)


def f_dstack(x):
    return np.sum(np.dstack(x) ** 3)


@pytest.mark.parametrize("f", [f_hstack, f_vstack, f_column_stack, f_dstack])
@pytest.mark.parametrize("shape", [(2,), (2, 3), (3, 2, 2)])
def test_joins_of_one_array_join_its_rows(f, shape):
    x = np.random.default_rng(1).normal(size=shape)
    _check(f, x)


def f_hstack_floats(a, b):
    return np.sum(np.hstack([a, b, a]) ** 2)


def test_hstack_of_python_floats():
    _check(f_hstack_floats, 0.5, -1.5)


def f_det(a):
    return np.linalg.det(a)


@pytest.mark.parametrize("a", [np.array([[1.0, 2.0], [2.0, 4.0]]),
                               np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]]),
                               np.zeros((3, 3)),
                               np.random.default_rng(2).normal(size=(3, 3))])
def test_det_of_singular_matrices_has_the_adjugate_gradient(a):
    _check(f_det, a)


def f_logdet(a):
    return np.linalg.slogdet(a)[1]


def test_logdet_of_a_singular_matrix_is_infinite_not_an_error():
    a = np.array([[1.0, 2.0], [2.0, 4.0]])
    for g in _both(f_logdet, a):
        assert np.all(np.isinf(g))
    b = np.array([[2.0, 1.0], [1.0, 3.0]])
    _check(f_logdet, b)


def f_parts(x):
    return np.sum(np.real(x) * x + np.imag(x) + np.conj(x) ** 2 + np.conjugate(x)
                  + np.angle(x) * x + np.angle(x, deg=True) + np.real_if_close(x) ** 3)


@pytest.mark.parametrize("x", [np.array([-1.5, 0.5, 2.0]), 0.7, -0.7])
def test_complex_number_functions_of_real_values(x):
    _check(f_parts, x)


def f_complex_inside(x):
    return np.sum(np.real(x * 1j) + np.imag(x * 1j))


def test_complex_values_are_refused_not_treated_as_real():
    for strict in (True, False):
        with pytest.raises(CompileError, match="complex"):
            srcgrad.grad(f_complex_inside, strict=strict)(np.ones(2))


def f_view(x):
    r = np.real_if_close(x)
    r[0] = 5.0
    return np.sum(x * x)


def test_a_write_through_real_if_close_is_followed_or_refused():
    x = np.array([1.0, 2.0])
    try:
        g = srcgrad.grad(f_view, strict=True)(x)
    except CompileError:
        return
    np.testing.assert_allclose(g, [0.0, 4.0])


def f_clip_sqrt(x):
    return np.sum(np.sqrt(np.clip(x, 0.0, None)))


def f_clip_hi(x):
    return np.sum(np.sqrt(-np.clip(x, None, 0.0)))


def f_relu_sqrt(x):
    return np.sum(np.sqrt(np.maximum(x, 0.0)) + np.abs(x))


def test_masked_rules_select_an_infinite_cotangent_away():
    x = np.array([-1.0, 4.0])
    for g in _both(f_clip_sqrt, x):
        np.testing.assert_allclose(g, [0.0, 0.25])
    for g in _both(f_clip_hi, -x):
        np.testing.assert_allclose(g, [0.0, -0.25])
    for g in _both(f_relu_sqrt, x):
        np.testing.assert_allclose(g, [-1.0, 1.25])


def test_an_error_of_the_eager_backward_is_a_compile_error():
    out, back = srcgrad.vjp(f_complex_inside, np.ones(2), strict=False)
    with pytest.raises(CompileError):
        back(1.0)


def f_math_log(s):
    return math.log(s) * 0.0 + s


def f_math_sqrt(x, s):
    return math.sqrt(s) + np.sum(x)


def f_math_exp(s):
    return math.exp(s) * 0.0 + s


def f_math_all(s, t):
    return (math.log(s) + math.sqrt(s) + math.atan2(s, t) + math.hypot(s, t) + math.pow(s, t)
            + math.acos(s / 4.0) + math.fabs(t) + math.expm1(t) + math.log10(s))


def test_math_functions_raise_as_python_does():
    for strict in (True, False):
        with pytest.raises(ValueError, match="math domain error"):
            srcgrad.grad(f_math_log, strict=strict)(-1.0)
        with pytest.raises(ValueError, match="math domain error"):
            srcgrad.grad(f_math_sqrt, wrt=(0, 1), strict=strict)(np.ones(2), -1.0)
        with pytest.raises(OverflowError):
            srcgrad.grad(f_math_exp, strict=strict)(1000.0)


@pytest.mark.parametrize("args", [(1.3, 0.7), (2.5, -0.4), (np.float64(1.3), 0.7)])
def test_math_functions_differentiate_as_numpy_twins(args):
    for wrt in (0, 1):
        g = srcgrad.grad(f_math_all, wrt=wrt, strict=True)(*args)
        np.testing.assert_allclose(g, _fd(f_math_all, [float(a) for a in args], wrt),
                                   rtol=1e-6)


@pytest.mark.parametrize("strict", [True, False])
def test_astype_of_a_scalar_result_takes_the_seed_as_a_numpy_scalar(strict):
    """The seed of a gradient is a Python float; ``astype``'s rule casts it back to the
    input's dtype, which a Python float cannot do by itself."""
    def loss(x):
        return np.mean(x ** 2).astype(np.float32)
    x = np.arange(3.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error" if strict else "ignore")
        got = srcgrad.grad(loss, strict=strict)(x)
    np.testing.assert_allclose(got, 2 * x / 3)
    assert got.dtype == np.float64
