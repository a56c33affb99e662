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


# --- from a review of the transforms ---------------------------------------------------------

def _scaled_by_a_count(x, p):
    return x * p["n"] * p["w"]


def _squares_times_a_count(p):
    return np.sum(p["a"] ** 2) * p["n"]


def test_an_int_leaf_of_a_pytree_carries_no_tangent():
    x = np.array([1.3, 2.2, 0.3])
    jac = srcgrad.jacfwd(_scaled_by_a_count, strict=True)(x, {"n": 2, "w": 1.5})
    np.testing.assert_allclose(jac, 3.0 * np.eye(3))
    h = srcgrad.hessian(_squares_times_a_count, strict=True)({"a": x, "n": 2, "b": [1.5]})
    np.testing.assert_allclose(h["a"]["a"], 4.0 * np.eye(3))
    _, tangent = srcgrad.jvp(_squares_times_a_count, ({"a": x, "n": 2},),
                             ({"a": np.ones(3), "n": 0},), strict=True)
    assert tangent == pytest.approx(4.0 * np.sum(x))
    with pytest.raises(TypeError, match="integer primal"):    # refused, not ignored
        srcgrad.jvp(_squares_times_a_count, ({"a": x, "n": 2},), ({"a": np.ones(3), "n": 5},),
                    strict=True)


def _writes_one_reads_the_other(a, b):
    a[0] = 10.0 * b[1]
    return a * b


def test_jvp_refuses_shared_arguments_when_one_is_written():
    x = np.array([1.2, 1.2, 0.7])
    with pytest.raises(srcgrad.CompileError, match="share memory"):
        srcgrad.jvp(_writes_one_reads_the_other, (x, x), (x, x), strict=True)


def test_jvp_refuses_complex_arguments_as_grad_does():
    x = np.array([1.0, 2.0], dtype=complex)
    with pytest.raises(TypeError, match="real floating point"):
        srcgrad.jvp(lambda z: np.sin(z) * z, (x,), (np.ones(2, complex),), strict=True)


def _cube_sine(x):
    return np.sin(x) * x ** 3


def test_third_order_by_nesting_grad():
    g3 = srcgrad.grad(srcgrad.grad(srcgrad.grad(_cube_sine, strict=True), strict=True),
                      strict=True)
    x = 0.7
    want = -np.cos(x) * x ** 3 - 9 * np.sin(x) * x ** 2 + 18 * np.cos(x) * x + 6 * np.sin(x)
    assert g3(x) == pytest.approx(want, rel=1e-10)


_GRAD_OF_SQUARES = srcgrad.grad(lambda x: np.sum(np.sin(x) * x ** 2), strict=True)
_DIRECTION = np.array([0.3, -1.0, 2.0])


def _curvature_along_v(x):
    return srcgrad.jvp(_GRAD_OF_SQUARES, (x,), (_DIRECTION,))[1] @ _DIRECTION


def test_grad_of_a_jvp_of_a_grad_inside_compiled_code():
    x = np.array([1.3, 2.2, 0.3])
    got = srcgrad.grad(_curvature_along_v, strict=True)(x)
    d3 = -x ** 2 * np.cos(x) - 6 * x * np.sin(x) + 6 * np.cos(x)     # (sin(x) x**2)'''
    np.testing.assert_allclose(got, d3 * _DIRECTION ** 2, rtol=1e-10)


match_tangent = 3.0     # a user global with the name of a helper the jvp module defines


def _reads_a_clashing_global(x):
    return np.sum(np.sin(x) * match_tangent)


def test_a_user_global_named_like_a_generated_helper_keeps_its_value():
    x, t = np.array([0.3, -1.2]), np.array([1.0, 0.5])
    value, tangent = srcgrad.jvp(_reads_a_clashing_global, (x,), (t,), strict=True)
    assert value == pytest.approx(np.sum(np.sin(x) * 3.0))
    assert tangent == pytest.approx(np.sum(np.cos(x) * t * 3.0))


def test_eager_forward_mode_shares_the_tangent_of_tied_maxima():
    from srcgrad.autograd import forward_ad as fw
    with fw.dual_level():
        d = fw.make_dual(srcgrad.tensor([2.0, 2.0, 0.0]), srcgrad.tensor([1.0, 1.0, 1.0]))
        assert float(fw.unpack_dual(d.max()).tangent) == pytest.approx(1.0)
    flags = srcgrad.tensor([True, False, True])
    assert int(flags.sum()) == 2 and int(np.sum(flags)) == 2


def _zero_to_the(y):
    return np.power(0.0, y)


def test_the_second_derivative_of_zero_to_a_power_is_zero_not_nan():
    assert srcgrad.hessian(_zero_to_the, strict=True)(0.0995) == 0.0
    assert srcgrad.jvp(srcgrad.grad(_zero_to_the, strict=True), (0.0995,), (1.0,),
                       strict=True)[1] == 0.0


_GRAD_OF_REAL = srcgrad.grad(lambda x: np.real(x), strict=True)


def _through_a_rule_that_refuses_complex(a):
    return np.vdot(_GRAD_OF_REAL(a), 1.0)


def test_a_generated_module_that_defines_notcompiled_can_be_embedded():
    assert srcgrad.grad(_through_a_rule_that_refuses_complex, strict=True)(-0.4) == 0.0


def _inner_product(a, b):
    return a * b


def _calls_a_helper(a, b):
    return _inner_product(a, b)


_GRAD_CALLING_A_HELPER = srcgrad.grad(_calls_a_helper, strict=True)


def _sum_of_that_gradient(a, b):
    return np.vdot(_GRAD_CALLING_A_HELPER(a, b), 1.0)


def test_a_helpers_generated_jvp_embedded_twice_is_one_function():
    assert srcgrad.grad(_sum_of_that_gradient, strict=True)(0.7, 1.3) == 0.0
    assert srcgrad.grad(_sum_of_that_gradient, wrt=1, strict=True)(0.7, 1.3) == 1.0


def _star_args(*args):
    return np.sum(np.sin(args[0]) * args[1])


def _star_and_keyword(a, *rest, scale=2.0):
    return a * scale + sum(rest)


def test_jvp_and_jacobians_of_functions_with_star_args():
    x, y = np.array([0.1, 0.2]), np.array([1.0, 2.0])
    _, tangent = srcgrad.jvp(_star_args, (x, y), (np.ones(2), np.zeros(2)), strict=True)
    assert tangent == pytest.approx(np.sum(np.cos(x) * y))
    _, tangent = srcgrad.jvp(_star_and_keyword, (x, y, y), (np.ones(2), np.ones(2),
                                                             np.zeros(2)), strict=True)
    np.testing.assert_allclose(tangent, [3.0, 3.0])
    np.testing.assert_allclose(srcgrad.jacfwd(_star_args, strict=True)(x, y), np.cos(x) * y)
