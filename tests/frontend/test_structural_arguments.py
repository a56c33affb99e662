"""Integer and structural arguments: axes and shapes given as separate arguments, shapes
computed from ``x.shape`` or from int arguments, slices and pad widths of int arguments,
``logsumexp``'s axis from a helper's parameter, hyper-parameter dicts and index lists that are
not differentiated, a global data array read by a loop counter.  Compiled (strict) == eager ==
central finite differences == HIPS autograd; the caller's arguments are never written.  And
the refusals: a write into a dict the function was passed (by the compiler; default mode
changes its private copy and warns),
a dict changed by a method in a branch, a settings dict whose keys changed since compiling."""

from __future__ import annotations

import copy
import warnings

import autograd
import autograd.numpy as anp
import autograd.scipy.special as asp
import numpy as np
import pytest
import scipy.special
from compiled_helpers import define
from conftest import numerical_grad

import srcgrad
from srcgrad.errors import CompileError
from srcgrad.transforms.fallback import eager_transform

RS = np.random.RandomState(5)
DATA = RS.randn(4, 3)


def _args(case: str) -> list:
    rs = np.random.RandomState(len(case))
    return {
        "transpose axes as arguments": [rs.randn(2, 3, 4), rs.randn(2, 5, 4)],
        "reshape to shapes unpacked from x.shape": [rs.randn(2, 3, 4), rs.randn(4, 2)],
        "reshape to int arguments": [rs.randn(2, 6), 3, 4],
        "slices of int arguments": [rs.randn(8), 1, 3],
        "pad widths of an int and of a dict argument": [rs.randn(2, 3), 1, {"pad": 2,
                                                                            "stride": 1}],
        "logsumexp axis from a parameter": [rs.randn(3, 4), 0],
        "hyper-parameter dict, train": [rs.randn(6, 3), rs.rand(3) + 0.5, {"mode": "train"}],
        "hyper-parameter dict, test": [rs.randn(6, 3), rs.rand(3) + 0.5, {
            "mode": "test", "mean": rs.randn(3), "var": rs.rand(3) + 1.0, "eps": 1e-3}],
        "global defaults updated by a dict argument": [rs.randn(3, 2), rs.randn(5, 3),
                                                       {"l2": 0.1}],
        "dicts keyed by the counter of a loop over a list argument": [0.5 * rs.randn(3, 4),
                                                                       [0, 3, 1, 2]],
        "a global data array read by a loop counter": [rs.randn(3)],
    }[case]


SOURCES = {
    "transpose axes as arguments": ("""
        def f(Q, K):
            return np.sum(np.tanh(Q @ K.transpose(0, 2, 1)))
        """, (0, 1)),
    "reshape to shapes unpacked from x.shape": ("""
        def f(x, w):
            N, T, D = x.shape
            return np.sum(np.tanh(x.reshape(N * T, D) @ w).reshape(N, T, -1) ** 2)
        """, (0, 1)),
    "reshape to int arguments": ("""
        def f(x, n, m):
            return np.sum(np.sin(x.reshape(n, m)) * np.reshape(x, (m, n)).T)
        """, (0,)),
    "slices of int arguments": ("""
        def f(x, i, b):
            return np.sum(x[i * b:(i + 1) * b] ** 2) + np.sum(np.sin(x[slice(i, i + b)]))
        """, (0,)),
    "pad widths of an int and of a dict argument": ("""
        def f(x, p, conv_param):
            q = conv_param['pad']
            y = np.pad(x, ((0, 0), (p, p)))
            z = np.pad(x, ((q, q), (0, 0)), mode='constant')
            return np.sum(np.tanh(y) ** 2) + np.sum(z * z * x[0, 0])
        """, (0,)),
    "logsumexp axis from a parameter": ("""
        def normalize(x, axis=-1):
            return x - logsumexp(x, axis=axis, keepdims=True)

        def f(x, axis):
            return np.sum(normalize(x, axis=1) ** 2) + np.sum(normalize(x) * x) + np.sum(
                logsumexp(x * x, axis=axis))
        """, (0,)),
    "hyper-parameter dict, train": ("""
        def f(x, gamma, bn_param):
            mode = bn_param['mode']
            eps = bn_param.get('eps', 1e-5)
            if mode == 'train':
                mu = x.mean(axis=0)
                var = x.var(axis=0)
            else:
                mu = bn_param['mean']
                var = bn_param['var']
            return np.sum((gamma * (x - mu) / np.sqrt(var + eps)) ** 3)
        """, (0, 1)),
    "global defaults updated by a dict argument": ("""
        def f(W, X, hparams=None):
            hp = dict(DEFAULTS)
            if hparams is not None:
                hp.update(hparams)
            logits = X @ W / hp["temperature"]
            return np.sum(np.tanh(logits)) + hp["l2"] * np.sum(W ** 2)
        """, (0,)),
    "dicts keyed by the counter of a loop over a list argument": ("""
        def f(W, inputs):
            xs, hs = {}, {}
            hs[-1] = np.zeros(3)
            loss = 0.0
            for t in range(len(inputs)):
                xs[t] = np.zeros(4)
                xs[t][inputs[t]] = 1
                hs[t] = np.tanh(W @ xs[t] + hs[t - 1])
                loss += np.sum(hs[t] ** 2)
            return loss
        """, (0,)),
    "a global data array read by a loop counter": ("""
        def f(w):
            t = 0.0
            for i in range(len(DATA)):
                t = t + np.sum(np.tanh(w * DATA[i]))
            return t
        """, (0,)),
}
SOURCES["hyper-parameter dict, test"] = SOURCES["hyper-parameter dict, train"]


JAX = {"transpose axes as arguments", "pad widths of an int and of a dict argument"}
"""Autograd's ArrayBox takes no separate axes, and its np.pad wants mode positionally."""


def _globals(oracle: bool, jax: bool = False) -> dict:
    if jax:
        import jax.numpy as jnp
        jax_config()
        return {"np": jnp, "DATA": DATA}
    return {"np": anp if oracle else np,
            "logsumexp": asp.logsumexp if oracle else scipy.special.logsumexp,
            "DEFAULTS": {"l2": 1e-3, "temperature": 2.0}, "DATA": DATA}


def jax_config() -> None:
    import jax
    jax.config.update("jax_enable_x64", True)


def _oracle(case: str, source: str):
    """The gradient function of the case's oracle (autograd, or JAX where autograd cannot)."""
    if case in JAX:
        import jax
        fn = define(source, _globals(True, jax=True), name="f")
        return lambda i: lambda *a: np.asarray(jax.grad(fn, i)(*a))
    fn = define(source, _globals(True), name="f")
    return lambda i: autograd.grad(fn, i)


def _same(a, b) -> bool:
    if isinstance(a, dict):
        return isinstance(b, dict) and list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(_same, a, b))
    return np.array_equal(a, b)


@pytest.mark.parametrize("case", sorted(SOURCES))
def test_structural_arguments_compile_and_agree(case):
    source, wrt = SOURCES[case]
    fn = define(source, _globals(False), name="f")
    oracle = _oracle(case, source)
    args = _args(case)
    before = copy.deepcopy(args)
    got = srcgrad.grad(fn, wrt=wrt, strict=True)(*args)
    got = got if isinstance(got, tuple) else (got,)
    assert _same(args, before)                                # never written
    eager = eager_transform(fn, "grad", copy.deepcopy(args), wrt, False)
    for k, i in enumerate(wrt):
        np.testing.assert_allclose(got[k], eager[k], rtol=1e-9, atol=1e-12)

        def at(x, i=i):
            values = copy.deepcopy(args)
            values[i] = x
            return float(fn(*values))
        np.testing.assert_allclose(got[k], numerical_grad(at, [args[i].copy()], 0),
                                   rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(got[k], oracle(i)(*args), rtol=1e-9, atol=1e-12)


def test_a_dict_argument_of_other_keys_or_values_is_read_anew():
    """One transform serves dicts of two structures (code built for each) and reads the
    values of the one it is given at every call."""
    source, wrt = SOURCES["hyper-parameter dict, train"]
    fn = define(source, _globals(False), name="f")
    oracle = define(source, _globals(True), name="f")
    g = srcgrad.grad(fn, wrt=wrt, strict=True)
    for case in ("hyper-parameter dict, train", "hyper-parameter dict, test"):
        for eps in (1e-3, 0.5):
            args = _args(case)
            if "eps" in args[2]:
                args[2]["eps"] = eps
            got = g(*args)
            for k, i in enumerate(wrt):
                np.testing.assert_allclose(got[k], autograd.grad(oracle, i)(*args), rtol=1e-9)
    assert len(g.sources) == 2


def test_a_settings_argument_that_is_none_then_a_dict_is_compiled_for_each():
    source = SOURCES["global defaults updated by a dict argument"][0]
    fn = define(source, _globals(False), name="f")
    oracle = define(source, _globals(True), name="f")
    W, X, hparams = _args("global defaults updated by a dict argument")
    g = srcgrad.grad(fn, strict=True)
    for given in ((W, X), (W, X, None), (W, X, hparams), (W, X, {"temperature": 0.5})):
        np.testing.assert_allclose(g(*given), autograd.grad(oracle)(*given), rtol=1e-9)
    assert len(g.sources) == 3


def test_an_int_argument_that_numpy_refuses_raises_as_numpy_does():
    fn = define(SOURCES["reshape to int arguments"][0], _globals(False), name="f")
    with pytest.raises(TypeError, match="cannot be interpreted as an integer"):
        fn(np.ones((2, 6)), 3.0, 4)
    for strict in (True, False):
        with pytest.raises(TypeError, match="cannot be interpreted as an integer"), \
                warnings.catch_warnings():
            warnings.simplefilter("ignore")
            srcgrad.grad(fn, strict=strict)(np.ones((2, 6)), 3.0, 4)


WRITES = """
    def f(x, gamma, bn_param):
        eps = bn_param.get('eps', 1e-5)
        mean = x.mean(axis=0)
        bn_param['running_mean'] = mean
        return np.sum((gamma * (x - mean) / np.sqrt(x.var(axis=0) + eps)) ** 2)
    """


def test_a_write_into_a_dict_argument_is_refused_by_the_compiler():
    fn = define(WRITES, _globals(False), name="f")
    param = {"eps": 1e-3}
    with pytest.raises(CompileError, match="dict") as info:
        srcgrad.grad(fn, wrt=(0, 1), strict=True)(np.ones((4, 3)), np.ones(3), param)
    assert info.value.lineno == 5 and "bn_param['running_mean']" in str(info.value)
    assert param == {"eps": 1e-3}


def test_a_write_into_a_dict_argument_changes_a_private_copy_with_a_warning():
    """Default mode differentiates the function on its private copy of the dict, which the
    function's own later reads see; the caller's dict is never written, and the warning names
    the line of the write."""
    fn = define(WRITES.replace("return np.sum(", "return bn_param['running_mean'].sum() + np.sum("),
                _globals(False), name="f")
    param = {"eps": 1e-3}
    x, gamma = np.arange(12.0).reshape(4, 3) ** 1.5 / 7, np.array([0.5, 1.0, 2.0])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = srcgrad.grad(fn, wrt=(0, 1))(x, gamma, param)
    assert param == {"eps": 1e-3}
    writes = [w for w in caught if issubclass(w.category, srcgrad.ArgumentWriteWarning)]
    assert len(writes) == 1 and writes[0].lineno == 5 and "'running_mean'" in str(writes[0].message)
    want = autograd.grad(define(WRITES.replace("return np.sum(", "return bn_param["
                                               "'running_mean'].sum() + np.sum("),
                                {"np": anp}, name="f"), argnum=(0, 1))(x, gamma, dict(param))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-10)


def test_a_write_in_a_branch_not_taken_is_not_refused_in_default_mode():
    fn = define("""
        def f(x, d):
            if x.sum() > 100.0:
                d['seen'] = True
            return np.sum(x ** 2) * d['scale']
        """, _globals(False), name="f")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = srcgrad.grad(fn)(np.ones(3), {"scale": 2.0})
    np.testing.assert_allclose(got, 4.0 * np.ones(3))


def test_a_copy_of_a_dict_argument_may_be_written_in_default_mode():
    """The eager engine refuses writes into the dict passed, not into the function's copies."""
    fn = define("""
        def f(x, d):
            q = copy.deepcopy(d)
            q['scale'] = q['scale'] * 2.0
            r = d.copy()
            r.update(shift=1.0)
            return np.sum((x + r['shift']) ** 2) * q['scale']
        """, {"np": np, "copy": copy}, name="f")
    d = {"scale": 1.5}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = srcgrad.grad(fn)(np.ones(3), d)
    np.testing.assert_allclose(got, 12.0 * np.ones(3))
    assert d == {"scale": 1.5}


def test_a_dict_changed_by_a_method_in_a_branch_is_refused():
    """``d.update(...)`` in a branch changes the dict as ``d[k] = v`` does: refused (it was
    silently dropped)."""
    fn = define("""
        def f(w, flag):
            hp = {'a': 1.0}
            if flag > 0:
                hp.update(a=2.0)
            return hp['a'] * np.sum(w)
        """, _globals(False), name="f")
    with pytest.raises(CompileError, match="dict built in the function") as info:
        srcgrad.grad(fn, strict=True)(np.ones(2), 1.0)
    assert info.value.lineno is not None


def test_a_settings_dict_whose_keys_changed_is_not_modelled():
    """``dict(DEFAULTS)`` is compiled for the keys ``DEFAULTS`` has; its values are read when
    the code runs.  Other keys later: strict refuses, default mode answers eagerly."""
    namespace = _globals(False)
    source = SOURCES["global defaults updated by a dict argument"][0]
    fn = define(source, namespace, name="f")
    W, X, hparams = _args("global defaults updated by a dict argument")
    g, lenient = srcgrad.grad(fn, strict=True), srcgrad.grad(fn)
    first = g(W, X, hparams)
    np.testing.assert_allclose(lenient(W, X, hparams), first)
    namespace["DEFAULTS"]["temperature"] = 3.0           # a value: read anew
    oracle_globals = _globals(True)
    oracle_globals["DEFAULTS"]["temperature"] = 3.0
    oracle = define(source, oracle_globals, name="f")
    np.testing.assert_allclose(g(W, X, hparams), autograd.grad(oracle)(W, X, hparams))
    assert not np.allclose(first, g(W, X, hparams))
    namespace["DEFAULTS"]["l1"] = 0.5                    # a key: not what was compiled
    with pytest.raises(CompileError, match="keys of DEFAULTS"):
        g(W, X, hparams)
    with pytest.warns(srcgrad.FallbackWarning, match="keys of DEFAULTS"):
        got = lenient(W, X, hparams)
    np.testing.assert_allclose(got, autograd.grad(oracle)(W, X, hparams))


ALIASED = """
    def f(x, a, b):
        a['k'] = x * 2.0
        return np.sum(b['k'] ** 2)
    """

GLOBAL_READ = """
    def f(x, a):
        a['k'] = x * 2.0
        return np.sum(SHARED['k'] ** 2)
    """


def test_a_write_into_a_dict_that_is_also_read_elsewhere_is_refused():
    """Two copies of one dict passed twice, or a private copy of a global dict the function
    reads by name, would part from what the plain function reads: refused at the write."""
    shared = {"k": np.ones(3)}
    fn = define(ALIASED, {"np": np}, name="f")
    gn = define(GLOBAL_READ, {"np": np, "SHARED": shared}, name="f")
    for f, args in [(fn, (np.ones(3), shared, shared)), (gn, (np.ones(3), shared))]:
        with pytest.raises(CompileError, match="which is also|shares? memory") as info, \
                warnings.catch_warnings():
            warnings.simplefilter("ignore")
            srcgrad.grad(f)(*args)
        assert info.value.lineno in (2, 3)
    assert list(shared) == ["k"] and np.array_equal(shared["k"], np.ones(3))
    with warnings.catch_warnings():                   # two dicts: each its own copy
        warnings.simplefilter("ignore")
        got = srcgrad.grad(fn)(np.ones(3), {"k": 0.0}, {"k": np.full(3, 3.0)})
    np.testing.assert_array_equal(got, np.zeros(3))
