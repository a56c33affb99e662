"""Higher order, compiled strict: ``srcgrad.hessian`` and the compositions ``grad(grad(f))``,
``jvp(grad(f))`` (Hessian-vector products), ``jacfwd``/``jacrev`` of ``jacrev``/``grad``,
over every scalar-valued case of ``higher_order_cases``, against JAX (the same function with
``np`` rebound) and central differences of the compiled first-order gradient; calls of
``srcgrad.jvp``/``grad`` inside a differentiated function; misuse; the generated source of a
Hessian running alone and built deterministically."""

from __future__ import annotations

import ast

import numpy as np
import pytest

jax = pytest.importorskip("jax")

from higher_order_cases import (  # noqa: E402
    BY_NAME,
    SCALAR,
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

# Failures known today, by test id ("hessian[case]"): strict, so a fix turns them into failures.
KNOWN: dict[str, str] = {}


def _params(prefix, cases):
    return [pytest.param(c, id=c.name, marks=[pytest.mark.xfail(
        strict=True, reason=KNOWN[f"{prefix}[{c.name}]"])] if f"{prefix}[{c.name}]" in KNOWN
        else []) for c in cases]


def _hessian_matrix(hess, args, p=0):
    """A Hessian pytree (gradient's structure, then the argument's) as an (n, n) matrix."""
    sizes = [int(np.size(leaf)) for leaf in tree_leaves(args[p])]
    blocks = [np.asarray(b, dtype=np.float64) for b in tree_leaves(hess)]
    rows = [np.concatenate([blocks[i * len(sizes) + j].reshape(n, m)
                            for j, m in enumerate(sizes)], axis=1)
            for i, n in enumerate(sizes)]
    return np.concatenate(rows, axis=0)


def _check_hessian(case, hess, p=0):
    """Against JAX's jacrev of jacrev (structure, dtypes) and against central differences
    of the compiled gradient (the first-order transform, tested on its own elsewhere)."""
    assert_tree_close(hess, oracle(case, "hess", p), *tolerances(case), f32_dtypes=True)
    first = srcgrad.grad(case.fn, wrt=p, strict=True)
    fd = fd_jacobian(first, case.args, p)
    np.testing.assert_allclose(_hessian_matrix(hess, case.args, p), fd,
                               rtol=1e-3 if case.f32 else 1e-5,
                               atol=1e-4 if case.f32 else 1e-6)


@pytest.mark.parametrize("case", _params("hessian", SCALAR))
def test_hessian(case):
    _check_hessian(case, srcgrad.hessian(case.fn, strict=True)(*copy_args(case.args)))


COMPOSITIONS = ["jacfwd(jacrev)", "jacrev(jacrev)", "jacfwd(grad)", "jacrev(grad)"]


@pytest.mark.parametrize("case,compose", [
    pytest.param(c, k, id=f"{c.name}-{k}", marks=[pytest.mark.xfail(
        strict=True, reason=KNOWN[f"{k}[{c.name}]"])] if f"{k}[{c.name}]" in KNOWN else [])
    for c in SCALAR for k in COMPOSITIONS])
def test_jacobian_of_a_first_derivative(case, compose):
    outer, inner = compose[:-1].split("(")
    first = getattr(srcgrad, inner)(case.fn, strict=True)
    hess = getattr(srcgrad, outer)(first, strict=True)(*copy_args(case.args))
    assert_tree_close(hess, oracle(case, "hess", 0), *tolerances(case), f32_dtypes=True)


@pytest.mark.parametrize("wrt,argnums", [(1, 1), ("w", 0), ("x", 1), ((0, 1), (0, 1)),
                                         (("x", "w"), (1, 0))])
def test_hessian_wrt_variants(wrt, argnums):
    case = BY_NAME["mlp_loss"]                                # parameters (w, x, y)
    hess = srcgrad.hessian(case.fn, wrt=wrt, strict=True)(*copy_args(case.args))
    assert_tree_close(hess, oracle(case, "hess", argnums), *tolerances(case))
    if not isinstance(wrt, tuple):
        _check_hessian(case, hess, argnums)


@pytest.mark.parametrize("case", _params("hvp", SCALAR))
def test_jvp_of_grad_is_a_hessian_vector_product(case):
    args, tangents = copy_args(case.args), tangents_for(case)
    value, tangent = srcgrad.jvp(srcgrad.grad(case.fn, strict=True), args, tangents,
                                 strict=True)
    want = oracle(case, "hvp")
    rtol, atol = tolerances(case)
    assert_tree_close(value, want[0], rtol, atol, f32_dtypes=True)
    assert_tree_close(tangent, want[1], rtol, atol, f32_dtypes=True)
    fd = fd_jvp(srcgrad.grad(case.fn, strict=True), case.args, tangents)
    assert_tree_close(tangent, fd, 1e-3 if case.f32 else 1e-5, 1e-4 if case.f32 else 1e-6)


@pytest.mark.parametrize("name", ["float", "0d", "two_floats"])
def test_grad_of_grad_of_a_scalar(name):
    case = BY_NAME[name]
    got = srcgrad.grad(srcgrad.grad(case.fn, strict=True), strict=True)(*case.args)
    fn = rebound(case.fn)
    assert_tree_close(got, jax.jit(jax.grad(jax.grad(fn)))(*case.args), 1e-10, 1e-12)
    first = srcgrad.grad(case.fn, strict=True)
    fd = fd_jvp(first, case.args, tuple(1.0 if i == 0 else 0.0 * a
                                        for i, a in enumerate(case.args)))
    np.testing.assert_allclose(got, fd, rtol=1e-6)
    vg = srcgrad.value_and_grad(srcgrad.grad(case.fn, strict=True), strict=True)(*case.args)
    assert_tree_close(vg, (first(*case.args), got), 1e-12, 0)


def test_mixed_partials_of_two_floats():
    case = BY_NAME["two_floats"]
    fn, (x, y) = rebound(case.fn), case.args
    xy = srcgrad.grad(srcgrad.grad(case.fn, wrt=0, strict=True), wrt=1, strict=True)(x, y)
    yx = srcgrad.grad(srcgrad.grad(case.fn, wrt=1, strict=True), wrt=0, strict=True)(x, y)
    yy = srcgrad.grad(srcgrad.grad(case.fn, wrt=1, strict=True), wrt=1, strict=True)(x, y)
    np.testing.assert_allclose(xy, jax.grad(jax.grad(fn, 0), 1)(x, y), rtol=1e-12)
    np.testing.assert_allclose(yx, jax.grad(jax.grad(fn, 1), 0)(x, y), rtol=1e-12)
    np.testing.assert_allclose(yy, jax.grad(jax.grad(fn, 1), 1)(x, y), rtol=1e-12)
    np.testing.assert_allclose(xy, np.cos(y) + 6 * y * x ** 2, rtol=1e-12)


# ------------------------------------------------- transforms called inside compiled code

V = np.array([0.3, -0.5, 0.8])
_inner = BY_NAME["elementwise_sum"].fn


def _directional(x):
    return srcgrad.jvp(_inner, (x,), (V,))[1]


def _grad_dot(x):
    return srcgrad.grad(_inner)(x) @ V


def _hvp_oracle():
    fn = rebound(_inner)
    return jax.jit(lambda x: jax.jvp(jax.grad(fn), (x,), (V,))[1])


@pytest.mark.parametrize("fun", [_directional, _grad_dot], ids=["grad_of_jvp", "grad_of_grad_dot"])
def test_grad_of_a_function_calling_a_transform(fun):
    x = np.array([0.2, -0.4, 0.9])
    got = srcgrad.grad(fun, strict=True)(x)
    want = _hvp_oracle()(x)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------------------- misuse


def test_grad_of_grad_of_a_vector_raises_value_error():
    f = BY_NAME["elementwise_sum"].fn
    with pytest.raises(ValueError, match="scalar"):
        srcgrad.grad(srcgrad.grad(f, strict=True), strict=True)(np.ones(3))
    with pytest.raises((TypeError, ValueError)):               # JAX refuses it too
        jax.grad(jax.grad(rebound(f)))(np.ones(3))


def _unsupported(x):
    y = np.sum(np.sin(x) * x)
    del x                         # not compiled yet
    return y


def test_strict_refuses_unsupported_code_with_a_compile_error():
    x = np.array([0.1, 0.2, 0.3])
    with pytest.raises(srcgrad.CompileError):
        srcgrad.hessian(_unsupported, strict=True)(x)
    with pytest.raises(srcgrad.CompileError):
        srcgrad.jvp(srcgrad.grad(_unsupported, strict=True), (x,), (x,), strict=True)
    with pytest.raises(srcgrad.CompileError):
        srcgrad.grad(srcgrad.grad(_unsupported, strict=True), strict=True)(0.3)


# -------------------------------------------------------------------- generated source


@pytest.mark.parametrize("name", ["helpers", "for", "mlp_loss", "dict_params", "float"])
def test_hessian_source_runs_standalone_and_is_deterministic(name):
    """The source is ``f``'s directional derivative, differentiated in reverse mode. For an
    array or float argument it ends with ``<f>_hessian(*args)``, a loop over the unit
    tangents: the whole Hessian.  Otherwise ``<f>_tangent_vjp(*args, along)`` gives
    ``(tangent, backward)``, and ``backward(1)`` at argument 0 is the Hessian's column along
    ``along``."""
    case = BY_NAME[name]
    h = srcgrad.hessian(case.fn, strict=True)
    want = h(*copy_args(case.args))
    again = srcgrad.hessian(case.fn, strict=True)
    again(*copy_args(case.args))
    assert h.source is not None and h.source == again.source
    namespace: dict = {"__name__": "standalone_generated"}
    exec(compile(h.source, "<generated>", "exec"), namespace)
    whole = namespace.get(f"{case.fn.__name__}_hessian")
    if whole is not None:
        assert_tree_close(whole(*copy_args(case.args)), want, 1e-12, 1e-12)
        return
    vjp = namespace[f"{case.fn.__name__}_tangent_vjp"]
    along = jax.tree_util.tree_map(lambda a: 1.0 if isinstance(a, float) else np.ones_like(a),
                                   case.args[0])
    _, backward = vjp(*copy_args(case.args), along)
    zeros = [jax.tree_util.tree_map(lambda a: a * 0.0, a) for a in case.args[1:]]
    fn = rebound(case.fn)
    want = jax.jit(lambda *a: jax.jvp(jax.grad(fn), a, (along, *zeros))[1])(*case.args)
    assert_tree_close(backward(1.0)[0], want, 1e-12, 1e-12)


def _named_like_the_hessian_loop(params, n, units):
    return np.sum(params ** 3) * n + np.sum(np.sin(params)) * units


def _looping_hessian(x):
    s = 0.0
    for i in range(3):
        s = s + np.sum(np.sin(x * (i + 1)))
    return s


@pytest.mark.parametrize("fun, args, exact", [
    (_named_like_the_hessian_loop, (2.0, 3.0),
     lambda x: np.diag(6 * x * 2.0 - np.sin(x) * 3.0)),
    (_looping_hessian, (), lambda x: np.diag(-sum((i + 1) ** 2 * np.sin(x * (i + 1))
                                                   for i in range(3)))),
])
def test_hessian_loop_keeps_user_names_apart(fun, args, exact):
    """The Hessian's loop is built as an AST from a template whose placeholder names
    (``params``, ``n``, ``units``) may be the user's own: hoisted and plain loop alike."""
    x = np.array([0.3, -0.7, 1.1])
    h = srcgrad.hessian(fun, strict=True)
    np.testing.assert_allclose(h(x, *args), exact(x), rtol=1e-12, atol=1e-12)
    ast.parse(h.source)
