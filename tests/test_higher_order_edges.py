"""Edge cases of the higher-order transforms, each once a wrong answer or a crash found by
measuring the peers' corpora (forward mode and second order, all strict)."""

from __future__ import annotations

import numpy as np
import pytest

import srcgrad


def _transposed(x):
    return x.T * 2.0


@pytest.mark.parametrize("jacobian", [srcgrad.jacfwd, srcgrad.jacrev])
def test_jacobians_of_non_contiguous_arrays_are_not_zero(jacobian):
    x = np.arange(6.0).reshape(2, 3)
    got = jacobian(_transposed, strict=True)(x)              # x.T: a Fortran-ordered result
    assert got.shape == (3, 2, 2, 3)
    want = 2.0 * np.einsum("ja,ib->ijab", np.eye(2), np.eye(3))
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(jacobian(_transposed, strict=True)(x.T.copy().T), want)


def _powers(a, n):
    for _ in range(n):
        a = a * a
    return a


def test_a_hessian_keeps_an_int_parameter_named_like_its_own_locals():
    h = srcgrad.hessian(_powers, strict=True)
    assert h(0.7, 2) == pytest.approx(12 * 0.7 ** 2)          # a ** 4
    assert h(np.array(0.7), 3) == pytest.approx(56 * 0.7 ** 6)


def _with_default(a, k=2.0):
    return a * k + np.sin(a)


def test_defaults_are_constants_of_every_transform():
    value, tangent = srcgrad.jvp(_with_default, (0.7,), (1.0,), strict=True)
    assert tangent == pytest.approx(2.0 + np.cos(0.7))
    assert srcgrad.hessian(_with_default, strict=True)(0.7) == pytest.approx(-np.sin(0.7))
    _, hv = srcgrad.jvp(srcgrad.grad(_with_default, strict=True), (0.7,), (1.0,), strict=True)
    assert hv == pytest.approx(-np.sin(0.7))


def _writes_into_its_argument(x):
    x[0] = x[0] * 3.0
    return np.sum(x ** 3)


def test_a_hessian_never_writes_into_the_callers_array():
    x = np.array([0.5, 1.5])
    h = srcgrad.hessian(_writes_into_its_argument, strict=True)(x)
    np.testing.assert_array_equal(x, [0.5, 1.5])
    np.testing.assert_allclose(h, np.diag([6 * 27 * 0.5, 6 * 1.5]))


_PAIR = srcgrad.grad(lambda x: x[0] * x[1])


def _gradient_of_a_list(x):
    g = _PAIR(x)
    return g[0] + 0.5 * g[1]


def test_a_gradient_of_a_list_called_inside_is_refused_not_guessed():
    with pytest.raises(srcgrad.CompileError, match="array and float arguments"):
        srcgrad.grad(_gradient_of_a_list, strict=True)([1.0, 2.0, 3.0])


def test_the_second_derivative_of_prod_is_right_or_refused():
    x = np.array([1.5, 1.9, 0.9])
    try:
        h = srcgrad.hessian(lambda x: np.prod(x), strict=True)(x)
    except srcgrad.CompileError:
        return
    want = np.prod(x) / np.outer(x, x) * (1 - np.eye(3))
    np.testing.assert_allclose(h, want, rtol=1e-10)


_V = 0.5


def _vdot_with_a_number(x):
    return np.vdot(x, _V)


def test_a_rule_evaluated_on_a_constant_prints_its_array():
    assert srcgrad.grad(_vdot_with_a_number, strict=True)(2.0) == pytest.approx(0.5)
    assert srcgrad.jvp(_vdot_with_a_number, (2.0,), (1.0,), strict=True)[1] == pytest.approx(0.5)
