"""Writes in place into Arrays (NumPy's semantics) after an operation read them.

A node keeps an alias of each Array it reads, and an Array written after a node kept its data
moves onto a copy: the gradient is that of what NumPy computed, first and second order.
Views taken before such a write are stale and refused; a plain Tensor keeps PyTorch's refusal.
"""

from __future__ import annotations

import numpy as np
import pytest

import srcgrad
from srcgrad.runtime.eager.autograd import grad as autograd_grad
from srcgrad.runtime.eager.ndarray import Array, as_array_constant, as_array_leaf, private_copy

X = np.random.RandomState(0).randn(3, 4)


def _normalised(x):
    """``sum(p**2) + sum(exp(l))`` with ``p /= p.sum(...)`` and ``l -= l.max(...)``."""
    p = np.exp(x)
    p /= p.sum(axis=1, keepdims=True)
    l = x * 2.0                                      # noqa: E741
    l -= l.max(axis=1, keepdims=True)
    p[0] = p[0] * 3.0                                # a write after the division read p
    return np.sum(p ** 2) + np.sum(np.exp(l))


def _fd(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += eps
        down[i] -= eps
        g[i] = (f(up) - f(down)) / (2 * eps)
    return g


def _leaf_and_copy(x):
    leaf = as_array_leaf(x.copy())
    return leaf, private_copy(leaf)


def test_gradient_after_writes_into_what_nodes_read():
    leaf, x = _leaf_and_copy(X)
    out = _normalised(x)
    assert isinstance(out, Array)
    assert float(out._data) == pytest.approx(_normalised(X.copy()), rel=1e-14)
    (g,) = autograd_grad([out], [leaf])
    np.testing.assert_allclose(g._data, _fd(_normalised, X), rtol=1e-6, atol=1e-8)


def test_second_order_after_writes_into_what_nodes_read():
    v = np.random.RandomState(1).randn(*X.shape)

    def first(x):
        leaf, copy = _leaf_and_copy(x)
        (g,) = autograd_grad([_normalised(copy)], [leaf])
        return g._data

    leaf, x = _leaf_and_copy(X)
    (g,) = autograd_grad([_normalised(x)], [leaf], create_graph=True)
    (hv,) = autograd_grad([g], [leaf], [srcgrad.tensor(v)])
    want = (first(X + 1e-5 * v) - first(X - 1e-5 * v)) / 2e-5
    np.testing.assert_allclose(hv._data, want, rtol=1e-5, atol=1e-7)


def test_a_view_taken_before_its_base_moved_is_refused():
    leaf, x = _leaf_and_copy(X)
    e = np.exp(x)
    row = e[0]
    e *= 2.0
    with pytest.raises(RuntimeError, match="written in place after this view"):
        np.sum(row)


def test_a_write_through_a_view_into_what_a_node_read_is_refused_not_wrong():
    leaf, x = _leaf_and_copy(X)
    e = np.exp(x)
    row = e[0]
    row *= 2.0                                       # NumPy writes e too; ExpBackward read e
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        autograd_grad([np.sum(e)], [leaf])


def test_an_array_handed_to_numpy_keeps_its_memory_and_refuses_a_gradient():
    leaf, x = _leaf_and_copy(X)
    e = np.exp(x)
    buf = as_array_constant(np.zeros(4))
    seen = np.asarray(buf)                           # NumPy holds buf's memory now
    assert seen is buf._data
    with pytest.raises(RuntimeError, match="handed to NumPy as a plain array"):
        buf[0] = e[0, 0]


def test_a_constant_operand_of_a_function_without_a_rule_is_numpy_own():
    c = as_array_constant(np.array([3.0, 1.0, 2.0, 1.0]))
    np.testing.assert_array_equal(np.unique(c), [1.0, 2.0, 3.0])
    leaf, x = _leaf_and_copy(X[0])
    with pytest.raises(TypeError, match=r"test_array_writes\.py:\d+ .*numpy\.unique has no"):
        np.unique(x)


def test_a_tensor_keeps_pytorchs_refusal():
    x = srcgrad.tensor(X, requires_grad=True)
    p = x.exp()
    p /= p.sum(dim=1, keepdim=True)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        p.sum().backward()


def test_a_numpy_function_writing_into_what_a_node_reads_is_refused():
    leaf, x = _leaf_and_copy(X[0])
    counts = as_array_constant(np.zeros(4))
    y = x * counts                                   # MulBackward reads counts for x
    other = as_array_constant(np.zeros(4))
    z = x * other
    with pytest.raises(RuntimeError, match=r"test_array_writes\.py:\d+ .*wrote in place"):
        np.copyto(other, np.ones(4))
    assert z.requires_grad
    np.add.at(counts, [0, 0, 2], 1.0)                # followed: a recorded write, as a[...] =
    np.testing.assert_array_equal(counts._data, [2.0, 0.0, 1.0, 0.0])
    fresh = as_array_constant(np.zeros(4))
    np.add.at(fresh, [0, 0, 2], 1.0)                 # read by nothing: NumPy's own values
    np.testing.assert_array_equal(fresh._data, [2.0, 0.0, 1.0, 0.0])
    assert y.requires_grad
    y.sum().backward()                               # y read counts before the write
    np.testing.assert_array_equal(leaf.grad._data, np.zeros(4))
