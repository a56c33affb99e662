"""Helpers whose result is a tuple or a list that the ``return`` statement does not show
(``return pair``, ``return other(x)``, a list built by ``append``): the caller must unpack
or list-read it, never index it as an array.  Each case is checked against central
differences in reverse mode, forward mode and second order (which differentiates generated
code whose helpers return ``(values, tangents)`` held in variables), or refused clearly."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import numerical_grad

import srcgrad

X = np.array([0.1, 0.2, 0.7, -0.3])
ROWS = np.array([[0.3, -0.2, 0.5], [0.1, 0.4, -0.6]])


# ------------------------------------------------------------------------------- helpers
def _stats(a):
    pair = (a * 2.0, np.mean(a))
    return pair


def _forwarded(a):
    return _stats(a)


def _forwarded_var(a):
    t = _stats(a * 1.5)
    return t


def _nested(a):
    inner = (a * 2.0, np.sum(a ** 2))
    t = (np.mean(a), inner)
    return t


def _nested_literal_outside(a):
    inner = (np.sin(a), np.sum(a))
    return np.mean(a), inner


def _branch_items(a):
    if np.sum(a) > 0:
        u, m = a * 2.0, np.mean(a)
    else:
        u, m = a * 3.0, np.sum(a ** 2)
    pair = (u, m)
    return pair


def _recursive_pair(a, n):
    if n == 0:
        u, m = a * 1.0, np.sum(a)
    else:
        u, m = _recursive_pair(a * 2.0, n - 1)      # its own tuple, while it is lowered
    pair = (np.sin(u), m * 3.0)
    return pair


def _rows(a):
    out = []
    for r in a:
        out.append(r * 2.0)
    return out


def _rows_in_branch(a):
    if np.sum(a) > 0:
        out = [a[0], np.sin(a[1])]
    else:
        out = [np.cos(a[0]), a[1] * 3.0]
    return out


def _list_and_total(a):
    out = []
    for r in a:
        out.append(np.sin(r))
    return out, np.sum(a)


# ------------------------------------------------------------------------ the functions
def indexed(y):
    return np.sin(_stats(y)[1]) + np.sum(_stats(y)[0] ** 2)


def unpacked(y):
    u, m = _stats(y)
    return np.sum(np.cos(u)) * m


def through_another_helper(y):
    return np.sin(_forwarded(y)[1]) * np.sum(_forwarded_var(y)[0])


def unpacked_from_another_helper(y):
    u, m = _forwarded_var(y)
    return np.sum(u * m)


def nested(y):
    m, (u, s) = _nested(y)
    return m * s + np.sum(np.sin(u)) + np.sum(_nested(y)[1][0] ** 2)


def nested_literal_outside(y):
    return np.sum(_nested_literal_outside(y)[1][0] ** 2) * _nested_literal_outside(y)[0]


def branch_items(y):
    return np.sin(_branch_items(y)[1]) + np.sum(_branch_items(y)[0])


def recursive(y):
    u, m = _recursive_pair(y, 2)
    return np.sum(u) * m + np.sin(_recursive_pair(y, 1)[1])


def list_indexed(x):
    return np.sum(np.sin(_rows(x)[1]))


def list_summed(x):
    return np.sum(np.tanh(sum(_rows(x))))


def list_stacked(x):
    return np.sum(np.stack(_rows(x), axis=0) ** 3)


def list_variable_index(x):
    xs = _rows(x)
    total = 0.0
    for i in range(len(xs)):
        total = total + np.sum(np.sin(xs[i]) * (i + 1.0))
    return total


def list_in_a_loop(x):
    total = 0.0
    for k in range(3):
        xs = _rows(x * (k + 1.0))
        total = total + np.sum(np.cos(xs[k % 2])) + np.sum(xs[0] * xs[1])
    return total


def list_from_branches(x):
    xs = _rows_in_branch(x)
    return np.sum(xs[0] * xs[1])


def list_in_a_tuple(x):
    xs, s = _list_and_total(x)
    return np.sum(xs[1] ** 2) * s


VECTOR_CASES = [indexed, unpacked, through_another_helper, unpacked_from_another_helper,
                nested, nested_literal_outside, branch_items, recursive]
LIST_CASES = [list_indexed, list_summed, list_stacked, list_variable_index, list_in_a_loop,
              list_from_branches, list_in_a_tuple]
CASES = [(f, X) for f in VECTOR_CASES] + [(f, ROWS) for f in LIST_CASES]
INPUTS = {id(f): [x, -x] for f, x in CASES}        # both signs: both sides of a branch



def _ids(case):
    return case[0].__name__


def _forward_cases():
    return [pytest.param(case, id=_ids(case)) for case in CASES]


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_grad_matches_finite_differences(case):
    f, _ = case
    grad = srcgrad.grad(f, strict=True)
    for x in INPUTS[id(f)]:
        want = numerical_grad(f, [x.copy()], 0)
        got = grad(x)
        assert got.shape == x.shape
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("case", _forward_cases())
def test_jvp_matches_finite_differences(case):
    f, _ = case
    rng = np.random.default_rng(3)
    for x in INPUTS[id(f)]:
        v = rng.standard_normal(x.shape)
        value, tangent = srcgrad.jvp(f, (x,), (v,), strict=True)
        assert value == pytest.approx(f(x), rel=1e-12)
        want = np.sum(numerical_grad(f, [x.copy()], 0) * v)
        assert tangent == pytest.approx(want, rel=1e-6, abs=1e-7)


@pytest.mark.parametrize("case", _forward_cases())
def test_hessian_matches_finite_differences_of_the_gradient(case):
    f, _ = case
    grad = srcgrad.grad(f, strict=True)                # checked above against f itself
    for x in INPUTS[id(f)]:
        got = srcgrad.hessian(f, strict=True)(x)
        assert got.shape == x.shape * 2
        want = np.stack([numerical_grad(lambda z, j=j: grad(z).reshape(-1)[j], [x.copy()], 0)
                         for j in range(x.size)]).reshape(x.shape * 2)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_the_returned_tuple_is_never_indexed_as_an_array():
    source = srcgrad.grad(indexed, strict=True).source
    assert "getitem" not in source and "unindex" not in source


# ------------------------------------------------------------------------------- refused
def _tuple_from_calls_in_branches(a):
    if np.sum(a) > 0:
        p = _stats(a)
    else:
        p = _stats(a * 2.0)
    return p


def _tuple_assigned_in_branches(a):
    if np.sum(a) > 0:
        pair = (a * 2.0, np.mean(a))
    else:
        pair = (a * 3.0, np.sum(a))
    return pair


def _tuple_returned_from_both_branches(a):
    if np.sum(a) > 0:
        pair = (a * 2.0, np.mean(a))
        return pair
    other = (a * 3.0, np.sum(a))
    return other


def _recursive_tuple_from_branches(a, n=2):
    if n == 0:
        t = _stats(a)
    else:
        t = _recursive_tuple_from_branches(a * 2.0, n - 1)
    return t


def _list_of_tuples(a):
    xs = []
    for r in a:
        xs.append((r, r * 2.0))
    return xs


def _item_of_a_list_of_tuples(a):
    xs = []
    for r in a:
        xs.append((r, r * 2.0))
    return xs[0]


@pytest.mark.parametrize("helper, message", [
    (_tuple_from_calls_in_branches, "tuple assigned in a branch"),
    (_tuple_assigned_in_branches, "tuple assigned in a branch"),
    (_tuple_returned_from_both_branches, "tuple assigned in a branch"),
    (_recursive_tuple_from_branches, "tuple assigned in a branch"),
    (_item_of_a_list_of_tuples, "list that holds tuples or lists"),
    (_list_of_tuples, "list that holds tuples or lists"),
], ids=lambda v: getattr(v, "__name__", "message"))
@pytest.mark.parametrize("transform", ["grad", "jvp"])
def test_tuples_the_compiler_cannot_follow_are_refused(helper, message, transform):
    def f(y):
        return np.sum(np.sin(helper(y)[1]))
    x = ROWS if helper in (_item_of_a_list_of_tuples, _list_of_tuples) else X
    with pytest.raises(srcgrad.CompileError, match=message) as info:
        if transform == "grad":
            srcgrad.grad(f, strict=True)(x)
        else:
            srcgrad.jvp(f, (x,), (x,), strict=True)
    assert "internal error" not in str(info.value)


def _pair(a):
    return a * 2.0, np.mean(a)


def _tuple_from_a_branch(y):
    if y[0] > 0:
        p = _pair(y)
    else:
        p = _pair(2 * y)
    return np.sin(p[1])


def test_a_helpers_tuple_assigned_in_a_branch_is_refused_in_reverse_mode():
    with pytest.raises(srcgrad.CompileError, match="tuple assigned in a branch"):
        srcgrad.grad(_tuple_from_a_branch, strict=True)
