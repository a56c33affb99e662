"""An array read elsewhere (a global, a closure value, an attribute of an argument object)
that shares memory with an argument the code writes into is refused at the call, naming the
function's file and line; NumPy's error state and warning filters are the caller's in the
eager run (default mode), so ``except FloatingPointError`` / ``RuntimeWarning`` is taken as
in NumPy."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import srcgrad
from srcgrad.errors import CompileError

DATA = np.array([1.0, 2.0, 3.0])


class Holder:
    def __init__(self, W):
        self.W = W


def write_then_read_attribute(x, o):
    x[0] = 5.0
    return np.sum(x * o.W)


def write_then_read_global(x):
    x[0] = 5.0
    return np.sum(x * DATA)


def quiet(fn, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", srcgrad.FallbackWarning)
        return fn(*args)


def quiet_value_and_grad(f, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", srcgrad.FallbackWarning)
        return srcgrad.value_and_grad(f)(*args)


@pytest.mark.parametrize("strict", [True, False])
def test_attribute_sharing_memory_with_a_written_argument_is_refused(strict):
    x = np.array([1.0, 2.0, 3.0])
    with pytest.raises(CompileError, match=r"shares memory[\s\S]*test_shared_memory"):
        quiet(srcgrad.value_and_grad(write_then_read_attribute, strict=strict), x, Holder(x))
    np.testing.assert_array_equal(x, [1.0, 2.0, 3.0])


def test_attribute_not_sharing_memory_is_compiled():
    x = np.array([1.0, 2.0, 3.0])
    v, g = srcgrad.value_and_grad(write_then_read_attribute, strict=True)(x, Holder(x.copy()))
    assert v == pytest.approx(5.0 + 4.0 + 9.0)
    np.testing.assert_allclose(g, [0.0, 2.0, 3.0])


@pytest.mark.parametrize("strict", [True, False])
def test_global_sharing_memory_with_a_written_argument_is_refused(strict):
    with pytest.raises(CompileError, match=r"global 'DATA' shares memory"):
        quiet(srcgrad.value_and_grad(write_then_read_global, strict=strict), DATA)
    np.testing.assert_array_equal(DATA, [1.0, 2.0, 3.0])


def test_global_not_shared_is_compiled():
    v, g = srcgrad.value_and_grad(write_then_read_global, strict=True)(DATA.copy())
    assert v == pytest.approx(5.0 + 4.0 + 9.0)
    np.testing.assert_allclose(g, [0.0, 2.0, 3.0])


def divide_or_double(x, s):
    try:
        with np.errstate(divide="raise"):
            y = x / s
    except FloatingPointError:
        y = x * 2.0
    return np.sum(y ** 2)


def sqrt_or_identity(x, s):
    with np.errstate(invalid="raise"):
        try:
            y = np.sqrt(x - s)
        except FloatingPointError:
            y = x
    return np.sum(y)


def log_or_triple(x, s):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            y = np.log(x - s)
        except RuntimeWarning:
            y = x * 3.0
    return np.sum(y)


@pytest.mark.parametrize("f, s, value, grad", [
    (divide_or_double, 0.0, 20.0, [8.0, 16.0]),
    (sqrt_or_identity, 1.5, 3.0, [1.0, 1.0]),
    (log_or_triple, 1.5, 9.0, [3.0, 3.0]),
])
def test_default_mode_takes_the_except_branch_numpy_takes(f, s, value, grad):
    x = np.array([1.0, 2.0])
    assert f(x, s) == pytest.approx(value)
    v, g = quiet_value_and_grad(f, x, s)
    assert v == pytest.approx(value)
    np.testing.assert_allclose(g, grad)


def test_default_mode_gives_numpy_warning_where_numpy_warns():
    x = np.array([1.0, 2.0])
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        v, g = srcgrad.value_and_grad(sqrt_or_identity)(x, -1.0)     # no error: no warning
    assert v == pytest.approx(np.sum(np.sqrt(x + 1.0)))
    assert not [w for w in seen if w.category is RuntimeWarning]
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        v, g = srcgrad.value_and_grad(divide_or_double)(x, np.float64(0.5))
    np.testing.assert_allclose(g, 2 * x / 0.25)
