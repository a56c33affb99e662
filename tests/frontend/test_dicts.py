"""Dicts the function builds (literals, dict(), comprehensions, keys from an unrolled loop
index), dict arguments looped over in insertion order, `and`/`or` of comparisons, max/min of
a generator, and a list of data passed to a helper: compiled (strict) == eager == finite
differences, or a CompileError that names the construct."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from compiled_helpers import check_three_ways, define
from conftest import numerical_grad

import srcgrad
from srcgrad.errors import CompileError

X = np.array([0.3, -0.7, 1.1])

COMPILED = {
    "literal": """
        def f(x):
            d = {'a': x, 'b': x * 2.0, 'n': 3}
            return np.sum(d['a'] * d['b']) * d['n']
        """,
    "store and rebind a key": """
        def f(x):
            d = {'a': x}
            d['b'] = np.sin(x)
            d['a'] = d['a'] * 3.0
            d['b'] += 1.0
            return np.sum(d['a'] + d['b']) + len(d)
        """,
    "get, in, len": """
        def f(x):
            d = {'a': x}
            t = np.sum(d.get('a', 0.0) * d.get('c', 2.0))
            return t + ('a' in d) + ('z' in d) + ('z' not in d) + len(d)
        """,
    "iteration in insertion order": """
        def f(x):
            d = {'b': x, 'a': x * 2.0}
            t = 0.0
            for k in d:
                t = t + np.sum(d[k] ** 2)
            for v in d.values():
                t = t * 0.5 + np.sum(np.sin(v))
            for i, (k, v) in enumerate(d.items()):
                t = t * 0.5 + np.sum(v) * (i + 1)
            return t + len(list(d.keys())) + len(sorted(d))
        """,
    "comprehension over range": """
        def f(x):
            d = {k: x * k for k in range(3)}
            return np.sum(d[0] + d[1] * d[2])
        """,
    "comprehension over zip": """
        def f(x):
            names = ['a', 'b']
            Ws = [x, x * 3.0]
            d = {name: W for name, W in zip(names, Ws)}
            return np.sum(d['a'] * d['b'])
        """,
    "comprehension over items": """
        def f(x):
            p = {'w': x, 'v': x ** 2}
            q = {k: v * 0.5 for k, v in p.items()}
            return sum(np.sum(v ** 2) for v in q.values())
        """,
    "dict() of keywords, pairs and a dict": """
        def f(x):
            d = dict(a=x, b=x * 2.0)
            e = dict([('c', x), ('d', 2.0)], e=x)
            g = dict(d)
            g['a'] = g['a'] * 5.0
            return np.sum(d['a'] * d['b'] + e['c'] * e['d'] + g['a'] + e['e'])
        """,
    "computed key from a loop index": """
        def f(x):
            params = {'W0': x, 'W1': x * 2.0, 'b1': x + 1.0}
            h = 1.0
            for i in range(2):
                h = h * params['W' + str(i)]
            return np.sum(h * params[f'b{1}'])
        """,
    "f-string key named first": """
        def f(x):
            params = {}
            for i in range(3):
                params[f'W{i}'] = x * (i + 1.0)
            h = x
            for i in range(3):
                name = f'W{i}'
                h = np.tanh(h * params[name])
            return np.sum(h)
        """,
    "a helper takes and changes a dict": """
        def g(d, v):
            d['c'] = v * 2.0
            return d
        def f(x):
            d = {'a': x}
            e = g(d, x)
            return np.sum(e['a'] * e['c']) + np.sum(d['c'])
        """,
    "a dict of state in a loop of known length": """
        def f(x):
            state = {'h': np.zeros(3), 'acc': 0.0}
            for i in range(3):
                state['h'] = np.tanh(state['h'] + x)
                state['acc'] = state['acc'] + np.sum(state['h'])
            return state['acc']
        """,
    "a dict read in a run-time loop": """
        def f(x):
            d = {'w': x * 2.0, 's': 0.5}
            t = 0.0
            for v in x:
                t = t + np.sum(d['w'] * v) * d['s']
            return t
        """,
    "update, pop, setdefault, copy": """
        def f(x):
            d = {'a': x}
            d.update(b=x * 2.0)
            e = d.copy()
            e['a'] = x * 7.0
            c = d.setdefault('c', x ** 2)
            p = d.pop('b')
            return np.sum(d['a'] * c * p) + np.sum(e['a']) + len(d)
        """,
    "an array written through its dict": """
        def f(x):
            d = {'a': x * 1.0}
            d['a'][0] = 5.0
            return np.sum(d['a'] * x)
        """,
    "dict(x=b)['x'] (tests/frontend/test_soundness.py r_dict)": """
        def f(b):
            return np.sum(dict(x=b)["x"] ** 2)
        """,
    "two names of one dict": """
        def f(x):
            d = {'a': x}
            d2 = d
            d['c'] = x * 3.0
            return np.sum(d2['c'] * d2['a'])
        """,
    "nested dict and a list in a dict written": """
        def f(x):
            d = {'in': {'a': x}, 'l': [x, 2.0]}
            d['in']['a'] = d['in']['a'] * 4.0
            d['l'][1] = x ** 2
            return np.sum(d['in']['a'] * d['l'][1] + d['l'][0])
        """,
    "a dict read in a branch": """
        def f(x):
            d = {'a': x * 2.0, 'b': np.sin(x), 's': 3.0}
            if np.sum(x) > 0:
                t = d['a'] * d['s']
            else:
                t = d['b']
            return np.sum(t)
        """,
    "values rebound while looping over the keys": """
        def f(x):
            d = {'a': x, 'b': x * 2.0}
            for k in d:
                d[k] = d[k] * 2.0
            return np.sum(d['a'] * d['b'])
        """,
    "and of comparisons": """
        def f(x):
            s = np.sum(x)
            if s > 0.1 and s < 2.0 or not s < 5.0:
                return np.sum(x ** 2)
            return np.sum(x)
        """,
    "max and min of generators": """
        def f(x):
            n = x.shape[0]
            a = max(np.sum(x ** k) for k in range(n))
            return a + min(v * 2.0 for v in x) + max(x) + max([np.sum(x)])
        """,
    "a list of data passed to a helper that loops over it": """
        def tot(vs, v):
            out = 0.0
            for u in vs:
                out = out + np.sum(u * v)
            return out
        def f(x):
            return tot([np.ones(3), np.arange(3.0)], x)
        """,
}


@pytest.mark.parametrize("case", sorted(COMPILED))
def test_dicts_compile_exactly(case):
    fn = define(COMPILED[case], {"np": np}, name="f")
    check_three_ways(fn, [X.copy()])


def _fd(fn, args, i):
    def at(v):
        values = copy.deepcopy(args)
        values[i] = v
        return float(fn(*values))
    return numerical_grad(at, [args[i].copy()], 0)


def test_a_dict_argument_is_looped_over_in_its_insertion_order():
    fn = define("""
        def f(d, x):
            for k, v in d.items():
                x = np.sin(x * v)
            t = 0.0
            for i, v in enumerate(d.values()):
                t = t * 2.0 + np.sum(v * x) * (i + 1)
            return t + sum(np.sum(d[k]) * j for j, k in enumerate(d))
        """, {"np": np}, name="f")
    a, b, x = np.array([0.3, 0.5, 0.9]), np.array([1.2, -0.4, 0.7]), X.copy()
    g = srcgrad.grad(fn, wrt=(0, 1), strict=True)
    for d in ({"a": a, "b": b}, {"b": b, "a": a}, {"a": a, "b": b}):
        saved = copy.deepcopy(d)
        gd, gx = g(d, x)
        np.testing.assert_allclose(gx, _fd(fn, [d, x], 1), rtol=1e-6, atol=1e-7)
        for k in d:
            fk = numerical_grad(lambda v, k=k, d=d: float(fn({**d, k: v}, x)), [d[k].copy()], 0)
            np.testing.assert_allclose(gd[k], fk, rtol=1e-6, atol=1e-7)
        for k in d:
            np.testing.assert_array_equal(d[k], saved[k])
        assert list(d) == list(saved)


def test_get_of_a_dict_argument():
    fn = define("""
        def f(d, x):
            return d.get('item_1', x) ** 2
        """, {"np": np}, name="f")
    g = srcgrad.grad(fn, wrt=(0, 1), strict=True)
    assert g({"item_1": 3.0}, 2.0) == ({"item_1": 6.0}, 0.0)
    assert g({"item_2": 4.0}, 2.0) == ({"item_2": 0.0}, 4.0)
    assert g({}, 2.0) == ({}, 4.0)


def test_a_list_of_data_argument_passed_to_a_helper():
    fn = define("""
        def tot(vs, v):
            out = 0.0
            for u in vs:
                out = out + np.sum(u * v)
            return out
        def f(lst, x):
            return tot(lst, x) + tot([x], x)
        """, {"np": np}, name="f")
    lst = [np.ones(3), np.array([1.0, 2.0, 3.0])]
    got = srcgrad.grad(fn, wrt=1, strict=True)(lst, X.copy())
    np.testing.assert_allclose(got, _fd(fn, [lst, X.copy()], 1), rtol=1e-6, atol=1e-7)


def test_max_of_arrays_of_several_elements_raises_as_python_does():
    fn = define("""
        def f(x):
            return np.sum(max(x * k for k in range(x.shape[0])))
        """, {"np": np}, name="f")
    with pytest.raises(ValueError, match="truth value"):
        fn(X.copy())
    with pytest.raises(ValueError, match="truth value"):
        srcgrad.grad(fn, strict=True)(X.copy())


REFUSED = {
    "a key computed at run time": ("""
        def f(x, n):
            d = {'W0': x, 'W1': x}
            h = x
            for i in range(n):
                h = h * d['W' + str(i)]
            return np.sum(h)
        """, "computed when the code runs"),
    "a missing key": ("""
        def f(x):
            d = {'a': x}
            return np.sum(d['b'])
        """, "not in this dict"),
    "a dict changed in a branch": ("""
        def f(x):
            d = {'a': x}
            if np.sum(x) > 0:
                d['a'] = d['a'] * 2.0
            return np.sum(d['a'])
        """, "dict built in the function is used here as one value"),
    "a dict changed in a while loop": ("""
        def f(x):
            d = {'a': x}
            while np.sum(d['a']) < 10.0:
                d['a'] = d['a'] * 2.0
            return np.sum(d['a'])
        """, "dict built in the function is used here as one value"),
    "an array changed in place that a dict holds": ("""
        def f(x):
            a = x * 1.0
            d = {'a': a}
            a += 1.0
            return np.sum(d['a'] ** 2)
        """, "also names"),
    "+= on an array two keys hold": ("""
        def f(x):
            y = x * 1.0
            d = {'a': y, 'b': y}
            d['a'] += 1.0
            return np.sum(d['b'] * x)
        """, "another key of d also names"),
    "or returning a value": ("""
        def f(x):
            return np.sum(x or 1.0)
        """, "and`/`or` of a value that carries a gradient"),
    "a lambda in a dict": ("""
        def f(x):
            d = {'f': lambda v: v * 2}
            return np.sum(d['f'](x))
        """, "lambda"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_dicts_not_modelled_are_refused(case):
    source, message = REFUSED[case]
    fn = define(source, {"np": np}, name="f")
    with pytest.raises(CompileError, match=message):
        args = [X.copy(), 2] if "n)" in source else [X.copy()]
        if "p=None" in source:
            args.append({"a": X.copy()})
        srcgrad.grad(fn, strict=True)(*args)
