"""Right, or refused: calls that carry a value are lowered exactly, everything the compiler
does not model is a CompileError, and code the compiler used to refuse wrongly now compiles.

Every compiled gradient is checked against central finite differences of the function itself.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from conftest import numerical_grad

import srcgrad
from srcgrad.frontend.tables import constructs as T

A = np.array([0.3, -1.2, 2.0])


def _fd(f, x):
    if isinstance(x, float):
        return float(numerical_grad(lambda v: f(float(v)), [np.array(x)], 0))
    return numerical_grad(lambda v: f(v), [x.copy()], 0)


def assert_exact(f, x=A):
    """The strict compiled gradient has the argument's shape and matches finite differences."""
    g = srcgrad.grad(f, strict=True)(x)
    expected = _fd(f, x)
    assert np.shape(g) == np.shape(x)
    assert isinstance(g, float) == isinstance(x, float)
    np.testing.assert_allclose(g, expected, rtol=1e-5, atol=1e-6)


def assert_refused(f, match):
    with pytest.raises(srcgrad.CompileError, match=match):
        srcgrad.grad(f, strict=True)


# ----------------------------------------------------------- values that are not constants
def f_float(b):
    return np.sum(b) + float(np.sum(b * b))


def f_float64(b):
    return np.sum(np.float64(np.sum(b)) * b)


def f_float16(b):
    return np.sum(np.float16(b[0]) * b)


def f_full(b):
    return np.sum(np.full((2, 3), np.sum(b)) ** 2)


def f_full_array_fill(b):
    return np.sum(np.full((2, 3), b) * np.arange(6.0).reshape(2, 3))


def f_full_like(b):
    return np.sum(np.full_like(b, b[0]) * b)


def f_linspace(b):
    return np.sum(np.linspace(b[0], b[1], 5) ** 2)


def f_linspace_open(b):
    return np.sum(np.linspace(b[0], b[2], 4, endpoint=False) ** 3)


def f_linspace_arrays(b):
    return np.sum(np.linspace(b[:2], b[1:], 3, axis=-1) ** 2)


def f_logspace(b):
    return np.sum(np.logspace(b[0], b[1], 4))


def f_logspace_base(b):
    return np.sum(np.logspace(b[0], b[2], 3, base=2.0))


def f_list_of_tuple(b):
    return np.sum(list((b, b * 3.0))[1] ** 2)


def f_tuple_of_list(b):
    return np.sum(tuple([b, b * 2])[1] ** 2)


def f_nondiff_calls(b):
    z = np.zeros_like(b) + np.ones_like(b)
    return np.sum(z * b * b) * len(b) + int(np.sum(b)) + np.shape(b)[0] + round(2.7)


def f_static_constructors(b):
    return np.sum(np.full(3, 2.0) * np.linspace(0.0, 1.0, 3) * b) + float(len(b))


def f_random_draw(b):
    rng = np.random.default_rng(0)
    noise = rng.normal(size=b.shape)
    return np.sum(b * noise)


def f_float_of_python_float(x):
    return float(x) * x


def f_packed_float(x):
    return np.sum(np.array([x, 2.0]) * np.ones((3, 2)))


def f_astype_int(b):
    return np.sum((b + 0.25).astype(int) * b) + np.sum(b.astype(bool) * b)


def f_array_int_dtype(b):
    c = b + 0.25
    return np.sum(np.array(c, dtype=int) * b) + np.sum(np.array([c, c], dtype=int)[0] * b)


def f_astype_runtime_dtype(b):
    return np.sum(b.astype(b.dtype) * b)


def f_pow_builtin(b):
    return np.sum(np.sin(pow(b + 0.0, 2))) + np.sum(np.power(b, 3)) + math.pow(float(b[0]), 2)


EXACT = [f_pow_builtin, f_astype_int, f_array_int_dtype, f_astype_runtime_dtype, f_float,
         f_float64, f_full, f_full_array_fill, f_full_like, f_linspace,
         f_linspace_open, f_linspace_arrays, f_logspace, f_logspace_base, f_list_of_tuple,
         f_tuple_of_list, f_nondiff_calls, f_static_constructors, f_random_draw]


@pytest.mark.parametrize("f", EXACT, ids=lambda f: f.__name__)
def test_calls_carrying_a_value_are_lowered_exactly(f):
    assert_exact(f)


def test_a_cast_to_a_smaller_float_passes_the_gradient_through():
    g = srcgrad.grad(f_float16, strict=True)(A)
    expected = np.full(3, A[0])
    expected[0] += np.sum(A)                     # d/db of b0 * sum(b), through float16
    np.testing.assert_allclose(g, expected, rtol=2e-3)


@pytest.mark.parametrize("f", [f_float_of_python_float, f_packed_float],
                         ids=lambda f: f.__name__)
def test_a_python_float_gets_a_float_gradient(f):
    assert_exact(f, 1.5)


# ------------------------------------------------------------------------------- refused
def r_dict(b):
    return np.sum(dict(x=b)["x"] ** 2)


def r_r_(b):
    return np.sum(np.r_[b, b] ** 2)


def r_c_(b):
    return np.sum(np.c_[b, b] ** 2)


class Box:
    def __init__(self, v):
        self.v = v


def r_class(b):
    return np.sum(Box(b).v ** 2)


def use_box(box):
    return np.sum(box.v ** 2)


def r_object_through_helper(b):
    return use_box(Box(b))


def r_random_parameter(b):
    rng = np.random.default_rng(0)
    return np.sum(rng.normal(loc=b))


def r_global_random_parameter(b):
    return np.sum(np.random.normal(b, 1.0))


def r_arange(b):
    return np.sum(np.arange(b[0], b[0] + 3.0))


def r_zip_of_arrays(b):
    return np.sum(list(zip(b, b))[0][0])


def r_linspace_retstep(b):
    return np.sum(np.linspace(b[0], b[1], 3, retstep=True)[0])


def r_full_int_dtype(b):
    return np.sum(np.full(3, b[0], dtype=int) * b)


def r_tuple_as_array(b):
    return np.sum(pair(b))


def r_grad_of_grad(b):
    return np.sum(srcgrad.grad(base)(b))


def base(b):
    return np.sum(b ** 3)


GRAD = srcgrad.grad(base)


def r_transform_call(b):
    return np.sum(GRAD(b))


def pair(b):
    return b * 2.0, np.sum(b)


def r_array_ndmin(b):
    return np.sum(np.array(b, ndmin=2) * b)


def r_astype_complex(b):
    return np.sum(np.real(b.astype(complex)))


REFUSED = [(r_array_ndmin, "ndmin"), (r_astype_complex, "complex"),
           (r_r_, r"np.r_"), (r_c_, r"np.c_"), (r_random_parameter, "carries a gradient"),
           (r_global_random_parameter, "random draw"), (r_arange, "arange"),
           (r_linspace_retstep, "retstep"),
           (r_full_int_dtype, "dtype"), (r_tuple_as_array, "tuple returned by a helper")]


@pytest.mark.parametrize("f", [r_grad_of_grad, r_transform_call], ids=lambda f: f.__name__)
def test_a_gradient_called_inside_is_differentiated_exactly(f):
    assert_exact(f)                              # once refused: now reverse over forward


@pytest.mark.parametrize("f", [r_class, r_object_through_helper], ids=lambda f: f.__name__)
def test_an_object_made_in_the_function_is_followed_exactly(f):
    assert_exact(f)                              # once refused: its state is followed


def test_a_dict_built_from_a_value_is_lowered_exactly():
    assert_exact(r_dict)                         # dict(x=b)["x"]: once refused by name


@pytest.mark.parametrize("f,match", REFUSED, ids=lambda v: getattr(v, "__name__", ""))
def test_what_is_not_modelled_is_refused(f, match):
    assert_refused(f, match)


def test_nondiff_allow_list_is_data():
    """The allow-lists are plain tables of callables (the reference is built from them)."""
    assert all(callable(f) and isinstance(why, str) for f, why in T.NONDIFF_CALLS.items())
    assert np.full not in T.NONDIFF_CALLS and float not in T.NONDIFF_CALLS
    assert {np.full, np.full_like, np.linspace, np.logspace, np.float64, float} <= set(
        T.VALUE_CALLS)


# --------------------------------------------------------------- helpers returning tuples
def g_unpack(b):
    u, s = pair(b)
    return np.sum(u * u) + s * s


def g_index(b):
    t = pair(b)
    return np.sum(t[0]) * t[-1]


def g_twice(b):
    u, s = pair(b)
    v, w = pair(u)
    return np.sum(v) + s * w


def rows(b):
    return np.stack([b, b * b])


def g_rows_of_array(b):
    first, second = rows(b)
    return np.sum(first * second)


def g_unused_item(b):
    u, _ = pair(b)
    return np.sum(np.sin(u))


def g_reshape_negative(b):
    return np.sum(np.reshape(np.concatenate([b, b]), (2, -1))[1] ** 2)


@pytest.mark.parametrize("f", [g_unpack, g_index, g_twice, g_rows_of_array, g_unused_item,
                               g_reshape_negative],
                         ids=lambda f: f.__name__)
def test_helpers_returning_tuples(f):
    assert_exact(f)


def test_unpacking_a_helper_tuple_into_the_wrong_count_is_refused():
    def f(b):
        u, s, t = pair(b)
        return np.sum(u)
    assert_refused(f, "cannot unpack 2 values into 3")


# -------------------------------------------------------------------- valid code compiles
def v_counter(b):
    n = 0
    s = 0.0
    for i in range(3):
        s = s + np.sum(b * i)
        n += 1
    return s


def v_counter_read(b):
    n = 0
    s = 0.0
    for _ in range(3):
        n += 1
        s = s + np.sum(b * n)
    return s


def v_early_return(b):
    if b[0] > 0:
        r = np.sum(b)
        return r
    elif b[1] > 0:
        q = np.sum(b * 2)
        return q
    q = np.sum(b * 4)
    return q


def v_nested_return(b):
    if np.sum(b) > 0:
        if b[0] > 0:
            return np.sum(b * b)
        else:
            w = b * 2
            return np.sum(w)
    return np.sum(b)


def v_lambda_call(b):
    return (lambda u, k: np.sum(u * u) * k)(b, 3.0)


def v_layers(b):
    layers = [(np.eye(3), 1.0), (2 * np.eye(3), 0.5)]
    h = b
    for W, c in layers:
        h = np.tanh(W @ h + c)
    return np.sum(h)


def v_layers_slice(b):
    layers = [np.eye(3), 2 * np.eye(3), 3 * np.eye(3)]
    h = b
    for W in layers[:-1]:
        h = np.tanh(W @ h)
    return np.sum(h)


def v_long_sum(b):
    x = np.sum(b)
    return eval_long(x)


def eval_long(x):
    return (x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x
            + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x
            + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x
            + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x
            + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x
            + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x
            + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x
            + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x
            + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x
            + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x
            + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x
            + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x + x)


VALID = [v_counter, v_counter_read, v_early_return, v_nested_return, v_lambda_call,
         v_layers, v_layers_slice, v_long_sum]


@pytest.mark.parametrize("f", VALID, ids=lambda f: f.__name__)
@pytest.mark.parametrize("x", [A, -A], ids=["a", "minus_a"])
def test_valid_code_compiles(f, x):
    assert_exact(f, x)


def test_a_long_expression_is_not_a_recursion_error():
    terms = " + ".join(["x"] * 250)
    namespace = {"np": np}
    from compiled_helpers import define
    f = define(f"def f(b):\n    x = np.sum(b)\n    return {terms}\n", namespace)
    np.testing.assert_allclose(srcgrad.grad(f, strict=True)(A), np.full(3, 250.0))


# --------------------------------------------------------------------- not plain functions
def gen(b):
    yield np.sum(b)


async def coro(b):
    return np.sum(b)


async def agen(b):
    yield np.sum(b)


@pytest.mark.parametrize("f", [gen, coro, agen], ids=lambda f: f.__name__)
@pytest.mark.parametrize("strict", [True, False])
def test_generators_and_coroutines_are_refused(f, strict):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises((TypeError, srcgrad.CompileError), match="plain functions"):
            srcgrad.grad(f, strict=strict)(A)


def test_parse_refuses_generators():
    from srcgrad.frontend.parse import parse_function
    with pytest.raises(srcgrad.CompileError, match="generator"):
        parse_function(gen)


# ------------------------------------------------------ helpers given lists, methods, lambdas
def loop_sum(xs, scale=2.0):
    s = 0.0
    for x in xs:
        s = s + np.sum(x * x) * scale
    return s


def unpack_pair(t):
    u, v = t
    return np.sum(u * v)


def h_list_literal(b):
    return loop_sum([b, 2 * b])


def h_tuple(b):
    return unpack_pair((b, b + 1.0))


def h_built_list(b):
    xs = []
    for k in range(3):
        xs.append(b * k)
    return loop_sum(xs, 0.5)


def h_in_a_loop(b):
    total = 0.0
    for k in range(2):
        total = total + loop_sum([b, b * k])
    return total


def h_keywords(b):
    return loop_sum(xs=[b], scale=3.0)


class Layer:
    def act(self, x):
        return np.tanh(x)

    @classmethod
    def cube(cls, x):
        return x ** 3

    @staticmethod
    def square(x):
        return x * x


LAYER = Layer()


def h_methods(b):
    return np.sum(LAYER.act(b)) + np.sum(Layer.cube(b)) + np.sum(LAYER.square(b))


def h_named_lambda(b):
    k = 2.0
    f = lambda u: u * k  # noqa: E731
    k = 3.0                                    # late binding, as Python's closures
    return np.sum(f(b) ** 2)


@pytest.mark.parametrize("f", [h_list_literal, h_tuple, h_built_list, h_in_a_loop, h_keywords,
                               h_methods, h_named_lambda], ids=lambda f: f.__name__)
def test_helpers_given_lists_methods_and_lambdas(f):
    assert_exact(f)


def test_a_pytree_passed_to_a_helper():
    def loss(params, x):
        return np.sum(np.tanh(params["W"] @ x + params["b"]))

    def f(params, x):
        return loss(params, x) * 2.0
    params = {"W": np.eye(3) * 0.5, "b": np.full(3, 0.1)}
    g = srcgrad.grad(f, strict=True)(params, A)
    expected = numerical_grad(lambda W: f({"W": W, "b": params["b"]}, A), [params["W"].copy()],
                              0)
    np.testing.assert_allclose(g["W"], expected, rtol=1e-5, atol=1e-7)


def test_a_lambda_passed_on_is_compiled_and_zip_of_an_array_refused_at_the_call():
    def apply(fn, x):
        return fn(x)

    def f(b):
        return np.sum(apply(lambda u: u * 2, b))
    np.testing.assert_allclose(srcgrad.grad(f, strict=True)(np.ones(3)), 2 * np.ones(3))
    with pytest.raises(srcgrad.CompileError, match=r"zip\(\) of lists or tuples"):
        srcgrad.grad(r_zip_of_arrays, strict=True)(np.ones(3))    # an array: known at the call


def two_returns(b):
    if b[0] > 0:
        return b * 2, np.sum(b)
    return b * 3, np.sum(b * b)


def test_a_helper_returning_tuples_from_two_places_is_refused():
    def f(b):
        u, s = two_returns(b)
        return np.sum(u) * s
    assert_refused(f, "more than one place")


# ------------------------------------------- library functions, tril/triu of 1-D, random draws
def lib_bartlett(b):
    return np.sum(np.bartlett(b.shape[0]) * b) + np.sum(np.bartlett(b) * b)


def lib_unwrap(b):
    return np.sum(b * np.unwrap(b))


def lib_require(b):
    return np.sum(np.require(b) * b)


def _uses_unwrap(u):
    return np.sum(np.unwrap(u * u))


def lib_in_a_helper(b):
    return _uses_unwrap(b) + np.sum(b)


@pytest.mark.parametrize("f, name", [(lib_bartlett, "numpy.bartlett"),
                                     (lib_unwrap, "numpy.unwrap"),
                                     (lib_require, "numpy.require"),
                                     (lib_in_a_helper, "numpy.unwrap")],
                         ids=lambda v: getattr(v, "__name__", str(v)))
def test_numpy_python_functions_are_refused_by_name(f, name):
    """NumPy's own Python functions are not the user's code: with no rule, a CompileError
    names them (never a message from inside NumPy's source, never a transformed copy)."""
    with pytest.raises(srcgrad.CompileError, match=rf"no derivative rule for {name}\b"):
        srcgrad.grad(f, strict=True)(A.copy())


def test_a_standard_library_function_is_refused_by_name():
    import statistics

    def f(b):
        return np.sum(b) * statistics.fmean(b)
    with pytest.raises(srcgrad.CompileError, match=r"no derivative rule for statistics\.fmean"):
        srcgrad.grad(f, strict=True)(A.copy())


_W33 = np.arange(9.0).reshape(3, 3) - 3.5


@pytest.mark.parametrize("k", [-1, 0, 1])
@pytest.mark.parametrize("fn", [np.tril, np.triu], ids=lambda fn: fn.__name__)
def test_tril_triu_of_a_1d_array(fn, k):
    """Of a 1-D array NumPy builds a square matrix of repeated rows: the gradient sums them,
    compiled (strict) and eager alike."""
    from srcgrad.transforms.fallback import eager_transform

    def f(b):
        return np.sum(fn(b, k) ** 2 * _W33)
    expected = _fd(f, A)
    np.testing.assert_allclose(srcgrad.grad(f, strict=True)(A.copy()), expected, rtol=1e-6,
                               atol=1e-8)
    np.testing.assert_allclose(eager_transform(f, "grad", [A.copy()], (0,), True), expected,
                               rtol=1e-6, atol=1e-8)
    m = np.outer(A, A) + 1.0                            # a matrix: the mask alone
    expected = _fd(f, m)
    np.testing.assert_allclose(srcgrad.grad(f, strict=True)(m.copy()), expected, rtol=1e-6,
                               atol=1e-8)


_RNG = np.random.default_rng(0)


def draw_module(b):
    return np.sum(np.random.normal(b))


def draw_global_generator(b):
    return np.sum(_RNG.normal(b, 1.0))


def draw_local_generator(b):
    rng = np.random.default_rng(0)
    return np.sum(rng.uniform(b, 2.0))


@pytest.mark.parametrize("f, written", [(draw_module, "np.random.normal"),
                                        (draw_global_generator, "_RNG.normal"),
                                        (draw_local_generator, "rng.uniform")],
                         ids=lambda v: getattr(v, "__name__", str(v)))
def test_a_random_draw_refusal_names_the_call(f, written):
    with pytest.raises(srcgrad.CompileError, match=rf"{written.replace('.', '[.]')}\(\.\.\.\) "
                                                   "with an argument that carries a gradient"):
        srcgrad.grad(f, strict=True)(A.copy())


def m_truth_and_order(b):
    m = np.outer(b, b) + b
    i = m.argsort(axis=0)
    return np.sum(m * m.all() + m * m.any(axis=1, keepdims=True)) + np.sum(
        np.take_along_axis(m, i, axis=0) * _W33)


def m_cumprod_diagonal_round(b):
    m = np.outer(b, b) + 1.0
    return np.sum(m.cumprod(axis=1) * _W33) + np.sum(m.diagonal(1) ** 2) + np.sum(
        m.round(1) * m)


def m_nonzero(b):
    r, c = (np.outer(b, b) > 0.0).nonzero()
    return np.sum((np.outer(b, b) + b)[r, c] ** 3)


@pytest.mark.parametrize("f", [m_truth_and_order, m_cumprod_diagonal_round, m_nonzero],
                         ids=lambda f: f.__name__)
def test_array_methods_match_numpy(f):
    """``.all``, ``.any``, ``.argsort``, ``.cumprod``, ``.diagonal``, ``.round``, ``.nonzero``:
    compiled == eager == finite differences."""
    from srcgrad.transforms.fallback import eager_transform
    expected = _fd(f, A)
    np.testing.assert_allclose(srcgrad.grad(f, strict=True)(A.copy()), expected, rtol=1e-5,
                               atol=1e-7)
    np.testing.assert_allclose(eager_transform(f, "grad", [A.copy()], (0,), True), expected,
                               rtol=1e-5, atol=1e-7)


def test_a_library_function_of_constants_runs_as_plain_python():
    """``np.hanning(n)`` of a static ``n`` carries no gradient: it runs as plain Python."""
    def f(b):
        return np.sum(np.hanning(b.shape[0]) * b * b) + np.isdtype(b.dtype, "real floating")
    assert_exact(f)


def no_gradient_functions(b):
    s = np.sum(b * np.round(b, 1)) + np.sum(b * np.fix(b * 1.7)) + np.count_nonzero(b > 0.5)
    if np.all(b > -5.0) and np.any(b > 0.5) and np.allclose(b, b):
        s = s + np.sum(b[np.argwhere(b > 0.5)[:, 0]] ** 2) + np.sum(np.signbit(b) * b)
    return s + np.sum(b[np.nonzero(b > 0.0)] * b[np.argpartition(b, 1)[0]])


def test_no_gradient_functions_run_in_both_modes():
    """The rule table's NO_GRADIENT functions (truth values, indices, rounding) run on plain
    data in the eager engine as in compiled code: compiled == eager == finite differences."""
    from srcgrad.transforms.fallback import eager_transform
    expected = _fd(no_gradient_functions, A)
    np.testing.assert_allclose(srcgrad.grad(no_gradient_functions, strict=True)(A.copy()),
                               expected, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(eager_transform(no_gradient_functions, "grad", [A.copy()], (0,),
                                               True), expected, rtol=1e-5, atol=1e-7)


# ------------------------------------------------------------------ found by the review
def r_chained_assignment(b):
    a = c = b * 2.0
    return np.sum(a * c)


def r_tuple_concatenation(b):
    t = (b,) + (b * 3.0,)
    return np.sum(t[0] * t[1])


def r_tuple_repetition(b):
    t = (b[0], b[1]) * 2
    return t[0] * t[3]


@pytest.mark.parametrize("f", [r_chained_assignment, r_tuple_concatenation,
                               r_tuple_repetition], ids=lambda f: f.__name__)
def test_review_findings_compile_exactly(f):
    assert_exact(f)


def r_list_item_in_place(b):
    y = b * 2.0
    items = [y]
    items[0] += 1.0          # NumPy writes into y through the list
    return np.sum(y * b)


def r_astype_without_copy(b):
    y = b * 2.0
    z = y.astype(np.float64, copy=False)   # y itself: a write into z is a write into y
    z[0] = 0.0
    return np.sum(y * b)


@pytest.mark.parametrize("f, match", [(r_list_item_in_place, "in-place operator on an item"),
                                      (r_astype_without_copy, "copy")],
                         ids=lambda v: getattr(v, "__name__", ""))
def test_review_findings_refused(f, match):
    assert_refused(f, match)


def r_tolist(b):
    p, q, r = b.tolist()
    return p * q


def test_tolist_is_refused_by_both_modes():
    """``tolist()`` makes Python numbers, which carry no gradient: never a silent zero."""
    assert_refused(r_tolist, "tolist")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = srcgrad.grad(r_tolist)
        with pytest.raises(srcgrad.CompileError, match="tolist"):
            g(A.copy())


class _Settings:
    scale = 2.0
    weights = np.array([1.0, 2.0, 3.0])


SETTINGS = _Settings()


def r_settings(b):
    return np.sum(b * SETTINGS.scale * SETTINGS.weights)


def test_an_object_attribute_is_read_when_the_code_runs():
    """``cfg.scale`` rebound after ``grad()`` is followed, forward and adjoint alike."""
    g = srcgrad.grad(r_settings, strict=True)
    np.testing.assert_allclose(g(A.copy()), 2.0 * SETTINGS.weights)
    SETTINGS.scale, SETTINGS.weights = 5.0, np.array([0.0, 1.0, 0.0])
    try:
        np.testing.assert_allclose(g(A.copy()), [0.0, 5.0, 0.0])
    finally:
        SETTINGS.scale, SETTINGS.weights = 2.0, np.array([1.0, 2.0, 3.0])


def layered(x, layers):
    h = x
    for W, b in layers:
        h = np.tanh(h @ W + b)
    return np.sum(h * h)


def nested_layers(params, x):
    h = x
    for layer in params["layers"]:
        h = np.tanh(h @ layer["W"] + layer["b"])
    return np.sum(h ** 2)


def test_a_loop_over_a_pytree_of_tuples_is_unrolled():
    """``for W, b in layers`` over a list argument of tuples (or of dicts): compiled strict,
    equal to finite differences leaf by leaf."""
    rng = np.random.default_rng(3)
    layers = [(rng.normal(size=(3, 3)) * 0.5, rng.normal(size=3)) for _ in range(2)]
    x = rng.normal(size=3)
    dx, dlayers = srcgrad.grad(layered, wrt=(0, 1), strict=True)(x, layers)
    np.testing.assert_allclose(dx, _fd(lambda v: layered(v, layers), x), rtol=1e-5, atol=1e-7)
    for k, (W, b) in enumerate(layers):
        for j, leaf in enumerate((W, b)):
            def moved(v, k=k, j=j):
                changed = [list(pair) for pair in layers]
                changed[k][j] = v
                return layered(x, [tuple(pair) for pair in changed])
            np.testing.assert_allclose(dlayers[k][j], numerical_grad(moved, [leaf.copy()], 0),
                                       rtol=1e-5, atol=1e-7)
    params = {"layers": [{"W": W, "b": b} for W, b in layers]}
    dparams = srcgrad.grad(nested_layers, strict=True)(params, x)
    for k, (W, _) in enumerate(layers):
        def moved_w(v, k=k):
            changed = {"layers": [dict(layer) for layer in params["layers"]]}
            changed["layers"][k]["W"] = v
            return nested_layers(changed, x)
        np.testing.assert_allclose(dparams["layers"][k]["W"], numerical_grad(
            moved_w, [W.copy()], 0), rtol=1e-5, atol=1e-7)


def same_value_twice_into_a_branch(b):
    v = b                          # v and b are one value: the branch is handed it twice
    if np.sum(b) > 0.0:
        v = v * 0.9
    elif np.sum(b) > -5.0:
        v = v * 3.0
    return np.sum(np.sin(v))


def test_a_value_handed_to_a_branch_twice_keeps_its_gradient():
    """Found by the random programs under one hash seed: the graph kept one edge for a value
    passed as two block arguments, and the second (a condition only) made it inactive."""
    assert_exact(same_value_twice_into_a_branch, np.array([0.5, 0.3, -1.4]))
    assert_exact(same_value_twice_into_a_branch, np.array([0.5, 0.3, 1.4]))
