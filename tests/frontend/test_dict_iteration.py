"""Loops over an argument not differentiated that a loop counter does not walk as Python
iterates it (a dict gives its keys in insertion order, a set has no index, an itertools
iterator no length): default mode gives the exact gradient (eager engine), strict refuses
with the loop's file and line; lists, tuples and arrays stay compiled."""

from __future__ import annotations

import itertools
import warnings
from itertools import combinations_with_replacement

import autograd
import autograd.numpy as anp
import numpy as np
import pytest

import srcgrad
from srcgrad.errors import CompileError


def keyed(x, d):
    t = 0.0
    for k in d:
        t = t * 2.0 + d[k] * np.sum(x)
    return t


def keyed_ag(x, d):
    t = 0.0
    for k in d:
        t = t * 2.0 + d[k] * anp.sum(x)
    return t


def over_values(x, s):
    t = 0.0
    for v in s:
        t = t * 2.0 + v * np.sum(x)
    return t


def pairs(x):
    t = 0.0
    for a, b in itertools.combinations(range(3), 2):
        t = t + x[a] * x[b]
    return t


def grid(x):
    t = 0.0
    for a, b in itertools.product(range(2), range(2)):
        t = t + x[a] * x[b]
    return t


def central(f, x, *rest, h=1e-6):
    out = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = h
        out[i] = (f(x + e, *rest) - f(x - e, *rest)) / (2 * h)
    return out


def default_grad(f, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", srcgrad.FallbackWarning)
        return srcgrad.grad(f)(*args)


DICTS = [{0: 1.0, 1: 0.0}, {1: 1.0, 0: 5.0}, {"a": 1.0, "b": 2.0}, {"b": 2.0, "a": 1.0}]


@pytest.mark.parametrize("d", DICTS, ids=repr)
def test_dict_argument_iterates_its_keys_in_insertion_order(d):
    x = np.array([1.0, 2.0])
    want = autograd.grad(keyed_ag)(x, d)
    np.testing.assert_allclose(default_grad(keyed, x, d), want)
    np.testing.assert_allclose(central(keyed, x, d), want, atol=1e-6)
    with pytest.raises(CompileError, match=r"test_dict_iteration\.py:\d+"):
        srcgrad.grad(keyed, strict=True)(x, d)


def test_int_keys_not_in_counter_order_give_the_right_gradient():
    x = np.ones(2)
    np.testing.assert_allclose(default_grad(keyed, x, {0: 1, 1: 0}), [2.0, 2.0])


@pytest.mark.parametrize("s", [{3.0, 1.0}, frozenset({2.0}), {1: 3.0, 2: 4.0}.keys(),
                               {1: 3.0, 2: 4.0}.values()], ids=repr)
def test_sets_and_views_run_as_python_iterates_them(s):
    x = np.array([1.0, 2.0])
    want = central(over_values, x, s)
    np.testing.assert_allclose(default_grad(over_values, x, s), want, atol=1e-6)
    with pytest.raises(CompileError, match=r"test_dict_iteration\.py:\d+"):
        srcgrad.grad(over_values, strict=True)(x, s)


@pytest.mark.parametrize("s", [[3.0, 1.0], (2.0,), np.array([1.0, 4.0])], ids=repr)
def test_lists_tuples_and_arrays_stay_compiled(s):
    x = np.array([1.0, 2.0])
    got = srcgrad.grad(over_values, strict=True)(x, s)
    np.testing.assert_allclose(got, central(over_values, x, s), atol=1e-6)


def ordered_pairs(x):
    t = 0.0
    for a, b in itertools.permutations(range(3), r=2):
        t = t * 0.5 + x[a] * x[b] ** 2
    return t


def with_replacement(x):
    t = 0.0
    for a, b in combinations_with_replacement(range(0, 3, 2), 2):
        t = t * 0.5 + x[a] * x[b] ** 3
    return t


def repeated(x):
    t = 0.0
    for a, b, c in itertools.product(range(2), repeat=3):
        t = t * 0.5 + x[a] * x[b] * x[c] ** 2
    return t


def chained_ranges(x):
    t = 0.0
    for a in itertools.chain(range(2), range(1, 3)):
        t = t * 0.5 + x[a] ** 2
    return t


def chained_lists(x):
    first = [x[0] * 2.0]
    rest = [x, 1.5]
    t = 0.0
    for q in itertools.chain(first, rest):
        t = t * 0.5 + np.sum(np.sin(q) * q)
    return t


def chained_literals(x):
    t = 0.0
    for q in itertools.chain([x[0]], [x, 1.5]):
        t = t + np.sum(np.sin(q))
    return t


def of_arrays(ws):
    t = 0.0
    for u, v in itertools.combinations(ws, 2):
        t = t * 0.5 + np.sum(u * v)
    return t


def unknown_length(x, n):
    t = 0.0
    for a, b in itertools.combinations(range(n), 2):
        t = t * 0.5 + x[a] * x[b]
    return t


def ag(f):
    """``f`` run by HIPS autograd (its ``np`` rebound to autograd's)."""
    g = type(f)(f.__code__, {**f.__globals__, "np": anp}, f.__name__)
    return autograd.grad(g)


@pytest.mark.parametrize("f", [pairs, grid, ordered_pairs, with_replacement, repeated,
                               chained_ranges, chained_lists])
def test_itertools_loops_of_known_iterables_are_compiled(f):
    x = np.array([1.0, 2.0, 3.0])
    got = srcgrad.grad(f, strict=True)(x)
    np.testing.assert_allclose(got, ag(f)(x), rtol=1e-12)
    np.testing.assert_allclose(got, central(f, x), atol=1e-5)
    np.testing.assert_allclose(default_grad(f, x), got, rtol=1e-12)


def test_itertools_combinations_of_a_differentiated_list_runs_eagerly():
    ws = [np.array([1.0, 2.0]), np.array([3.0, -1.0]), np.array([0.5, 4.0])]
    want = ag(of_arrays)(ws)
    for g, w in zip(default_grad(of_arrays, ws), want):
        np.testing.assert_allclose(g, w, rtol=1e-12)
    with pytest.raises(CompileError, match=r"test_dict_iteration\.py\W+line \d+"):
        srcgrad.grad(of_arrays, strict=True)(ws)


def test_itertools_of_a_length_known_at_run_time():
    x = np.array([1.0, 2.0, 3.0])
    want = central(unknown_length, x, 3)
    np.testing.assert_allclose(default_grad(unknown_length, x, 3), want, atol=1e-6)
    with pytest.raises(CompileError, match=r"test_dict_iteration\.py:\d+"):
        srcgrad.grad(unknown_length, strict=True)(x, 3)


def keyed_with_get(x, d):
    t = d.get("a", 0.0) * np.sum(x)
    for k in d:
        t = t * 2.0 + d[k] * np.sum(x)
    return t


@pytest.mark.parametrize("d", [{"a": 1.0, "b": 2.0}, {"b": 2.0, "a": 1.0}], ids=repr)
def test_dict_compiled_for_its_structure_iterates_in_insertion_order(d):
    x = np.array([1.0, 2.0])
    got = srcgrad.grad(keyed_with_get, strict=True)(x, d)
    np.testing.assert_allclose(got, central(keyed_with_get, x, d), atol=1e-6)
    np.testing.assert_allclose(default_grad(keyed_with_get, x, d), got, rtol=1e-12)


def test_itertools_chain_of_list_literals_carrying_a_gradient_is_refused_at_its_line():
    """Literal lists inside the call are not known as sequences: refused, and the
    fallback is right."""
    x = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(default_grad(chained_literals, x), ag(chained_literals)(x),
                               rtol=1e-12)
    with pytest.raises(CompileError, match=r"test_dict_iteration\.py\W+line \d+"):
        srcgrad.grad(chained_literals, strict=True)(x)


def _put(lst, v):
    lst[1] = v
    return v


def chain_item_written(x):
    first, rest = [x[0]], [x[1] * 2.0, x[2] * 3.0]
    t = 0.0
    for q in itertools.chain(first, rest):
        rest[1] = q * 1.7                   # Python's chain then yields the new item
        t = t + np.sin(q)
    return t


def chain_appended_to(x):
    first, rest = [x[0]], [x[1] * 2.0]
    t = 0.0
    for q in itertools.chain(first, rest):
        if len(rest) < 3:
            rest.append(q * 1.7)
        t = t + np.sin(q)
    return t


def chain_written_by_alias(x):
    first, rest = [x[0]], [x[1] * 2.0, x[2] * 3.0]
    other = rest
    t = 0.0
    for q in itertools.chain(first, rest):
        other[1] = q * 1.7
        t = t + np.sin(q)
    return t


def chain_written_by_helper(x):
    first, rest = [x[0]], [x[1] * 2.0, x[2] * 3.0]
    t = 0.0
    for q in itertools.chain(first, rest):
        _put(rest, q * 1.7)
        t = t + np.sin(q)
    return t


@pytest.mark.parametrize("f", [chain_item_written, chain_appended_to, chain_written_by_alias,
                               chain_written_by_helper])
def test_a_chain_whose_lists_the_loop_writes_into_is_refused_at_the_write(f):
    """The unrolled copies would read the items the lists held when the loop began; Python's
    chain reads each list as it is when it gets there: refused, and the fallback is right."""
    x = np.array([0.3, 0.6, 0.9])
    np.testing.assert_allclose(default_grad(f, x), central(f, x), atol=1e-6)
    with pytest.raises(CompileError, match=r"write into one of them") as info:
        srcgrad.grad(f, strict=True)(x)
    assert "test_dict_iteration.py" in str(info.value)
