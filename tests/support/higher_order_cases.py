"""Cases and oracles for forward mode, Jacobians and higher order.

Each case is a NumPy function defined here (so the compiler can read its source) and its
arguments.  The oracle is JAX running the *same* code object with its globals copied and
``np`` rebound to ``jax.numpy`` (helpers of this module are rebound with it, so a call of
``_helper`` inside a case runs on JAX too).  Only where JAX cannot run the NumPy spelling
(writes in place) does a case name a functional ``ref`` spelling of the same function.
JAX oracles are built from ``jvp`` and ``jacrev`` only (``vmap`` of a jvp, as ``jacfwd`` and
``jax.hessian`` do, cannot run Python branches on data); results are cached per case.
"""

from __future__ import annotations

import types
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)
tree_leaves, tree_map, tree_structure = (jax.tree_util.tree_leaves, jax.tree_util.tree_map,
                                         jax.tree_util.tree_structure)


def copy_args(args):
    """Private copies of every array in ``args`` (a pytree)."""
    return tree_map(lambda a: a.copy() if isinstance(a, np.ndarray) else a, args)


def _helper(a, b):
    return np.sin(a) * b + a


def _split(a):
    return np.sin(a), np.cos(a) * a


def f_float(x):
    return np.sin(x) * x ** 3 + np.exp(0.5 * x)


def f_two_floats(x, y):
    return x * np.sin(y) + y ** 2 * x ** 3


def f_0d(x):
    return np.cos(x) * np.sqrt(x + 2.0)


def f_elementwise(x):
    return np.sin(x) * np.exp(-x) + np.tanh(x) ** 2 + np.log1p(x * x)


def f_elementwise_sum(x):
    return np.sum(np.sin(x) * np.exp(-x) + np.tanh(x) ** 2 / (1.0 + x * x))


def f_matmul(x, w):
    return np.tanh(x @ w)


def f_mlp_loss(w, x, y):
    return np.mean((np.tanh(x @ w) - y) ** 2)


def f_sum_keepdims(x):
    return x / np.sum(x * x, axis=1, keepdims=True)


def f_mean_axis(x):
    return np.sum(np.mean(np.sin(x), axis=0) * np.sum(x * x, axis=1).sum())


def f_broadcast(a, b):
    return a * b + a / (b * b + 1.0)


def f_broadcast_sum(a, b):
    return np.sum(a * b - np.exp(a / (b * b + 1.0)))


def f_indexing(x):
    return x[1:, ::2] * x[0, 1] + x[[0, 2], 1:3].sum() + x[-1, 0] ** 2


def f_setitem(x):
    y = np.zeros_like(x)
    y[0] = x[1] * x[2]
    y[1:] = np.sin(x[:-1])
    return y


def ref_setitem(x):
    return np.concatenate([(x[1] * x[2])[None], np.sin(x[:-1])])


def f_setitem_sum(x):
    y = x * 1.0
    y[1] = y[0] * y[2]
    y[2] += np.sin(y[1])
    return np.sum(y * y)


def ref_setitem_sum(x):
    y1 = x[0] * x[2]
    y = np.stack([x[0], y1, x[2] + np.sin(y1), x[3]])
    return np.sum(y * y)


def f_branch(x):
    if np.sum(x) > 0:
        y = x * x * 2.0
    else:
        y = np.sin(x) * x
    return np.sum(y * x)


def f_for(x, w):
    h = x
    for i in range(3):
        h = np.tanh(h * w + 0.1 * i)
    return np.sum(h * h)


def f_while(x):
    s = x
    while np.sum(s * s) > 0.5:
        s = s * np.cos(s) * 0.7
    return s


def f_break(x):
    acc = x * 0.0
    for i in range(10):
        acc = acc + np.sin(x * (i + 1))
        if np.sum(acc) > 1.5:
            break
    return np.sum(acc * x)


def f_helpers(x, y):
    s, c = _split(x)
    return np.sum(_helper(x, y) * s + _helper(y, c))


def f_append_stack(x):
    xs = []
    for i in range(3):
        xs.append(x[i] * x)
    return np.stack(xs)


def f_comprehension(x):
    return sum([np.sin(x * k) / k for k in range(1, 4)])


def f_dict_params(p, x):
    return np.sum(np.tanh(x @ p["w"] + p["b"]) ** 2)


def f_tuple_params(p, x):
    w, b = p
    return np.tanh(x @ w + b)


def f_where(x):
    return np.where(x > 0, x * x, np.sin(x))


def f_max(x):
    return np.max(x, axis=1) * np.sum(x)


def f_logsumexp(x):
    m = np.max(x)
    return m + np.log(np.sum(np.exp(x - m)))


def f_softmax(x):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


def f_solve(a, b):
    return np.linalg.solve(a, b)


def f_inv(a):
    return np.sum(np.linalg.inv(a) * np.array([[1.0, 2.0, 0.5], [0.3, -1.0, 2.0],
                                               [1.5, 0.2, -0.7]]))


def f_det(a):
    return np.linalg.det(a)


def f_reshape(x):
    return x.reshape(2, 6).T @ x.reshape(2, 6) * 0.5


@dataclass
class Case:
    """A function, its arguments, and a functional spelling for JAX where it needs one."""

    name: str
    fn: object
    args: tuple
    ref: object = None

    @property
    def scalar(self) -> bool:
        return np.ndim(self.fn(*copy_args(self.args))) == 0

    @property
    def f32(self) -> bool:
        return any(getattr(a, "dtype", None) == np.float32 for a in tree_leaves(self.args))

    def __repr__(self) -> str:
        return self.name


def _r(*shape, lo=-1.0, hi=1.0, seed=0):
    return np.random.default_rng(seed + sum(shape)).uniform(lo, hi, shape)


def _spd(seed=0):
    return _r(3, 3, lo=-0.5, hi=0.5, seed=seed) + 3.0 * np.eye(3)


CASES = [
    Case("float", f_float, (0.7,)),
    Case("two_floats", f_two_floats, (0.7, -1.3)),
    Case("0d", f_0d, (np.array(0.4),)),
    Case("elementwise", f_elementwise, (_r(4),)),
    Case("elementwise_sum", f_elementwise_sum, (_r(3, 2),)),
    Case("matmul", f_matmul, (_r(3, 4), _r(4, 2, seed=1))),
    Case("mlp_loss", f_mlp_loss, (_r(4, 2), _r(3, 4, seed=1), _r(3, 2, seed=2))),
    Case("sum_keepdims", f_sum_keepdims, (_r(2, 3, lo=0.5),)),
    Case("mean_axis", f_mean_axis, (_r(3, 2),)),
    Case("broadcast", f_broadcast, (_r(3, 1), _r(1, 2, seed=1))),
    Case("broadcast_sum", f_broadcast_sum, (_r(2, 3), _r(3, seed=1))),
    Case("indexing", f_indexing, (_r(3, 4),)),
    Case("setitem", f_setitem, (_r(4),), ref_setitem),
    Case("setitem_sum", f_setitem_sum, (_r(4),), ref_setitem_sum),
    Case("branch_true", f_branch, (_r(3, lo=0.1),)),
    Case("branch_false", f_branch, (_r(3, hi=-0.1),)),
    Case("for", f_for, (_r(3), _r(3, seed=1))),
    Case("while", f_while, (_r(3, lo=0.5),)),
    Case("break", f_break, (_r(3, lo=0.1, hi=0.5),)),
    Case("helpers", f_helpers, (_r(3), _r(3, seed=1))),
    Case("append_stack", f_append_stack, (_r(3),)),
    Case("comprehension", f_comprehension, (_r(3),)),
    Case("dict_params", f_dict_params, ({"w": _r(3, 2), "b": _r(2, seed=1)}, _r(2, 3, seed=2))),
    Case("tuple_params", f_tuple_params, ((_r(3, 2), _r(2, seed=1)), _r(2, 3, seed=2))),
    Case("where", f_where, (np.array([0.5, -0.7, 1.2, -0.3]),)),
    Case("max", f_max, (np.array([[0.1, 0.9, -0.4], [0.6, -0.2, 0.3]]),)),
    Case("logsumexp", f_logsumexp, (_r(4),)),
    Case("softmax", f_softmax, (_r(2, 3),)),
    Case("solve", f_solve, (_spd(), _r(3, seed=1))),
    Case("inv", f_inv, (_spd(1),)),
    Case("det", f_det, (_spd(2),)),
    Case("reshape", f_reshape, (_r(12),)),
    Case("f32_matmul", f_matmul, (_r(3, 4).astype(np.float32),
                                  _r(4, 2, seed=1).astype(np.float32))),
    Case("f32_sum", f_elementwise_sum, (_r(3, 2).astype(np.float32),)),
]
BY_NAME = {c.name: c for c in CASES}
SCALAR = [c for c in CASES if c.scalar]


def tangents_for(case: Case, seed: int = 7):
    """A random tangent shaped (and typed) like each argument."""
    rng = np.random.default_rng(seed)

    def one(a):
        if isinstance(a, float):
            return float(rng.uniform(-1, 1))
        return rng.uniform(-1, 1, np.shape(a)).astype(np.asarray(a).dtype)
    return tree_map(one, case.args)


def rebound(fn):
    """``fn`` running on ``jax.numpy``: its module's globals copied, ``np`` rebound, and the
    module's own functions (the helpers it calls) rebound to the same copy."""
    home = fn.__globals__
    scope = dict(home, np=jnp)
    for name, value in home.items():
        if isinstance(value, types.FunctionType) and value.__globals__ is home:
            scope[name] = types.FunctionType(value.__code__, scope, value.__name__,
                                             value.__defaults__, value.__closure__)
    return scope[fn.__name__] if fn.__name__ in scope else types.FunctionType(
        fn.__code__, scope, fn.__name__, fn.__defaults__, fn.__closure__)


_ORACLE: dict = {}


def oracle(case: Case, kind: str, wrt=0):
    """JAX's ``jvp`` (value, tangent), ``hvp`` (jvp of grad), ``jac`` (jacrev) or ``hess``
    (jacrev of jacrev) of the case, cached."""
    key = (case.name, kind, wrt)
    if key not in _ORACLE:
        fn = rebound(case.ref or case.fn)
        if kind == "jvp":
            def run(*args):
                return jax.jvp(fn, args, tuple(tangents_for(case)))
        elif kind == "hvp":              # jvp of the gradient (wrt argument 0)
            def run(*args):
                return jax.jvp(jax.grad(fn), args, tuple(tangents_for(case)))
        elif kind == "jac":
            run = jax.jacrev(fn, argnums=wrt)
        else:
            run = jax.jacrev(jax.jacrev(fn, argnums=wrt), argnums=wrt)
        try:                             # compiled once: far faster than op by op
            _ORACLE[key] = jax.jit(run)(*copy_args(case.args))
        except jax.errors.ConcretizationTypeError:      # Python branches on data
            _ORACLE[key] = run(*copy_args(case.args))
    return _ORACLE[key]


def assert_tree_close(got, want, rtol, atol, f32_dtypes=False):
    """Same pytree structure, and leaves equal within tolerances; with ``f32_dtypes``, a
    leaf that JAX keeps float32 is float32 here too."""
    assert tree_structure(got) == tree_structure(want), (tree_structure(got),
                                                         tree_structure(want))
    for g, w in zip(tree_leaves(got), tree_leaves(want)):
        assert np.shape(g) == np.shape(w), (np.shape(g), np.shape(w))
        if f32_dtypes and np.asarray(w).dtype == np.float32:
            assert np.asarray(g).dtype == np.float32, np.asarray(g).dtype
        np.testing.assert_allclose(np.asarray(g, dtype=np.float64),
                                   np.asarray(w, dtype=np.float64), rtol=rtol, atol=atol)


def tolerances(case: Case):
    """(rtol, atol) against JAX: float32 cases loosely, float64 ones tightly."""
    return (2e-4, 2e-5) if case.f32 else (1e-8, 1e-10)


def _upcast(args):
    return tree_map(lambda a: a.astype(np.float64) if isinstance(a, np.ndarray) else a, args)


def fd_jvp(fn, args, tangents, eps=1e-6):
    """Central differences of ``fn`` at ``args`` along ``tangents`` (pytrees, float64)."""
    args, tangents = _upcast(args), _upcast(tangents)
    plus = fn(*copy_args(tree_map(lambda a, t: a + eps * t, args, tangents)))
    minus = fn(*copy_args(tree_map(lambda a, t: a - eps * t, args, tangents)))
    return tree_map(lambda p, m: (np.asarray(p) - np.asarray(m)) / (2 * eps), plus, minus)


def fd_jacobian(fn, args, p, eps=1e-6):
    """Central-difference Jacobian of ``fn`` in argument ``p`` as an (out size, in size)
    matrix, the argument's leaves flattened in pytree order."""
    args = _upcast(args)
    leaves, treedef = jax.tree_util.tree_flatten(args[p])
    columns = []
    for k, leaf in enumerate(leaves):
        for j in range(int(np.size(leaf))):
            units = [np.zeros(np.shape(v)) if not isinstance(v, float) else 0.0
                     for v in leaves]
            if isinstance(leaf, float):
                units[k] = 1.0
            else:
                units[k].reshape(-1)[j] = 1.0
            tangents = [tree_map(lambda a: a * 0.0, a) for a in args]
            tangents[p] = jax.tree_util.tree_unflatten(treedef, units)
            out = fd_jvp(fn, args, tuple(tangents), eps)
            columns.append(np.concatenate([np.ravel(o) for o in tree_leaves(out)]))
    return np.stack(columns, axis=-1)


def as_matrix(jac, out_size):
    """A Jacobian pytree (JAX's layout: the output's structure, then the argument's) as an
    (out size, in size) matrix, for comparison with ``fd_jacobian``."""
    return np.concatenate([np.reshape(np.asarray(leaf, dtype=np.float64), (out_size, -1))
                           for leaf in tree_leaves(jac)], axis=1)
