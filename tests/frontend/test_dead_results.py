"""Values nothing reads are not carried: a layer's ``cache`` tuple, built in one branch and
discarded by the caller (``out, _ = layer(...)``), and a branch's name the function never
reads.  Compiled (strict) == default mode == HIPS autograd; where the value is read, the
tuple assigned in a branch is still refused, naming the line."""

from __future__ import annotations

import warnings

import autograd
import autograd.numpy as anp
import numpy as np
import pytest
from compiled_helpers import define

import srcgrad
from srcgrad.errors import CompileError

LAYER = """
    def layer(x, gamma, cfg):
        cache = None
        if cfg['mode'] == 'train':
            mu = x.mean(axis=0)
            y = (x - mu) * gamma
            cache = (x, mu, gamma)
        else:
            y = x * gamma
        return y, cache

    def loss(x, gamma, cfg):
        out, _ = layer(x, gamma, cfg)
        return np.sum(out ** 2)

    def reads_cache(x, gamma, cfg):
        out, c = layer(x, gamma, cfg)
        return np.sum(out ** 2) + np.sum(c[1])

    def top_level(x, flag):
        cache = None
        if flag > 0:
            y = np.sin(x)
            cache = (x, y)
        else:
            y = np.cos(x)
        return np.sum(y)

    def loop_reads(x, n):
        cache = (x, x)
        total = 0.0
        for i in range(n):
            total = total + np.sum(cache[0])
            if total > 0:
                cache = (x * 2, x)
            else:
                cache = (x * 3, x)
        return total
    """

X = np.array([[0.5, -1.0, 2.0], [0.3, 0.7, -0.2]])
GAMMA = np.array([1.5, -0.5, 2.0])


def _fns(np_module):
    namespace = {"np": np_module}
    define(LAYER, namespace, name="layer")
    return namespace


@pytest.mark.parametrize("mode", ["train", "test"])
def test_a_discarded_cache_tuple_built_in_a_branch_compiles(mode):
    mine, theirs = _fns(np), _fns(anp)
    cfg = {"mode": mode}
    want = autograd.grad(theirs["loss"], (0, 1))(X, GAMMA, cfg)
    got = srcgrad.grad(mine["loss"], wrt=(0, 1), strict=True)(X, GAMMA, cfg)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12)


def test_a_branch_name_never_read_is_not_carried():
    mine, theirs = _fns(np), _fns(anp)
    for flag in (1.0, -1.0):
        got = srcgrad.grad(mine["top_level"], strict=True)(X[0], flag)
        np.testing.assert_allclose(got, autograd.grad(theirs["top_level"])(X[0], flag))


def test_a_cache_that_is_read_is_still_refused_at_its_branch():
    mine, theirs = _fns(np), _fns(anp)
    with pytest.raises(CompileError, match="tuple assigned in a branch"):
        srcgrad.grad(mine["reads_cache"], wrt=(0, 1), strict=True)(X, GAMMA, {"mode": "train"})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", srcgrad.FallbackWarning)
        got = srcgrad.grad(mine["reads_cache"], wrt=(0, 1))(X, GAMMA, {"mode": "train"})
    want = autograd.grad(theirs["reads_cache"], (0, 1))(X, GAMMA, {"mode": "train"})
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12)


def test_a_tuple_read_by_the_next_iteration_is_carried_or_refused():
    """``cache`` is read at the top of the loop: never dropped from the branch, so the
    compiler refuses it (default mode is right)."""
    mine, theirs = _fns(np), _fns(anp)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", srcgrad.FallbackWarning)
        got = srcgrad.grad(mine["loop_reads"])(X[0], 3)
    np.testing.assert_allclose(got, autograd.grad(theirs["loop_reads"])(X[0], 3))
    with pytest.raises(CompileError):
        srcgrad.grad(mine["loop_reads"], strict=True)(X[0], 3)


UNBOUND = """
    def layer(x, cfg):
        if cfg['mode'] == 'train':
            cache = (x,)
        y = x * 2.0
        return y, cache

    def loss(x, cfg):
        out, _ = layer(x, cfg)
        return np.sum(out)
    """


def test_a_discarded_name_that_may_be_unbound_is_kept():
    """``return y, cache`` with ``cache`` bound on one path only: Python raises there, so the
    item is not left out (the compiler refuses; default mode raises as Python does)."""
    fn = define(UNBOUND, {"np": np}, name="loss")
    with pytest.raises(CompileError):
        srcgrad.grad(fn, strict=True)(X[0], {"mode": "test"})
    with pytest.raises(UnboundLocalError), warnings.catch_warnings():
        warnings.simplefilter("ignore", srcgrad.FallbackWarning)
        srcgrad.grad(fn)(X[0], {"mode": "test"})
