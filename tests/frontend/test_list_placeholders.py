"""``ys = [None] * T`` with ``T`` known only at run time, its items then written with arrays
(an RTS smoother's backward pass): the compiler refuses the write at its line (it used to
treat the list as an array and fail in the generated code); default mode gets the gradient
on the eager engine.  A list of constants written with constants (``shape = [1] * x.ndim;
shape[1] = -1``) still compiles."""

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
    def states(x):
        xs = []
        for t in range(3):
            xs.append(x * (t + 1))
        return xs

    def smooth(x):
        xs = states(x)
        T = len(xs)
        ys = [None] * T
        ys[-1] = xs[-1]
        for t in reversed(range(T - 1)):
            ys[t] = np.sin(ys[t + 1]) + xs[t]
        return np.sum(np.array(ys) ** 2)

    def broadcast_along(x, b):
        shape = [1] * x.ndim
        shape[1] = -1
        return np.sum(x * b.reshape(shape))
    """


def _fn(np_module, name):
    return define(SOURCE, {"np": np_module}, name=name)


def test_arrays_written_into_a_repeated_list_are_refused_then_fall_back():
    x = np.array([0.3, 0.5])
    with pytest.raises(CompileError, match="list built at run time") as info:
        srcgrad.grad(_fn(np, "smooth"), strict=True)(x)
    assert info.value.lineno == 12
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", srcgrad.FallbackWarning)
        got = srcgrad.grad(_fn(np, "smooth"))(x)
    np.testing.assert_allclose(got, autograd.grad(_fn(anp, "smooth"))(x), rtol=1e-12)


def test_constants_written_into_a_repeated_list_compile():
    x, b = np.ones((2, 3)), np.arange(3.0)
    got = srcgrad.grad(_fn(np, "broadcast_along"), wrt=(0, 1), strict=True)(x, b)
    want = autograd.grad(_fn(anp, "broadcast_along"), (0, 1))(x, b)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w)
