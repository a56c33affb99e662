"""A loop over a list whose body writes into that list: Python's iterator reads each item as
it is when reached (``a[2] = ...`` in the first pass changes what the third pass sees), while
srcgrad unrolls such a loop over the items the list holds when it begins.  The compiler
refuses the write at its line (it used to give the gradient of the snapshot: wrong); default
mode gets the right gradient on the eager engine; a loop over a copy compiles."""

from __future__ import annotations

import warnings

import autograd
import autograd.numpy as anp
import numpy as np
import pytest
from compiled_helpers import define

import srcgrad
from srcgrad.errors import CompileError

SOURCE = """
    def pairs(x):
        t = 0.0
        a = [(x, 1.0), (x * 2.0, 2.0), (x * 3.0, 3.0)]
        for q, w in a:
            a[2] = (q * 1.5, w)
            t = t + np.sin(q) * w
        return np.sum(t)

    def enumerated(x):
        t = 0.0
        a = [(x, 1.0), (x * 2.0, 2.0)]
        for i, (q, w) in enumerate(a):
            if i == 0:
                a[1] = (q * 4.0, w)
            t = t + np.cos(q) * w
        return np.sum(t)

    def over_a_copy(x):
        t = 0.0
        a = [(x, 1.0), (x * 2.0, 2.0), (x * 3.0, 3.0)]
        for q, w in a[:]:
            a[2] = (q * 1.5, w)
            t = t + np.sin(q) * w
        return np.sum(t) + np.sum(a[2][0])
    """

X = np.array([0.3, 0.7])


def _fn(np_module, name):
    return define(SOURCE, {"np": np_module}, name=name)


@pytest.mark.parametrize("name, line", [("pairs", 6), ("enumerated", 15)])
def test_a_write_into_the_list_being_unrolled_is_refused_then_right(name, line):
    with pytest.raises(CompileError, match="loop over a copy") as info:
        srcgrad.grad(_fn(np, name), strict=True)(X)
    assert info.value.lineno == line
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", srcgrad.FallbackWarning)
        got = srcgrad.grad(_fn(np, name))(X)
    np.testing.assert_allclose(got, autograd.grad(_fn(anp, name))(X), rtol=1e-12)


def test_a_loop_over_a_copy_compiles():
    got = srcgrad.grad(_fn(np, "over_a_copy"), strict=True)(X)
    np.testing.assert_allclose(got, autograd.grad(_fn(anp, "over_a_copy"))(X), rtol=1e-12)
