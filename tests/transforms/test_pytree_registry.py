"""Dataclasses, namedtuples and registered classes as differentiated (pytree) arguments: the
gradient is a value of the argument's own class, compiled (strict) == the eager fallback ==
central finite differences == jax, and ``srcgrad.tree``'s registry."""

from __future__ import annotations

import dataclasses
import sys
import warnings
from typing import NamedTuple

import numpy as np
import pytest
from numpy.testing import assert_allclose

import srcgrad
import srcgrad.tree
from srcgrad.errors import CompileError
from srcgrad.transforms import pytree
from srcgrad.transforms.grad import Transform

RS = np.random.RandomState(11)
X = RS.randn(5, 3)
Y = RS.randn(5, 2)


@dataclasses.dataclass
class Params:
    W: np.ndarray
    b: np.ndarray
    log_scale: float


@dataclasses.dataclass(frozen=True)
class Frozen:
    W: np.ndarray
    b: np.ndarray


class Linear(NamedTuple):
    weight: np.ndarray
    bias: np.ndarray


class Model(NamedTuple):
    hidden: Linear
    out: Frozen


@srcgrad.tree.register_dataclass
@dataclasses.dataclass
class WithMeta:
    W: np.ndarray
    power: int = 2

    def predict(self, x):
        return x @ self.W


srcgrad.tree.register_dataclass(WithMeta, data_fields=["W"], meta_fields=["power"])


class Pair:
    """A class registered by functions (no field names: compiled code cannot read it)."""

    def __init__(self, a, b):
        self.a, self.b = a, b


srcgrad.tree.register_pytree_node(Pair, lambda p: ((p.a, p.b), None),
                                  lambda aux, children: Pair(*children))


def dataclass_loss(p, x, y):
    return np.mean((np.exp(p.log_scale) * np.tanh(x @ p.W + p.b) - y) ** 2)


def frozen_loss(p, x, y):
    return np.sum((x @ p.W + p.b - y) ** 2)


def linear(p, x):
    return x @ p.weight + p.bias


def model_loss(m, x, y):
    h = np.tanh(linear(m.hidden, x))
    return np.sum((h @ m.out.W + m.out.b - y) ** 2)


def meta_loss(p, x, y):
    return np.sum((p.predict(x) - y) ** p.power)


def pair_loss(p, x, y):
    return np.sum((x @ p.a + p.b - y) ** 2)


def params():
    return Params(RS.randn(3, 2), RS.randn(2), 0.3)


def model():
    return Model(Linear(RS.randn(3, 4), RS.randn(4)), Frozen(RS.randn(4, 2), RS.randn(2)))


CASES = {
    "dataclass": (dataclass_loss, params),
    "frozen": (frozen_loss, lambda: Frozen(RS.randn(3, 2), RS.randn(2))),
    "nested_namedtuple": (model_loss, model),
    "meta_fields": (meta_loss, lambda: WithMeta(RS.randn(3, 2), 2)),
}


def fd_tree(f, tree, *rest, eps=1e-6):
    leaves, structure = pytree.flatten(tree)
    out = []
    for i, leaf in enumerate(leaves):
        x0 = np.asarray(leaf, dtype=float)
        g = np.zeros_like(x0)
        for k in np.ndindex(x0.shape):
            g[k] = (_moved(f, leaves, structure, i, k, eps, rest) -
                    _moved(f, leaves, structure, i, k, -eps, rest)) / (2 * eps)
        out.append(g)
    return out


def _moved(f, leaves, structure, i, k, delta, rest):
    x0 = np.asarray(leaves[i], dtype=float)
    moved = x0.copy()
    moved[k] += delta
    new = list(leaves)
    new[i] = moved if x0.ndim else float(moved)
    return f(pytree.unflatten(structure, new), *rest)


def eager(f, args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = Transform(f, "grad", 0)
        t._fn, t.fallback_reason, t._latest = None, "test", None
        return t(*args)


def same_tree(got, want, rtol=1e-10, atol=1e-12):
    got_leaves, got_structure = pytree.flatten(got)
    want_leaves, want_structure = pytree.flatten(want)
    assert repr(got_structure) == repr(want_structure)
    for a, b in zip(got_leaves, want_leaves):
        assert_allclose(a, b, rtol=rtol, atol=atol)


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradient_is_of_the_arguments_class(name):
    f, make = CASES[name]
    tree = make()
    g = srcgrad.grad(f, strict=True)(tree, X, Y)
    assert type(g) is type(tree)
    same_tree(g, eager(f, (tree, X, Y)))
    for a, b in zip(pytree.flatten(g)[0], fd_tree(f, tree, X, Y)):
        assert_allclose(a, b, rtol=1e-5, atol=1e-7)


def test_nested_gradient_keeps_every_class():
    m = model()
    g = srcgrad.grad(model_loss, strict=True)(m, X, Y)
    assert type(g) is Model and type(g.hidden) is Linear and type(g.out) is Frozen


def test_meta_fields_are_kept_and_not_differentiated():
    p = WithMeta(RS.randn(3, 2), 4)
    g = srcgrad.grad(meta_loss, strict=True)(p, X, Y)
    assert g.power == 4 and g.W.shape == (3, 2)
    assert pytree.flatten(p)[0][0] is p.W and len(pytree.flatten(p)[0]) == 1


def test_value_and_grad_and_several_arguments():
    p, q = params(), Frozen(RS.randn(3, 2), RS.randn(2))

    def both(p, q, x, y):
        return dataclass_loss(p, x, y) + frozen_loss(q, x, y)
    value, (gp, gq) = srcgrad.value_and_grad(both, wrt=(0, 1), strict=True)(p, q, X, Y)
    assert_allclose(value, both(p, q, X, Y))
    assert type(gp) is Params and type(gq) is Frozen
    same_tree(gp, srcgrad.grad(dataclass_loss, strict=True)(p, X, Y))


@pytest.mark.parametrize("name", ["dataclass", "frozen", "nested_namedtuple"])
def test_equals_jax(name, monkeypatch):
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    for cls in (Params, Frozen):
        try:
            jax.tree_util.register_dataclass(cls, data_fields=[
                f.name for f in dataclasses.fields(cls)], meta_fields=[])
        except ValueError:
            pass                                  # registered by an earlier run
    f, make = CASES[name]
    tree = make()
    got = srcgrad.grad(f, strict=True)(tree, X, Y)
    monkeypatch.setattr(sys.modules[__name__], "np", jnp)
    want = jax.grad(f)(tree, X, Y)
    got_leaves = pytree.flatten(got)[0]
    want_leaves = jax.tree_util.tree_leaves(want)
    if name == "nested_namedtuple":                   # jax: its own field order
        want_leaves = [want.hidden.weight, want.hidden.bias, want.out.W, want.out.b]
    for a, b in zip(got_leaves, want_leaves):
        assert_allclose(a, np.asarray(b), rtol=1e-10, atol=1e-12)


def test_a_class_registered_by_functions_runs_eagerly_with_its_class():
    p = Pair(RS.randn(3, 2), RS.randn(2))
    with pytest.raises(CompileError, match="fields") as info:
        srcgrad.grad(pair_loss, strict=True)(p, X, Y)
    assert info.value.lineno == pair_loss.__code__.co_firstlineno + 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = srcgrad.grad(pair_loss)(p, X, Y)
    assert type(g) is Pair
    for a, b in zip((g.a, g.b), fd_tree(pair_loss, p, X, Y)):
        assert_allclose(a, b, rtol=1e-5, atol=1e-7)


def test_reading_a_field_that_is_not_one_is_refused():
    def bad(p, x, y):
        return np.sum(p.missing * x)
    with pytest.raises(CompileError, match="missing"):
        srcgrad.grad(bad, strict=True)(Frozen(RS.randn(3, 2), RS.randn(2)), X, Y)


def test_registry_checks_its_arguments():
    with pytest.raises(TypeError):
        srcgrad.tree.register_dataclass(Pair)
    with pytest.raises(ValueError, match="no field"):
        srcgrad.tree.register_dataclass(Frozen, data_fields=["W", "nope"])
    leaves, structure = srcgrad.tree.tree_flatten({"a": Frozen(np.ones(2), np.zeros(2))})
    assert len(leaves) == 2
    rebuilt = srcgrad.tree.tree_unflatten(structure, leaves)
    assert type(rebuilt["a"]) is Frozen


def test_arguments_are_not_changed():
    p = params()
    before = dataclasses.replace(p, W=p.W.copy(), b=p.b.copy())
    srcgrad.grad(dataclass_loss, strict=True)(p, X, Y)
    same_tree(p, before, 0, 0)


def test_vjp_answers_the_arguments_class():
    p = params()
    value, backward = srcgrad.vjp(dataclass_loss, p, X, Y)
    gp, gx, _ = backward(1.0)
    assert type(gp) is Params
    assert_allclose(value, dataclass_loss(p, X, Y))
    same_tree(gp, srcgrad.grad(dataclass_loss, strict=True)(p, X, Y))
    assert_allclose(gx, fd_plain(lambda x: dataclass_loss(p, x, Y), X), rtol=1e-5, atol=1e-7)


def fd_plain(f, x, eps=1e-6):
    g = np.zeros_like(x)
    for k in np.ndindex(x.shape):
        hi, lo = x.copy(), x.copy()
        hi[k] += eps
        lo[k] -= eps
        g[k] = (f(hi) - f(lo)) / (2 * eps)
    return g
