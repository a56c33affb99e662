"""``np.asarray(x)`` and NumPy's other conversions of an array that carries a gradient, in the
eager fallback: the very Array where NumPy returns the very array (a later write shows through
both names), a recorded copy where NumPy copies (or casts, or adds axes).  Real programs start
with ``x = np.asarray(x, dtype=float)``; the fallback used to refuse it.  Each function falls
back (a dict key computed at run time) and is checked against central finite differences.
And printing: ``'%.3f' % loss``, ``f"{loss:.2f}"`` and ``str(loss)`` show what NumPy shows,
while ``float(loss)``, which may reach the result, stays refused."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from conftest import numerical_grad

import srcgrad


def _no_compile(x):
    d = {}
    d[id(x)] = 0.0                      # a key computed at run time: the compiler refuses
    return 0.0


def as_float(x):
    x = np.asarray(x, dtype=float)
    return np.sum(x ** 3) + _no_compile(x)


def copied_then_written(x):
    y = np.array(x)                     # a copy: the write below leaves x as it was
    y[0] = 0.0
    return np.sum(y * 2.0) + np.sum(x) + _no_compile(x)


def same_then_written(x):
    y = np.asarray(x)                   # x itself: the write shows through x
    y[0] = 0.0
    return np.sum(y * 2.0) + np.sum(x) + _no_compile(x)


def contiguous_and_ndmin(x):
    a = np.ascontiguousarray(x.T)
    b = np.array(x[0], ndmin=2)
    c = np.asfortranarray(x)
    return np.sum(a * 2.0) + np.sum(b ** 2) + np.sum(np.sin(c)) + _no_compile(x)


def cast_to_float32(x):
    return np.sum(np.asarray(x, dtype=np.float32) * 2.0) + _no_compile(x)


def _fallback(f, x):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", srcgrad.FallbackWarning)
        return srcgrad.grad(f)(x)


@pytest.mark.parametrize("f", [as_float, copied_then_written, same_then_written,
                               contiguous_and_ndmin])
def test_conversions_give_numpys_gradient(f):
    x = np.array([[0.3, -1.2, 0.8], [1.5, 0.4, -0.6]])
    before = x.copy()
    got = _fallback(f, x)
    np.testing.assert_allclose(got, numerical_grad(f, [x.copy()], 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_array_equal(x, before)


def test_a_write_after_asarray_shows_through_both_names():
    x = np.array([2.0, 3.0])
    np.testing.assert_allclose(_fallback(same_then_written, x), [0.0, 3.0])
    np.testing.assert_allclose(_fallback(copied_then_written, x), [1.0, 3.0])


def test_a_cast_to_float32_is_recorded():
    x = np.array([2.0, 3.0])
    np.testing.assert_allclose(_fallback(cast_to_float32, x), [2.0, 2.0])


def prints_its_loss(x):
    loss = np.sum(x ** 2)
    print("%.3f" % loss, f"{loss:.2f}", str(loss), "%s|%5.1f" % (loss, loss))  # noqa: UP031
    return loss + _no_compile(x)


def float_reaches_the_result(x):
    return float(np.sum(x ** 2)) * x[0] + _no_compile(x)


def test_formatting_a_loss_prints_what_numpy_prints(capsys):
    """``'%.3f' % loss`` asks the array for its float; a string carries no gradient, so the
    eager run gives it, and prints exactly what the plain function prints."""
    x = np.array([0.5, 1.25])
    prints_its_loss(x)
    plain = capsys.readouterr().out
    np.testing.assert_allclose(_fallback(prints_its_loss, x), 2 * x)
    assert capsys.readouterr().out == plain == "1.812 1.81 1.8125 1.8125|  1.8\n"


def test_a_float_that_may_reach_the_result_is_still_refused():
    with pytest.raises(srcgrad.CompileError, match="Python float"):
        _fallback(float_reaches_the_result, np.array([0.5, 1.25]))
