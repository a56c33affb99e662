"""Small constructs where the compiler and the eager engine once parted, each checked compiled
(strict) == eager == finite differences, with the arguments never changed: nested lists given to
``np.array``, ``np.array`` of an empty run-time list, a helper given an int (``n - 1``), lists
of Arrays where NumPy expects an array in the eager engine, masked norm rules, and literal
arithmetic as a reshape's shape."""

from __future__ import annotations

import sys
import types
import warnings

import numpy as np
import pytest
from compiled_helpers import check_three_ways, define
from conftest import numerical_grad

import srcgrad
from srcgrad.runtime.rules.lists import array_list, stack_list
from srcgrad.runtime.rules.matrices import norm_grad
from srcgrad.transforms.fallback import eager_transform

X = np.array([0.3, -0.7, 1.1])

NESTED = {
    "a comprehension of comprehensions": """
        def f(x):
            return np.sum(np.array([[a * b for a in x] for b in x]))
        """,
    "rows of a literal pair": """
        def f(x):
            return np.sum(np.array([[a, a * 2.0] for a in x]) ** 2 * np.arange(2.0))
        """,
    "three levels": """
        def f(x):
            return np.sum(np.sin(np.array([[[a, b * a] for a in x] for b in x[:2]])))
        """,
    "a filtered outer list": """
        def f(x):
            ys = [v * 2.0 for v in x if v > 0.0]
            return np.sum(np.array([[a * b for a in x] for b in ys]) ** 2)
        """,
}


@pytest.mark.parametrize("case", sorted(NESTED))
def test_nested_lists_given_to_np_array(case):
    check_three_ways(define(NESTED[case], {"np": np}), [X.copy()])


def test_the_gradient_of_a_nested_element_is_a_list():
    xs = [[np.float64(1.0), np.float64(2.0)], [np.float64(3.0), np.float64(4.0)]]
    g = np.array([[1.0, 2.0], [3.0, 4.0]])
    parts = stack_list.vjp(0)(g, stack_list.fn(xs), xs)
    assert [type(p) for p in parts] == [list, list]
    assert parts == [[1.0, 2.0], [3.0, 4.0]]


EMPTY = """
    def f(x, s):
        ys = [v * s for v in x if v > 5.0]
        return np.sum(np.array(ys)) + s * np.sum(x)
    """


def test_np_array_of_an_empty_runtime_list():
    fn = define(EMPTY, {"np": np})
    for strict in (True, False):
        got = srcgrad.grad(fn, wrt=(0, 1), strict=strict)(X.copy(), 0.5)
        np.testing.assert_allclose(got[0], np.full(3, 0.5))
        assert got[1] == pytest.approx(np.sum(X))
    check_three_ways(fn, [X.copy(), np.array(0.5)])
    assert array_list.fn([]).shape == (0,) and array_list.vjp(0)(np.zeros(0), None, []) == []


def test_np_stack_of_an_empty_runtime_list_raises_as_numpy_does():
    fn = define("""
        def f(x):
            ys = [v for v in x if v > 5.0]
            return np.sum(np.stack(ys)) + np.sum(x)
        """, {"np": np})
    with pytest.raises(ValueError, match="at least one array"):
        fn(X.copy())
    for strict in (True, False):
        with pytest.raises(ValueError, match="at least one array"):
            srcgrad.grad(fn, strict=strict)(X.copy())


INT_ARGUMENTS = {
    "n - 1 to a helper, n also divided by": """
        def h(v, n):
            return np.sum(v) / n
        def h3(v, n):
            return np.sum(v) / n + h(v, n - 1)
        def f(x):
            return h3(x, 2)
        """,
    "one helper called with a float and with an int": """
        def h(v, n):
            return np.sum(v) / n
        def h3(v, n):
            return np.sum(v) / n + h(v, n - 1)
        def f(x):
            return h3(x, np.sum(x) + 2.0) + h3(x, 3)
        """,
    "an int handed back by a helper and passed on": """
        def k(v, n):
            return v * n, n - 1
        def f(x):
            a, m = k(x, 3)
            b, m2 = k(a, m)
            return np.sum(b) * m2
        """,
    "recursion on an int": """
        def g(v, n):
            return 0.0 if n == 0 else np.sum(v) / n + g(v * 0.5, n - 1)
        def f(x):
            return g(x, 2)
        """,
}


@pytest.mark.parametrize("case", sorted(INT_ARGUMENTS))
def test_a_helper_given_an_int(case):
    namespace = {"np": np}
    define(INT_ARGUMENTS[case], namespace)
    check_three_ways(namespace["f"], [X.copy()])


EAGER_LISTS = {
    "np.mean of a comprehension": "np.mean([np.sum(v) for v in [x, x * 2.0]])",
    "np.var and np.std of tuples and lists": "np.var((x[0], x[1] + 2)) + np.std([x[0], x[2]])",
    "np.asarray of a list": "np.sum(np.asarray([x, x ** 2]) * 3.0)",
    "np.array of nested lists, with dtype": (
        "np.sum(np.array([[x[0], 2 * x[1]], [x[2], 1.0]], dtype=float) ** 2)"),
    "np.dot of two lists": "np.dot([x[0], x[1]], [x[2], 2.0])",
    "np.linalg.norm of a list": "np.linalg.norm([x[0], x[1]])",
    "a ufunc of a list": "np.sum(np.sin([x[0], x[1]]))",
}


@pytest.mark.parametrize("case", sorted(EAGER_LISTS))
def test_lists_of_arrays_in_the_eager_engine(case):
    fn = define(f"def f(x):\n    return {EAGER_LISTS[case]}\n", {"np": np})
    check_three_ways(fn, [X.copy()])


def test_the_eager_run_restores_the_module_names():
    import numpy
    namespace = {"np": np, "numpy": numpy, "mean": np.mean, "data": [1.0]}
    fn = define("""
        def f(x):
            return mean([x * 2.0, x]) + numpy.linalg.norm([x[0], x[1]]) + np.sum(x) * data[0]
        """, namespace)
    before = dict(namespace)
    got = eager_transform(fn, "grad", [X.copy()], (0,), True)
    assert all(namespace[k] is v for k, v in before.items())
    assert isinstance(namespace["np"], types.ModuleType) and namespace["np"] is np
    check_three_ways(fn, [X.copy()])
    np.testing.assert_allclose(got, srcgrad.grad(fn, strict=True)(X.copy()))


def test_a_name_the_function_rebinds_is_kept():
    namespace = {"np": np}
    fn = define("""
        def f(x):
            global np
            import numpy as np
            return np.sum(x * 2.0)
        """, namespace)
    np.testing.assert_allclose(eager_transform(fn, "grad", [X.copy()], (0,), True), 2.0)
    assert namespace["np"] is np


NORMS = {
    "vector inf": "np.linalg.norm(x.ravel(), ord=np.inf)",
    "vector -inf": "np.linalg.norm(x.ravel(), ord=-np.inf)",
    "vector 0": "np.linalg.norm(x.ravel(), ord=0) * np.sum(x)",
    "matrix inf": "np.linalg.norm(x, ord=np.inf)",
    "matrix -inf": "np.linalg.norm(x, ord=-np.inf)",
    "matrix 1": "np.linalg.norm(x, ord=1)",
    "matrix -1": "np.linalg.norm(x, ord=-1)",
    "rows, inf": "np.sum(np.linalg.norm(x, ord=np.inf, axis=1) ** 2)",
    "matrix 1, swapped axes, keepdims": (
        "np.sum(np.linalg.norm(x, ord=1, axis=(1, 0), keepdims=True))"),
}


@pytest.mark.parametrize("case", sorted(NORMS))
def test_masked_norms(case):
    fn = define(f"def f(x):\n    return {NORMS[case]}\n", {"np": np})
    check_three_ways(fn, [np.array([[1.0, -3.0, 2.0], [3.5, 0.5, -1.0]])])


@pytest.mark.parametrize("ord", [np.inf, -np.inf, 1, -1])
def test_masked_norms_select_the_gradient(ord):
    """An infinite cotangent reaches only the entries that decide the norm: no nan."""
    x = np.array([[1.0, -3.0], [2.0, 0.5]]) if ord in (1, -1) else np.array([1.0, -3.0, 2.0])
    got = norm_grad(np.array(np.inf), np.linalg.norm(x, ord), x, ord)
    assert not np.isnan(got).any()
    assert np.count_nonzero(got) >= 1 and np.count_nonzero(got) < x.size
    assert np.array_equal(norm_grad(np.inf, 2.0, x.ravel(), 0), np.zeros(x.size))


def test_reshape_with_literal_arithmetic():
    fn = define("""
        def f(x):
            return np.sum(x.reshape(5 * 4, 6) ** 2 * np.arange(6.0))
        """, {"np": np})
    check_three_ways(fn, [np.linspace(-1.0, 1.0, 120).reshape(4, 30)])


def test_np_append_of_list_arguments():
    fn = define("""
        def f(a, b):
            return np.sum(np.append(a, b, axis=0) ** 2)
        """, {"np": np})
    a, b = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], [[7.0, 8.0, 9.0]]
    want = ([[2.0, 4.0, 6.0], [8.0, 10.0, 12.0]], [[14.0, 16.0, 18.0]])
    for strict in (True, False):
        assert srcgrad.grad(fn, wrt=(0, 1), strict=strict)(a, b) == want
    assert eager_transform(fn, "grad", [a, b], (0, 1), False) == want
    assert a == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]] and b == [[7.0, 8.0, 9.0]]


EAGER_ONLY = {
    "np.r_ of an array": ("np.sum(np.r_[x] * W)", (3, 2)),
    "np.r_ of an array and a constant": ("np.sum(np.r_[x, C, x] ** 3)", (3, 2)),
    "np.r_ with a slice": ("np.sum(np.r_[x, C.ravel(), 1:4] ** 2)", (6,)),
    "np.r_ with numbers": ("np.sum(np.r_[x[0], 2.0, x] ** 2)", (3,)),
    "np.c_ of matrices": ("np.sum(np.c_[x, C, x] ** 3)", (3, 2)),
    "np.c_ of columns": ("np.sum(np.c_[x[:, 0], C, x[:, 1]] * W4)", (3, 2)),
    "np.sort and np.polyval of lists": (
        "np.sum(np.sort([x[1], x[0] * 3.0, x[2]]) * np.arange(3.0))"
        " + np.polyval([x[0], x[1]], 2.0)",
        (3,)),
}


@pytest.mark.parametrize("case", sorted(EAGER_ONLY))
def test_the_eager_engine_runs_what_the_compiler_refuses(case):
    rng = np.random.default_rng(3)
    body, shape = EAGER_ONLY[case]
    namespace = {"np": np, "C": rng.standard_normal((3, 2)), "W": rng.standard_normal((3, 2)),
                 "W4": rng.standard_normal((3, 4))}
    fn = define(f"def f(x):\n    return {body}\n", namespace)
    x = rng.standard_normal(shape)
    got = eager_transform(fn, "grad", [x.copy()], (0,), True)
    fd = numerical_grad(lambda v: float(fn(v.copy())), [x.copy()], 0)
    np.testing.assert_allclose(got, fd, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(srcgrad.grad(fn, strict=False)(x), got, rtol=1e-12)


def test_types_and_ufunc_methods_keep_working_in_the_eager_run():
    fn = define("""
        def f(x):
            assert isinstance(np.float64(1.0), np.float64) and callable(np.add.at)
            return np.add.reduce(np.stack([x, x * 2.0]), axis=0).sum() + np.mean([x[0], x[1]])
        """, {"np": np})
    got = eager_transform(fn, "grad", [X.copy()], (0,), True)       # (not compiled: reduce)
    np.testing.assert_allclose(got, [3.5, 3.5, 3.0])


@pytest.mark.parametrize("body", [
    "np.sum(np.add.reduce(x) ** 2)", "np.sum(np.add.reduce(x, 1) ** 2)",
    "np.sum(np.multiply.reduce(x, axis=1))", "np.maximum.reduce(x, axis=None)",
    "np.sum(np.minimum.reduce(x, axis=0, keepdims=True) ** 2)",
    "np.sum(np.add.accumulate(x, axis=1) ** 2)", "np.sum(np.multiply.accumulate(x) ** 2)",
])
def test_ufunc_reductions_in_the_eager_engine(body):
    fn = define(f"def f(x):\n    return {body}\n", {"np": np})
    x = np.random.default_rng(4).standard_normal((3, 4))
    got = eager_transform(fn, "grad", [x.copy()], (0,), True)
    np.testing.assert_allclose(got, numerical_grad(lambda v: float(fn(v.copy())), [x.copy()], 0),
                               rtol=1e-5, atol=1e-7)


# ----------------------------------------------------- methods chained, NumPy's sort and view
@pytest.mark.parametrize("body", ["x.copy().sum()", "x.diagonal().sum()",
                                  "np.sum(x.flatten().dot(x.ravel()))", "x.T.copy().max()"])
def test_a_method_of_a_method_result_compiles(body):
    """``x.copy().sum()``: the receiver is a value, not a class to instantiate (it was
    refused once methods of objects made inline were compiled)."""
    fn = define(f"def f(x):\n    return {body}\n", {"np": np})
    x = np.arange(6.0).reshape(2, 3) * 0.37 - 0.5
    got = srcgrad.grad(fn, strict=True)(x)
    np.testing.assert_allclose(got, numerical_grad(lambda a: float(fn(a)), [x.copy()], 0),
                               rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("body", ["y = x.copy()\n    y.sort()", "y = x * 1.0\n    y.sort()",
                                  "y = x * 1.0\n    v = y.view()\n    v[0] = 0.0"])
def test_the_eager_run_sorts_and_views_as_numpy(body):
    """``a.sort()`` sorts in place and ``a.view()`` names the same data, as in NumPy (the
    eager run once took PyTorch's ``sort``, which returns a new pair: a wrong gradient)."""
    fn = define(f"def f(x):\n    {body}\n    return np.sum(y * np.arange(3.0))\n", {"np": np})
    x = np.array([0.3, -0.7, 0.1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = srcgrad.grad(fn)(x)
    np.testing.assert_array_equal(x, [0.3, -0.7, 0.1])
    np.testing.assert_allclose(got, numerical_grad(lambda a: float(fn(a.copy())), [x.copy()], 0),
                               rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("call", ["np.clip(x, a_min=lo, a_max=2.0)", "np.clip(x, lo, a_max=2.0)",
                                  "np.clip(x, a_max=2.0, a_min=lo)", "x.clip(lo, 2.0)"])
def test_clip_bounds_given_by_keyword_are_inputs(call):
    """An input given by keyword was passed on unlowered (an internal error)."""
    fn = define(f"def f(x, lo):\n    return np.sum({call} ** 2)\n", {"np": np})
    x, lo = np.linspace(-1.0, 3.0, 5), np.array([0.0, 0.5, 0.5, 0.5, 0.5])
    gx, glo = srcgrad.grad(fn, wrt=(0, 1), strict=True)(x, lo)
    np.testing.assert_allclose(gx, [0.0, 0.0, 2.0, 4.0, 0.0])
    np.testing.assert_allclose(glo, [0.0, 1.0, 0.0, 0.0, 0.0])


def test_a_build_during_an_eager_run_binds_numpy_not_its_stand_ins():
    """While an eager run stands in for the module's NumPy names (lists of Arrays are stacked),
    a transform built meanwhile (a strict one, called inside) must still see NumPy itself."""
    ns = {"np": np, "srcgrad": srcgrad, "ns_seen": []}     # one module for both functions
    inner = define("def g(y):\n    return np.sum(np.sin(y) ** 2)\n", ns)
    ns["gg"] = srcgrad.grad(inner, strict=True)
    outer = define("def f(x):\n    ns_seen.append(gg(np.ones(3)))\n"
                   "    return np.sum(np.mean([x, x * 2.0], axis=0) ** 2)\n", ns)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = srcgrad.grad(outer)(np.array([0.5, -1.0]))
    np.testing.assert_allclose(got, 2 * 1.5 * 1.5 * np.array([0.5, -1.0]))
    np.testing.assert_allclose(ns["ns_seen"][0], np.sin(2.0) * np.ones(3))
    assert ns["np"] is np                                  # the module's names are restored


@pytest.mark.parametrize("body", ["x @ c", "c @ x", "np.tanh(np.matmul(c, x))"])
@pytest.mark.parametrize("strict", [True, False])
def test_a_list_argument_as_a_matmul_operand(body, strict):
    """``x @ c`` with ``c`` a plain list: NumPy reads it as an array (the gradient's helpers
    asked the list for ``.ndim``: an internal error in both modes)."""
    fn = define(f"def f(c, x):\n    return np.sum({body})\n", {"np": np})
    c, x = [[0.5, -1.0], [2.0, 1.0]], np.array([[0.3, -0.8], [1.0, 2.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = srcgrad.grad(fn, wrt=1, strict=strict)(c, x)
    np.testing.assert_allclose(got, numerical_grad(lambda v: float(fn(c, v)), [x.copy()], 0),
                               rtol=1e-6, atol=1e-8)


_WEIGHTS = np.array([1.5, -2.0])


def _scaled(x, stream=sys.stdout, w=_WEIGHTS, k=2.0):
    return x * w * k


def _uses_defaults(x):
    return np.sum(_scaled(x) ** 2) + np.sum(x * 3.0)


@pytest.mark.parametrize("transform", ["grad", "jvp"])
def test_a_default_without_a_literal_is_bound_not_printed(transform):
    """A helper's default that is a stream or an array (Python evaluated it once) is bound
    to a name of the generated module (it was an internal error: no literal for it)."""
    x = np.array([0.3, -0.7])
    want = 2 * (x * _WEIGHTS * 2.0) * _WEIGHTS * 2.0 + 3.0
    if transform == "grad":
        got = srcgrad.grad(_uses_defaults, strict=True)(x)
    else:
        got = np.array([srcgrad.jvp(_uses_defaults, (x,), (e,), strict=True)[1]
                        for e in np.eye(2)])
    np.testing.assert_allclose(got, want, rtol=1e-12)
