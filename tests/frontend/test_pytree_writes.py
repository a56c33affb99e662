"""Pytree arguments (dicts, lists, tuples, nested) written into, and dicts read in insertion
order: each program's gradient equals finite differences of the plain function, or it is
refused with a CompileError; the caller's arguments are never changed."""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest
from compiled_helpers import define
from conftest import numerical_grad

import srcgrad
from srcgrad.errors import CompileError

W0 = np.array([[1.0, 2.0], [3.0, 4.0]])
X0 = np.array([0.3, -0.7])
CONTAINERS = {                     # how the argument holds W, and how the code reaches it
    "dict": (lambda w: {"W": w}, "p['W']"),
    "list": (lambda w: [w], "p[0]"),
    "tuple": (lambda w: (w,), "p[0]"),
    "nested": (lambda w: {"l": [{"W": w}]}, "p['l'][0]['W']"),
    "list of tuples": (lambda w: [(w, 1.0)], "p[0][0]"),
}
WRITES = {
    "W += 1.0": "W = {a}\n    W += 1.0",
    "W *= 2.0": "W = {a}\n    W *= 2.0",
    "store": "{a}[0] = 0.0",
    "augmented store": "{a}[0] += 1.0",
    "store through a name": "W = {a}\n    W[0, 1] = 5.0",
    "mask": "W = {a}\n    W[W > 2] = 0.0",
    "fancy": "W = {a}\n    W[[0, 1], [1, 0]] = 7.0",
    "through .T": "{a}.T[0] = 0.0",
    "through reshape": "{a}.reshape(-1)[0] = 9.0",
    "through a named .T": "V = {a}.T\n    V[0] *= 3.0",
    "through a slice": "r = {a}[0:1]\n    r[0, 0] = -2.0",
    "a value with a gradient": "W = {a}\n    W[0] = x * 2.0",
}


def _flat(tree):
    if isinstance(tree, dict):
        return [v for k in tree for v in _flat(tree[k])]
    if isinstance(tree, (list, tuple)):
        return [v for item in tree for v in _flat(item)]
    return [tree]


def _fd_x(fn, p, x):
    return numerical_grad(lambda v: float(fn(copy.deepcopy(p), v)), [x.copy()], 0)


def _cases():
    for cname in CONTAINERS:
        for wname in WRITES:
            for diff in (False, True):
                yield pytest.param(cname, wname, diff,
                                   id=f"{cname}-{wname}-{'wrt' if diff else 'data'}")


@pytest.mark.parametrize("cname,wname,diff", list(_cases()))
@pytest.mark.parametrize("strict", [True, False])
def test_write_into_pytree_leaf(cname, wname, diff, strict):
    build, reach = CONTAINERS[cname]
    body = WRITES[wname].format(a=reach)
    fn = define(f"def f(p, x):\n    {body}\n"
                f"    return np.sum({reach} @ x) + np.sum({reach} ** 2) * x[0]\n",
                {"np": np})
    p, x = build(W0.copy()), X0.copy()
    saved = copy.deepcopy((p, x))
    wrt = (0, 1) if diff else 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            got = srcgrad.grad(fn, wrt=wrt, strict=strict)(p, x)
        except CompileError as exc:
            assert "internal error" not in str(exc), str(exc)
            return
    for a, b in zip(_flat((p, x)), _flat(saved)):            # the caller's values: untouched
        np.testing.assert_array_equal(a, b)
    gx = got[1] if diff else got
    np.testing.assert_allclose(gx, _fd_x(fn, p, x), rtol=1e-5, atol=1e-7)


ORDERED = {
    "values": "for W in p.values():\n        h = h @ W",
    "keys": "for k in p:\n        h = h @ p[k]",
    "items": "for k, W in p.items():\n        h = h @ W",
}


@pytest.mark.parametrize("loop", sorted(ORDERED))
def test_dict_loops_follow_insertion_order(loop):
    """A dict whose insertion order is not its sorted order: a loop over it runs in insertion
    order; the eager fallback rebuilds the caller's dict in that order (it was sorted)."""
    fn = define(f"def f(p, x):\n    h = x\n    {ORDERED[loop]}\n    return np.sum(h ** 2)\n",
                {"np": np})
    a, b = np.array([[1.0, 2.0], [0.0, 1.0]]), np.array([[0.0, 1.0], [1.0, 3.0]])
    p = {"b": a, "a": b}
    for strict in (True, False):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                gp, gx = srcgrad.grad(fn, wrt=(0, 1), strict=strict)(p, X0.copy())
            except CompileError as exc:
                assert strict and "internal error" not in str(exc)
                continue
        assert list(p) == ["b", "a"]
        np.testing.assert_allclose(gx, numerical_grad(lambda v: float(fn(p, v)), [X0.copy()], 0),
                                   rtol=1e-5, atol=1e-7)
        for k in p:
            def at(w, k=k):
                q = dict(p)
                q[k] = w
                return float(fn(q, X0.copy()))
            np.testing.assert_allclose(gp[k], numerical_grad(at, [p[k].copy()], 0), rtol=1e-5,
                                       atol=1e-7)


def test_pytree_structure_keeps_insertion_order():
    from srcgrad.transforms import pytree
    tree = {"b": 1.0, "a": [2.0, {"d": 3.0, "c": 4.0}]}
    leaves, structure = pytree.flatten(tree)
    assert leaves == [2.0, 3.0, 4.0, 1.0] or leaves == [2.0, 4.0, 3.0, 1.0]
    rebuilt = pytree.unflatten(structure, leaves)
    assert rebuilt == tree and list(rebuilt) == ["b", "a"] and list(rebuilt["a"][1]) == ["d", "c"]
    assert pytree.flatten({"a": 1.0, "b": 2.0})[1] != pytree.flatten({"b": 2.0, "a": 1.0})[1]


@pytest.mark.parametrize("strict", [True, False])
def test_a_dict_whose_keys_do_not_compare_is_a_pytree(strict):
    """``{0: a, 'b': b}``: sorting its keys raised TypeError in both modes."""
    fn = define("def f(p):\n    return np.sum(p[0] ** 2) + np.sum(np.sin(p['b']))\n",
                {"np": np})
    a, b = np.array([1.0, 2.0]), np.array([0.5, 0.1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = srcgrad.grad(fn, strict=strict)({0: a, "b": b})
    assert list(got) == [0, "b"]
    np.testing.assert_allclose(got[0], 2 * a)
    np.testing.assert_allclose(got["b"], np.cos(b))
