"""Starred unpacking (``a, *rest, b = [y, ..., y]``) of a list holding an array that was last
written through a view: the first name bound to that array takes over its name in the compiled
code, and the items given to the other names (the starred list's too) follow it.  Before, they
kept the old name: the generated code raised NameError, or the analysis a KeyError."""

from __future__ import annotations

import warnings

import autograd
import autograd.numpy as anp
import numpy as np
import pytest
from conftest import numerical_grad

import srcgrad
from srcgrad.transforms.fallback import eager_transform


def first_then_rest(x):
    y = x * 2.0
    v = y[1:]
    v[0] = 1.0
    a, *rest = [y, y]
    return np.sum(np.sin(a + sum(rest)))


def rest_then_last(x):
    y = x * 2.0
    v = y[1:]
    v[0] = 1.0
    *rest, a = [y, y * 0.5]
    return np.sum(np.sin(rest[0]) * a)


def both_ends(x):
    y = x * 2.0
    v = y[1:]
    v[0] += x[0, 0]
    a, *rest, b = [y, y * 0.5, y]
    return np.sum(np.sin(rest[0]) * a * b)


def _oracle_both_ends(x):
    y = x * 2.0
    y = anp.concatenate([y[:1], (y[1] + x[0, 0])[None], y[2:]])
    return anp.sum(anp.sin(y * 0.5) * y * y)


@pytest.mark.parametrize("f", [first_then_rest, rest_then_last, both_ends])
def test_starred_items_follow_the_renamed_array(f):
    x = np.linspace(0.1, 0.9, 12).reshape(3, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error", srcgrad.FallbackWarning)
        got = srcgrad.grad(f, strict=True)(x.copy())
    np.testing.assert_allclose(got, numerical_grad(f, [x.copy()], 0), rtol=1e-5, atol=1e-7)
    eager = eager_transform(f, "grad", [x.copy()], (0,), True)
    np.testing.assert_allclose(got, eager, rtol=1e-9, atol=1e-12)


def test_both_ends_match_autograd():
    x = np.linspace(0.1, 0.9, 12).reshape(3, 4)
    np.testing.assert_allclose(srcgrad.grad(both_ends, strict=True)(x.copy()),
                               autograd.grad(_oracle_both_ends)(x), rtol=1e-9)
