"""Rules for library functions real programs call: ``np.interp``, ``np.trapezoid``,
``np.vander``, ``sliding_window_view``, ``np.fft``'s transforms, ``scipy.linalg``'s
triangular and Cholesky solves, and ``math.erf``/``erfc``/``lgamma``/``gamma``.

Compiled (strict) == the eager run == central finite differences == JAX where JAX has the
function, forward mode against JAX's, and refusals for what is not modelled.  The FFT rules
run on the eager engine only (complex values): the compiler refuses them naming the line.
"""

from __future__ import annotations

import importlib
import math
import types
import warnings

import numpy as np
import pytest
from compiled_helpers import define
from conftest import numerical_grad

import srcgrad
from srcgrad.transforms.fallback import eager_transform

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
scipy_linalg = pytest.importorskip("scipy.linalg")

R = np.random.default_rng(21)
W = R.standard_normal((8, 9))
KNOTS = np.array([0.0, 0.3, 0.6, 1.0])
GRID = np.linspace(0.0, 1.0, 21)
XS = np.array([-0.2, 0.0, 0.05, 0.45, 0.6, 0.93, 1.0, 1.3])       # knots hit exactly too
A = R.standard_normal((4, 4))
SPD = A @ A.T + 4.0 * np.eye(4)


def _env(jnp=False):
    import scipy
    np_ = importlib.import_module("jax.numpy") if jnp else np
    env = {"np": np_, "W": np_.asarray(W), "KNOTS": np_.asarray(KNOTS), "XS": np_.asarray(XS),
           "GRID": np_.asarray(GRID), "scipy": scipy, "math": math,
           "sliding_window_view": np.lib.stride_tricks.sliding_window_view}
    if jnp:
        import jax.scipy.linalg as jlinalg
        env["scipy"] = types.SimpleNamespace(linalg=jlinalg)
    return env


def _fd(f, args, i):
    return numerical_grad(lambda *a: float(f(*a)), [np.array(a, dtype=float) for a in args], i)


def _check(src, args, wrt, jax_has=True, compiled=True, rtol=1e-6, atol=1e-7):
    f = define(src, _env())
    for i in wrt:
        saved = [np.copy(a) for a in args]
        eager = eager_transform(f, "grad", [np.copy(a) for a in args], (i,), False)[0]
        fd = _fd(f, args, i)
        np.testing.assert_allclose(eager, fd, rtol=rtol, atol=atol, err_msg=f"eager {src}")
        if compiled:
            g = srcgrad.grad(f, wrt=i, strict=True)(*args)
            np.testing.assert_allclose(g, eager, rtol=1e-9, atol=1e-12, err_msg=src)
        else:
            with pytest.raises(srcgrad.CompileError, match=r"line \d+|:\d+"):
                srcgrad.grad(f, wrt=i, strict=True)(*args)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", srcgrad.FallbackWarning)
                g = srcgrad.grad(f, wrt=i)(*args)
            np.testing.assert_allclose(g, eager, rtol=1e-12, atol=1e-14, err_msg=src)
        for a, s in zip(args, saved):
            np.testing.assert_array_equal(a, s)
        if jax_has:
            twin = types.FunctionType(f.__code__, _env(jnp=True))
            want = np.asarray(jax.grad(twin, argnums=i)(*args))
            np.testing.assert_allclose(eager, want, rtol=1e-7, atol=1e-9, err_msg=f"jax {src}")


def _body(body, names="x"):
    return f"def f({names}):\n    return {body}\n"


COMPILED = [
    # np.interp: fp, x and xp; left/right given or not; knots hit exactly
    ("np.sum(np.interp(XS, KNOTS, x) ** 2 * W[0, :8])", [R.standard_normal(4)], True),
    ("np.sum(np.interp(x, KNOTS, W[1, :4]) ** 3)", [XS + 0.013], True),
    ("np.sum(np.interp(x, KNOTS, W[1, :4], left=-1.0, right=2.0) ** 2)", [XS + 0.013], True),
    ("np.sum(np.interp(x, KNOTS, W[1, :4] * 0.0 + x[:4]) ** 2)", [XS[1:] + 0.011], True),
    ("np.sum(np.interp(XS + 0.01, x, W[2, :4]) ** 2)", [KNOTS + [0, 0.05, -0.04, 0]], True),
    ("np.sum(np.interp(x.reshape(2, 4), KNOTS, W[2, :4]) * W[:2, :4])", [XS + 0.007], True),
    ("np.interp(0.45, KNOTS, x) + np.interp(1.0, KNOTS, x) + np.interp(-3.0, KNOTS, x)",
     [R.standard_normal(4)], True),
    # np.trapezoid: x=, dx=, axis, an N-d x
    ("np.trapezoid(x ** 2, GRID[:6])", [R.standard_normal(6)], True),
    ("np.trapezoid(np.sin(x), dx=0.3)", [R.standard_normal(6)], True),
    ("np.sum(np.trapezoid(x * W[:3, :4], GRID[:3], axis=0) ** 2)", [R.standard_normal((3, 4))],
     True),
    ("np.sum(np.trapezoid(x ** 2, W[:3, :4].cumsum(axis=1), axis=1))",
     [R.standard_normal((3, 4))], True),
    ("np.sum(np.trapezoid(x ** 2, axis=-2) * W[0, :4])", [R.standard_normal((3, 4))], True),
    # ... and the gradient of the sample points and of the spacing
    ("np.trapezoid(W[0, :6] ** 2, np.cumsum(x ** 2))", [R.standard_normal(6)], True),
    ("np.sum(np.trapezoid(W[:3, :4], np.sort(x), axis=1) ** 2)", [R.standard_normal(4)], True),
    ("np.sum(np.trapezoid(W[:3, :4] * x[0], x ** 2, axis=0) ** 2)",
     [R.standard_normal((3, 4))], True),
    ("np.sum(np.trapezoid(W[:3, :4], x[:, None] ** 2, axis=0) ** 2)", [R.standard_normal(3)],
     True),
    ("np.trapezoid(x ** 3, dx=x[0] ** 2) + np.sum(np.trapezoid(W[:3, :4], dx=x[:3, None]))",
     [R.standard_normal(5)], True),
    # np.vander
    ("np.sum(np.vander(x, 4) ** 2 * W[:5, :4])", [np.array([0.1, 0.5, -1.2, 2.0, 0.3])], True),
    ("np.sum(np.vander(x, 4) * W[:3, :4])", [np.array([0.0, 0.5, -1.2])], False),  # JAX: nan
    ("np.sum(np.vander(x, increasing=True) * W[:3, :3])", [R.standard_normal(3)], True),
    ("np.sum(np.vander(x, N=1) + np.vander(x, 0).sum())", [R.standard_normal(3)], True),
    # sliding_window_view (NumPy's; JAX has none)
    ("np.sum(sliding_window_view(x, 3) ** 2 * W[:4, :3])", [R.standard_normal(6)], False),
    ("np.sum(sliding_window_view(x, (2, 3), axis=(0, 1)) ** 2 * W[:2, :3])",
     [R.standard_normal((4, 5, 2))], False),
    ("np.sum(sliding_window_view(x, (2, 2), axis=(1, 1)) ** 3)", [R.standard_normal((3, 5))],
     False),
    ("np.sum(sliding_window_view(x, (2, 3)) * W[0, 0])", [R.standard_normal((4, 5))], False),
]


@pytest.mark.parametrize("body,args,jax_has", COMPILED, ids=[c[0] for c in COMPILED])
def test_sampling_rules_compile_to_the_right_gradient(body, args, jax_has):
    _check(_body(body), args, [0], jax_has)


def test_interp_float32_and_forward_mode():
    f = define(_body("np.sum(np.interp(XS, x, W[0, :4]) * np.interp(XS, KNOTS, x))"), _env())
    x = KNOTS + [0.0, 0.02, -0.03, 0.0]
    g32 = srcgrad.grad(f, strict=True)(x.astype(np.float32))
    assert g32.dtype == np.float32
    np.testing.assert_allclose(g32, srcgrad.grad(f, strict=True)(x), rtol=1e-4, atol=1e-5)
    t = R.standard_normal(4)
    _, tangent = srcgrad.jvp(f, (x,), (t,), strict=True)
    twin = types.FunctionType(f.__code__, _env(jnp=True))
    _, want = jax.jvp(twin, (x,), (t,))
    assert float(tangent) == pytest.approx(float(want), rel=1e-9)


@pytest.mark.parametrize("body", [
    "np.sum(np.trapezoid(x ** 2, GRID[:4]) * np.vander(x, 3)[:, 0])",
    "np.sum(sliding_window_view(x, 2) ** 2)",
    "np.sum(np.interp(XS, KNOTS, x ** 2) ** 2)",
])
def test_forward_mode_and_second_order(body):
    f = define(_body(body), _env())
    x, t = R.uniform(0.2, 1.0, 4), R.standard_normal(4)
    _, tangent = srcgrad.jvp(f, (x,), (t,), strict=True)
    assert float(tangent) == pytest.approx(float(np.sum(_fd(f, [x], 0) * t)), rel=1e-6)
    h = srcgrad.hessian(f, strict=True)(x)
    column = (_fd(f, [x + 1e-4 * t], 0) - _fd(f, [x - 1e-4 * t], 0)) / 2e-4
    np.testing.assert_allclose(h @ t, column, rtol=1e-4, atol=1e-5)


LINALG = [
    "np.sum(scipy.linalg.solve_triangular(k, y, lower=True) ** 2)",
    "np.sum(np.sin(scipy.linalg.solve_triangular(k, y)))",
    "np.sum(scipy.linalg.solve_triangular(k, y, trans='T', lower=True) ** 2)",
    "np.sum(scipy.linalg.solve_triangular(k, y, trans=1, unit_diagonal=True) ** 2)",
    "np.sum(scipy.linalg.cho_solve((np.linalg.cholesky(k), True), y) * y)",
    "np.sum(scipy.linalg.cho_solve((np.linalg.cholesky(k).T, False), y) ** 2)",
    "np.sum(scipy.linalg.cho_solve(scipy.linalg.cho_factor(k), y) ** 2)",
    "np.sum(scipy.linalg.cho_solve(scipy.linalg.cho_factor(k, lower=True), y) ** 2)",
    "np.sum(scipy.linalg.cho_factor(k)[0] * W[:4, :4]) + np.sum(y)",
    "np.sum(scipy.linalg.cho_factor(k, lower=True)[0] ** 2) + np.sum(y)",
]


@pytest.mark.parametrize("rhs", [(4,), (4, 2)], ids=["vector", "matrix"])
@pytest.mark.parametrize("body", LINALG)
def test_scipy_linalg_solves_compile_to_the_right_gradient(body, rhs):
    """JAX's cho_factor leaves zeros in the unused triangle, and JAX's solves symmetrise
    nothing, but its cholesky reads both triangles: compared where they agree (wrt ``y``)."""
    args = [SPD + 0.1 * (W[:4, :4] + W[:4, :4].T), R.standard_normal(rhs)]   # symmetric
    _check(_body(body, "k, y"), args, [0], jax_has=False, rtol=1e-5, atol=1e-6)
    jax_has = "cho_factor(k)[0]" not in body and "lower=True)[0]" not in body
    _check(_body(body, "k, y"), args, [1], jax_has=jax_has, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("src", [
    "def f(k, y):\n    cf = scipy.linalg.cho_factor(k)\n"
    "    return np.sum(scipy.linalg.cho_solve(cf, y) ** 2)\n",
    "def f(k, y):\n    c, low = scipy.linalg.cho_factor(k, lower=True)\n"
    "    return np.sum(scipy.linalg.cho_solve((c, low), y, check_finite=False) ** 2)\n",
])
def test_cho_factor_s_tuple_through_names(src):
    args = [SPD + 0.1 * (W[:4, :4] + W[:4, :4].T), R.standard_normal(4)]
    _check(src, args, [0, 1], jax_has=False, rtol=1e-5, atol=1e-6)


def test_cho_factor_keeps_the_unused_triangle_of_its_argument():
    """SciPy's ``c`` holds ``a``'s own entries in the other triangle: their gradient is 1."""
    f = define(_body("np.sum(np.tril(scipy.linalg.cho_factor(k)[0], -1) * W[:4, :4])", "k"),
               _env())
    g = srcgrad.grad(f, strict=True)(SPD.copy())
    np.testing.assert_allclose(g, np.tril(W[:4, :4], -1))


def test_triangular_solve_forward_mode():
    f = define(_body("np.sum(scipy.linalg.cho_solve(scipy.linalg.cho_factor(k), y) ** 2)",
                     "k, y"), _env())
    k, y = SPD + 0.1 * W[:4, :4], R.standard_normal(4)
    tk, ty = R.standard_normal((4, 4)), R.standard_normal(4)
    _, tangent = srcgrad.jvp(f, (k, y), (tk, ty), strict=True)
    want = np.sum(_fd(f, [k, y], 0) * tk) + np.sum(_fd(f, [k, y], 1) * ty)
    assert float(tangent) == pytest.approx(float(want), rel=1e-6)


@pytest.mark.parametrize("body", [
    "np.sum(scipy.linalg.solve_triangular(np.stack([k, k]), np.stack([y, y])[..., None]))",
    "np.sum(scipy.linalg.cho_solve((k, True), np.stack([y, y])[..., None]) ** 2)",
])
def test_stacks_of_matrices_are_refused(body):
    f = define(_body(body, "k, y"), _env())
    args = [SPD.copy(), R.standard_normal(4)]
    with pytest.raises(srcgrad.CompileError):
        srcgrad.grad(f, strict=True)(*args)
    with pytest.raises(TypeError, match="2-D"):
        eager_transform(f, "grad", args, (0,), False)


MATH = [
    "0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))",
    "math.erfc(x) * math.exp(-x)",
    "math.lgamma(x + 1.5) + math.lgamma(-0.5 - x * 0.1)",
    "math.gamma(x + 1.2) * x",
]


@pytest.mark.parametrize("body", MATH)
def test_math_special_functions_of_a_float(body):
    f = define(_body(body), _env())
    for x in (0.3, 1.7):
        g = srcgrad.grad(f, strict=True)(x)
        eager = eager_transform(f, "grad", [x], (0,), False)[0]
        fd = (f(x + 1e-6) - f(x - 1e-6)) / 2e-6
        assert type(g) is float and g == pytest.approx(eager, rel=1e-12)
        assert g == pytest.approx(fd, rel=1e-6)
    with pytest.raises(ValueError):                        # math's own error, as Python
        srcgrad.grad(define(_body("math.gamma(x - x)"), _env()), strict=True)(0.5)


FFT = [
    ("np.sum(np.abs(np.fft.rfft(x)) ** 2 * W[:3, :3])", (3, 4)),
    ("np.sum(np.log1p(np.abs(np.fft.rfft(x, n=6, axis=0, norm='ortho'))))", (3, 4)),
    ("np.sum(np.abs(np.fft.rfft(x, n=12, axis=1, norm='forward')))", (3, 4)),
    ("np.sum(np.abs(np.fft.fft(x, axis=0)) * W[:3, :4])", (3, 4)),
    ("np.sum(np.abs(np.fft.fft(x, n=3)) ** 2)", (3, 4)),
    ("np.sum(np.fft.irfft(np.fft.rfft(x), n=4) * W[:3, :4])", (3, 4)),
    ("np.sum(np.fft.irfft(np.fft.rfft(x, axis=0), axis=0, norm='ortho') * W[:4, :4])",
     (5, 4)),
    ("np.sum(np.fft.irfft(np.fft.rfft(x), n=7, norm='forward') * W[0, :7])", (5,)),
    ("np.sum(np.abs(np.fft.ifft(np.fft.fft(x, n=5), n=6, norm='ortho')) ** 3)", (3, 4)),
    ("np.sum(np.abs(np.fft.ifft(x, axis=0)))", (3, 4)),
    ("np.sum(np.abs(np.fft.rfft(x)[1:]) ** 2)", (6,)),
    ("np.sum(np.abs(np.fft.fft2(x)) * W[:3, :4])", (2, 3, 4)),
    ("np.sum(np.abs(np.fft.fftn(x, s=(4, 3), axes=(0, 2), norm='ortho')) ** 2)", (2, 3, 4)),
    ("np.sum(np.abs(np.fft.ifft2(x, s=(2, 5))) ** 3)", (3, 4)),
    ("np.sum(np.abs(np.fft.ifftn(np.fft.fftn(x), axes=(1,))) * W[:3, :4])", (3, 4)),
    ("np.sum(np.abs(np.fft.rfft2(x)) * W[:3, :3])", (3, 4)),
    ("np.sum(np.abs(np.fft.rfftn(x, s=(4, 6), axes=(0, 1), norm='forward')) ** 2)", (3, 5)),
    ("np.sum(np.fft.irfft2(np.fft.rfft2(x)) * W[:3, :4])", (3, 4)),
    ("np.sum(np.fft.irfftn(np.fft.rfftn(x, axes=(0, 1)), s=(3, 5), axes=(0, 1), norm='ortho')"
     " * W[:3, :5])", (3, 4)),
]


@pytest.mark.parametrize("body,shape", FFT, ids=[c[0] for c in FFT])
def test_fft_runs_on_the_eager_engine_with_the_right_gradient(body, shape):
    _check(_body(body), [R.standard_normal(shape) + 0.5], [0], compiled=False)


def test_fft_forward_mode_is_refused():
    """The eager engine's forward mode holds no complex tangents: a CompileError naming the
    line, in default mode too."""
    f = define(_body("np.sum(np.fft.irfft(np.fft.rfft(x, n=8), n=8) * W[0, :8])"), _env())
    x, t = R.standard_normal(6), R.standard_normal(6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", srcgrad.FallbackWarning)
        with pytest.raises(srcgrad.CompileError, match="complex"):
            srcgrad.jvp(f, (x,), (t,))


@pytest.mark.parametrize("body", [
    "np.sum(np.abs(np.fft.rfft(x) * 2.0))",
    "np.sum(np.real(np.fft.rfft(x)))",
    "np.sum(np.abs(np.fft.rfft(x) ** 2))",
    "np.abs(np.sum(np.fft.fft(x)))",
])
def test_other_operations_on_complex_values_are_refused(body):
    f = define(_body(body), _env())
    x = R.standard_normal(6)
    with pytest.raises(TypeError, match="complex"):
        eager_transform(f, "grad", [x], (0,), False)
    with pytest.raises(srcgrad.CompileError):
        srcgrad.grad(f, strict=True)(x)


@pytest.mark.parametrize("body", [
    "np.sum(np.interp(XS, KNOTS, x, period=1.0))",
    "np.sum(np.interp(XS, KNOTS, x, left=x[0]))",
    "np.sum(sliding_window_view(x, 2, writeable=True))",
])
def test_arguments_not_modelled_are_refused(body):
    f = define(_body(body), _env())
    x = np.sort(R.uniform(0.0, 1.0, 4))
    with pytest.raises(srcgrad.CompileError):
        srcgrad.grad(f, strict=True)(x)
    with pytest.raises(TypeError):
        eager_transform(f, "grad", [x], (0,), False)


@pytest.mark.parametrize("call", ["solve_triangular(L, b, lower=True, overwrite_b=True)",
                                  "cho_solve(cho_factor(L @ L.T), b, overwrite_b=True)",
                                  "cho_solve(cho_factor(L @ L.T, overwrite_a=True), b)"])
def test_scipy_overwrite_flags_are_refused_in_both_modes(call):
    """SciPy may write into an operand given ``overwrite_*=True``: no gradient follows that."""
    scipy_linalg = pytest.importorskip("scipy.linalg")
    fn = define(f"def f(L, b):\n    x = {call}\n    return np.sum(x * b)\n",
                {"np": np, "solve_triangular": scipy_linalg.solve_triangular,
                 "cho_solve": scipy_linalg.cho_solve, "cho_factor": scipy_linalg.cho_factor})
    L = np.array([[2.0, 0.0], [0.5, 1.5]])
    b = np.array([1.0, -2.0])
    with pytest.raises(srcgrad.CompileError, match="overwrite_.=True"):
        srcgrad.grad(fn, wrt=(0, 1), strict=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", srcgrad.FallbackWarning)
        with pytest.raises(srcgrad.CompileError, match="overwrite_.=True"):
            srcgrad.grad(fn, wrt=(0, 1))(L.copy(), b.copy())


# A write into a read-only view (sliding_window_view, np.broadcast_to, a view of one): NumPy
# raises ValueError at the write; so do the compiled code and the eager engine, on the path
# that writes.  Inside a branch or loop body the compiler refuses, naming the line.
READ_ONLY_WRITES = [
    ("v = sliding_window_view(x, 2)\n    v[0, 0] = 5.0", True),
    ("v = sliding_window_view(x, 2)[1:]\n    w = v.T\n    w[0, 0] = 5.0", True),
    ("v = np.broadcast_to(x, (2, 4))\n    v[:, 0] *= 2.0", True),
    ("v = sliding_window_view(x, 2)\n    v += 1.0", True),
    ("v = sliding_window_view(x, 2)\n    if x[0] > 1.5:\n        v[0, 0] = 5.0", False),
    ("v = sliding_window_view(x, 2)\n    for i in range(2):\n        v[i] = 0.0", False),
]


@pytest.mark.parametrize("code, compiled", READ_ONLY_WRITES)
@pytest.mark.parametrize("first", [1.0, 2.0])
def test_a_write_into_a_read_only_view_raises_numpy_s_error(code, compiled, first):
    f = define(f"def f(x):\n    {code}\n    return np.sum(v ** 2)\n", _env())
    x = np.array([first, 2.0, 3.0, 4.0])
    try:
        f(x.copy())
    except ValueError as exc:
        raised = str(exc)
    else:
        raised = None
    saved = x.copy()
    runs = [lambda: eager_transform(f, "grad", [x], (0,), False)[0]]
    for how in ("grad", "hessian", "jacfwd"):
        runs.append(lambda how=how: getattr(srcgrad, how)(f)(x))
        if compiled:
            runs.append(lambda how=how: getattr(srcgrad, how)(f, strict=True)(x))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", srcgrad.FallbackWarning)
        for run in runs:
            if raised is None:
                got = run()
                assert np.shape(got) in ((4,), (4, 4))
            else:
                with pytest.raises(ValueError, match="read-only"):
                    run()
    if not compiled:
        with pytest.raises(srcgrad.CompileError, match=r"read-only.*|line \d+"):
            srcgrad.grad(f, strict=True)(x)
    np.testing.assert_array_equal(x, saved)


def test_a_write_into_a_copy_of_a_window_compiles():
    body = "v = sliding_window_view(x, 2).copy()\n    v[0, 0] = 5.0\n    return np.sum(v ** 2)"
    f = define(f"def f(x):\n    {body}\n", _env())
    x = R.standard_normal(4)
    got = srcgrad.grad(f, strict=True)(x)
    np.testing.assert_allclose(got, eager_transform(f, "grad", [x], (0,), False)[0],
                               rtol=1e-12)
    np.testing.assert_allclose(got, _fd(f, [x], 0), rtol=1e-6)
    np.testing.assert_allclose(got, [0.0, 4 * x[1], 4 * x[2], 2 * x[3]], rtol=1e-12)
