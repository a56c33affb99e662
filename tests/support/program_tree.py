"""Arguments as trees of float leaves (dicts, lists, tuples, namedtuples, dataclasses):
their paths, central finite differences along each leaf, and the test that a caller's
argument is unchanged."""

from __future__ import annotations

import copy
import dataclasses
import functools
import types

import numpy as np


def _node(tree) -> bool:
    """A dataclass instance: its fields are its children, by name."""
    return dataclasses.is_dataclass(tree) and not isinstance(tree, type)


def _paths(tree, path=()):
    if isinstance(tree, dict):
        return [p for k in sorted(tree) for p in _paths(tree[k], (*path, k))]
    if isinstance(tree, (list, tuple)):
        return [p for i, v in enumerate(tree) for p in _paths(v, (*path, i))]
    if _node(tree):
        return [p for f in dataclasses.fields(tree)
                for p in _paths(getattr(tree, f.name), (*path, f.name))]
    return [path]


def _get(tree, path):
    for k in path:
        tree = getattr(tree, k) if _node(tree) and isinstance(k, str) else tree[k]
    return tree


def _set(tree, path, value):
    """``tree`` with the leaf at ``path`` replaced: dicts, lists and dataclasses are written
    in place (callers pass copies), namedtuples rebuilt; a plain tuple's leaf is refused."""
    if not path:
        return value
    k = path[0]
    child = _set(_get(tree, (k,)), path[1:], value)
    if _node(tree):
        setattr(tree, k, child)
    elif isinstance(tree, tuple):
        if not hasattr(tree, "_fields"):
            raise TypeError("tuple leaf")
        return tree._replace(**{tree._fields[k]: child})
    else:
        tree[k] = child
    return tree


_GENERATORS = (np.random.RandomState, np.random.Generator)


def draw_states(args: list) -> list:
    """Where each random generator among the arguments stands (after a run: what it drew)."""
    out = []
    for a in args:
        if isinstance(a, np.random.RandomState):
            kind, keys, *rest = a.get_state()
            out.append((kind, keys.tobytes(), *rest))
        elif isinstance(a, np.random.Generator):
            out.append(a.bit_generator.state)
    return out


def _same(a, b) -> bool:
    """Equal values and structure (the caller's argument against its saved copy).  A random
    generator's draws advance its state as NumPy's own do: only its type is compared."""
    if isinstance(a, _GENERATORS):        # (deep copies: each run draws the same numbers)
        return type(a) is type(b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(_same, a, b))
    if _node(a):
        return type(a) is type(b) and all(_same(getattr(a, f.name), getattr(b, f.name))
                                          for f in dataclasses.fields(a))
    if isinstance(a, functools.partial):
        return (type(b) is functools.partial and a.func is b.func
                and _same(list(a.args), list(b.args)) and _same(a.keywords, b.keywords))
    if a is b or isinstance(a, (types.FunctionType, types.BuiltinFunctionType, np.ufunc, type)):
        return a is b
    if hasattr(a, "__dict__") and not isinstance(a, (np.ndarray, np.generic)):
        return type(a) is type(b) and _same(vars(a), vars(b))
    return type(a) is type(b) and np.array_equal(a, b)


def finite_differences(fn, args: list, eps: float, wrt: tuple | None = None) -> list:
    """Central differences of ``fn`` for every float leaf of every argument in ``wrt`` (all
    by default), on copies."""
    out = []
    for i, arg in enumerate(args):
        if wrt is not None and i not in wrt:
            continue
        for path in _paths(arg):
            leaf = _get(arg, path)
            g = np.zeros(np.shape(leaf))
            flat = g.reshape(-1)
            for j in range(flat.size):
                vals = []
                for sign in (1.0, -1.0):
                    values = copy.deepcopy(args)
                    x = np.array(leaf, dtype=np.float64)
                    x.reshape(-1)[j] += sign * eps
                    new = type(leaf)(x) if isinstance(leaf, (float, np.floating)) else x
                    values[i] = _set(values[i], path, new)
                    vals.append(float(fn(*values)))
                flat[j] = (vals[0] - vals[1]) / (2 * eps)
            out.append(g)
    return out


def _flat_gradient(grads, args) -> list:
    return [np.asarray(_get(g, path), dtype=np.float64)
            for g, a in zip(grads, args) for path in _paths(a)]

