"""Forward mode and Jacobians, compiled strict: ``srcgrad.jvp``, ``jacfwd`` and ``jacrev``
over every case of ``higher_order_cases`` against JAX (the same function with ``np`` rebound)
and central finite differences; ``wrt`` by position, tuple and name; misuse raising as JAX
does; and the generated source of a jvp running alone and built deterministically."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

jax = pytest.importorskip("jax")

from higher_order_cases import (  # noqa: E402
    BY_NAME,
    CASES,
    as_matrix,
    assert_tree_close,
    copy_args,
    fd_jacobian,
    fd_jvp,
    oracle,
    rebound,
    tangents_for,
    tolerances,
    tree_leaves,
)

import srcgrad  # noqa: E402

# Failures known today, by test id ("jvp[case]"): strict, so a fix turns them into failures.
KNOWN: dict[str, str] = {}


def _params(prefix, cases):
    return [pytest.param(c, id=c.name, marks=[pytest.mark.xfail(
        strict=True, reason=KNOWN[f"{prefix}[{c.name}]"])] if f"{prefix}[{c.name}]" in KNOWN
        else []) for c in cases]


def _wrt(case):
    """Every argument when there are several (a tuple), else position 0 (an int)."""
    return tuple(range(len(case.args))) if len(case.args) > 1 else 0


def _no_fallback(fun, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("error", srcgrad.FallbackWarning)
        return fun(*args)


@pytest.mark.parametrize("case", _params("jvp", CASES))
def test_jvp(case):
    args, tangents = copy_args(case.args), tangents_for(case)
    value, tangent = srcgrad.jvp(case.fn, args, tangents, strict=True)
    want_value, want_tangent = oracle(case, "jvp")
    rtol, atol = tolerances(case)
    assert_tree_close(value, want_value, rtol, atol, f32_dtypes=True)
    assert_tree_close(tangent, want_tangent, rtol, atol, f32_dtypes=True)
    fd = fd_jvp(case.fn, case.args, tangents)
    assert_tree_close(tangent, fd, 1e-3 if case.f32 else 1e-5, 1e-4 if case.f32 else 1e-7)
    for a, b in zip(tree_leaves(args), tree_leaves(case.args)):
        np.testing.assert_array_equal(a, b)                   # the caller's args unchanged


def _check_jacobian(case, jac, wrt):
    """Against JAX's jacrev (tightly, structure and float32 dtypes included) and against
    central differences of the NumPy function, one argument at a time."""
    rtol, atol = tolerances(case)
    assert_tree_close(jac, oracle(case, "jac", wrt), rtol, atol, f32_dtypes=True)
    out_size = int(np.size(case.fn(*copy_args(case.args))))
    for k, p in enumerate(wrt if isinstance(wrt, tuple) else (wrt,)):
        got = jac[k] if isinstance(wrt, tuple) else jac
        fd = fd_jacobian(case.fn, case.args, p)
        np.testing.assert_allclose(as_matrix(got, out_size), fd,
                                   rtol=1e-3 if case.f32 else 1e-5,
                                   atol=1e-4 if case.f32 else 1e-7)


@pytest.mark.parametrize("case", _params("jacfwd", CASES))
def test_jacfwd(case):
    wrt = _wrt(case)
    jac = _no_fallback(srcgrad.jacfwd(case.fn, wrt=wrt, strict=True), *copy_args(case.args))
    _check_jacobian(case, jac, wrt)


@pytest.mark.parametrize("case", _params("jacrev", CASES))
def test_jacrev(case):
    wrt = _wrt(case)
    jac = _no_fallback(srcgrad.jacrev(case.fn, wrt=wrt, strict=True), *copy_args(case.args))
    _check_jacobian(case, jac, wrt)


@pytest.mark.parametrize("transform", ["jacfwd", "jacrev"])
@pytest.mark.parametrize("wrt,argnums", [(0, 0), (1, 1), ((0, 1), (0, 1)), ("x", 1),
                                         (("x", "w"), (1, 0))])
def test_jacobian_wrt_variants(transform, wrt, argnums):
    case = BY_NAME["mlp_loss"]                                # parameters (w, x, y)
    jac = getattr(srcgrad, transform)(case.fn, wrt=wrt, strict=True)(*copy_args(case.args))
    assert_tree_close(jac, oracle(case, "jac", argnums), *tolerances(case))


def test_jvp_transform_object_matches_the_function_form():
    case = BY_NAME["helpers"]
    j = srcgrad.jvp(case.fn, strict=True)
    got = j(copy_args(case.args), tangents_for(case))
    assert_tree_close(got, oracle(case, "jvp"), *tolerances(case))
    assert "def " in j.source and j.graph is not None


def test_jvp_of_a_lambda_and_a_zero_tangent():
    case = BY_NAME["two_floats"]
    value, tangent = srcgrad.jvp(lambda y: case.fn(0.7, y), (-1.3,), (0.0,), strict=True)
    assert tangent == 0.0 and value == case.fn(0.7, -1.3)
    value, tangent = srcgrad.jvp(case.fn, (0.7, -1.3), (1.0, 0.0), strict=True)
    np.testing.assert_allclose(tangent, np.sin(-1.3) + 3 * 1.3 ** 2 * 0.7 ** 2, rtol=1e-12)


def test_the_oracle_runs_on_jax_helpers_included():
    fn = rebound(BY_NAME["helpers"].fn)
    assert fn.__globals__["np"] is jax.numpy
    assert fn.__globals__["_helper"].__globals__["np"] is jax.numpy
    assert isinstance(fn(*BY_NAME["helpers"].args), jax.Array)


# ---------------------------------------------------------------------------- misuse


def test_jvp_with_a_tangent_of_the_wrong_shape_raises():
    f = BY_NAME["elementwise"].fn
    x = np.ones(4)
    with pytest.raises((ValueError, TypeError)):               # JAX: ValueError
        jax.jvp(f, (x,), (np.ones(3),))
    with pytest.raises(ValueError, match="shape"):
        srcgrad.jvp(f, (x,), (np.ones(3),), strict=True)
    with pytest.raises(ValueError, match="shape"):
        srcgrad.jvp(f, (x,), (np.ones((4, 1)),))


def test_jvp_with_mismatched_lengths_or_structure_raises():
    case = BY_NAME["dict_params"]
    p, x = copy_args(case.args)
    with pytest.raises(TypeError):
        srcgrad.jvp(case.fn, (p, x), (p,), strict=True)
    with pytest.raises(TypeError):
        srcgrad.jvp(case.fn, (p, x), ({"w": p["w"]}, x), strict=True)
    with pytest.raises(TypeError):
        srcgrad.jvp(case.fn, p, (p, x), strict=True)           # primals not in a tuple


def _unsupported(x):
    y = np.sin(x)
    del x                         # not compiled yet
    return y


def test_strict_refuses_unsupported_code_with_a_compile_error():
    x = np.ones(3)
    with pytest.raises(srcgrad.CompileError):
        srcgrad.jvp(_unsupported, (x,), (x,), strict=True)
    with pytest.raises(srcgrad.CompileError):
        srcgrad.jacfwd(_unsupported, strict=True)(x)
    with pytest.raises(srcgrad.CompileError):
        srcgrad.jacrev(_unsupported, strict=True)(x)


def test_without_strict_unsupported_code_falls_back_with_a_warning():
    x = np.array([0.1, 0.2, 0.3])
    with pytest.warns(srcgrad.FallbackWarning):
        value, tangent = srcgrad.jvp(_unsupported, (x,), (np.ones(3),))
    np.testing.assert_allclose(tangent, np.cos(x), rtol=1e-12)
    np.testing.assert_allclose(value, np.sin(x), rtol=1e-12)


def test_jacobian_wrt_errors():
    f = BY_NAME["mlp_loss"].fn
    with pytest.raises(ValueError, match="no parameter"):
        srcgrad.jacfwd(f, wrt="nope")
    with pytest.raises(TypeError):
        srcgrad.jacrev(f, wrt=1.5)
    with pytest.raises(TypeError):                            # an int argument
        srcgrad.jacfwd(lambda n: n * 2.0, strict=True)(3)


# -------------------------------------------------------------------- generated source


def _standalone(source: str, name: str):
    """The function ``name`` of ``source`` executed in a namespace of its own."""
    namespace: dict = {"__name__": "standalone_generated"}
    exec(compile(source, "<generated>", "exec"), namespace)
    assert set(namespace) - {"__name__", "__builtins__", "__doc__"} >= {"np", name}
    return namespace[name]


@pytest.mark.parametrize("name", ["helpers", "for", "setitem", "dict_params", "break"])
def test_jvp_source_runs_standalone_and_is_deterministic(name):
    case = BY_NAME[name]
    args, tangents = copy_args(case.args), tangents_for(case)
    j = srcgrad.jvp(case.fn, strict=True)
    want = j(args, tangents)
    again = srcgrad.jvp(case.fn, strict=True)
    again(copy_args(case.args), tangents)
    assert j.source == again.source
    fn = _standalone(j.source, f"{case.fn.__name__}_jvp")
    got = fn(*copy_args(case.args), *tangents)
    assert_tree_close(got, want, 0, 0)
