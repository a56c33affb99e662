"""``scipy.integrate.odeint`` and ``solve_ivp`` in default mode, differentiated by the adjoint
method with respect to ``y0``, the times and ``args=``: the gradient == central finite
differences == HIPS autograd's ``autograd.scipy.integrate.odeint`` (the same functions, their
globals re-bound) == a closed form for ``y' = A y``; what the adjoint does not model refused
with a CompileError, strict mode refused at the call's line, the caller's arrays unchanged.
"""

from __future__ import annotations

import importlib.util
import types
import warnings

import numpy as np
import pytest
from conftest import numerical_grad

import srcgrad
from srcgrad.errors import CompileError

pytestmark = pytest.mark.skipif(importlib.util.find_spec("scipy") is None,
                                reason="SciPy is not installed")
HAS_AUTOGRAD = importlib.util.find_spec("autograd") is not None

from scipy import integrate  # noqa: E402
from scipy.integrate import odeint, solve_ivp  # noqa: E402
from scipy.linalg import expm, expm_frechet  # noqa: E402

TOL = dict(rtol=1e-11, atol=1e-11)


def pendulum(y, t, damping, length):
    theta, omega = y
    return np.array([omega, -damping * omega - 9.81 / length * np.sin(theta)])


def pendulum_loss(params, y0, t):
    damping, length = params
    sol = odeint(pendulum, y0, t, args=(damping, length), rtol=1e-11, atol=1e-11)
    return np.sum(sol[:, 0] ** 2 * np.cos(t)) + np.sum(sol[:, 1])


def by_y0(y0, params, t):
    return pendulum_loss(params, y0, t)


def by_times(t, params, y0):
    return pendulum_loss(params, y0, t)


def linear(y, t, A):
    return A @ y


def linear_loss(A, y0, w):
    sol = odeint(linear, y0, np.array([0.0, 0.4, 1.0]), args=(A,), rtol=1e-12, atol=1e-12)
    return w @ sol[-1]


def lotka(y, t, rates, scale, n):
    prey, predator = y[0], y[1]
    return [rates[0] * prey - scale * prey * predator,
            n * scale * prey * predator - rates[1] * predator]


def lotka_loss(rates, scale, y0):
    sol = odeint(lotka, y0, np.linspace(0.0, 3.0, 6), args=(rates, scale, 0.5), rtol=1e-11,
                 atol=1e-11)
    return np.sum(np.log(sol))


def forced(t, y, k, c):
    return -k * y + c * np.sin(t)


def ivp_loss(y0, k, c, t_eval, t_span):
    sol = integrate.solve_ivp(forced, t_span, y0, t_eval=t_eval, args=(k, c), rtol=1e-11,
                              atol=1e-12)
    return np.sum(sol.y ** 2 * np.arange(1, 1 + len(t_eval))) + np.sum(sol.t)


def _grad(f, wrt, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return srcgrad.grad(f, wrt)(*args)


def _autograd(f):
    """``f`` with this module's NumPy and odeint re-bound to autograd's (args= passed as
    autograd's traced tuple, which its odeint needs)."""
    import autograd.numpy as anp
    from autograd.builtins import tuple as traced_tuple
    from autograd.scipy.integrate import odeint as autograd_odeint

    def shim(func, y0, t, args=(), **kwargs):
        return autograd_odeint(func, y0, t, traced_tuple(args), **kwargs)
    home = f.__globals__
    scope = dict(home, np=anp, odeint=shim)
    for name, value in home.items():
        if isinstance(value, types.FunctionType) and value.__globals__ is home:
            scope[name] = types.FunctionType(value.__code__, scope, name, value.__defaults__,
                                             value.__closure__)
    return scope[f.__name__]


PARAMS, Y0, T = np.array([0.3, 1.2]), np.array([0.5, 0.1]), np.linspace(0, 2, 7)
CASES = [(pendulum_loss, (PARAMS, Y0, T)), (by_y0, (Y0, PARAMS, T)), (by_times, (T, PARAMS, Y0)),
         (by_times, (T[::-1].copy(), PARAMS, Y0))]


@pytest.mark.parametrize("f,args", CASES, ids=["args", "y0", "times", "decreasing times"])
def test_odeint_matches_finite_differences_and_autograd(f, args):
    g = _grad(f, 0, *args)
    fd = numerical_grad(f, [a.copy() for a in args], 0)
    np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-6)
    if HAS_AUTOGRAD:
        import autograd
        np.testing.assert_allclose(g, autograd.grad(_autograd(f))(*args), rtol=1e-6,
                                   atol=1e-8)


def test_linear_ode_gradients_are_the_closed_form():
    """``y(1) = expm(A) y0``: ``dL/dy0 = expm(A)ᵀ w``, ``dL/dA_ij = wᵀ D expm(A)[E_ij] y0``."""
    rng = np.random.default_rng(3)
    A, y0, w = rng.normal(size=(3, 3)) * 0.6, rng.normal(size=3), rng.normal(size=3)
    g_A = _grad(linear_loss, 0, A, y0, w)
    g_y0 = _grad(linear_loss, 1, A, y0, w)
    np.testing.assert_allclose(g_y0, expm(A).T @ w, rtol=1e-8, atol=1e-10)
    exact = np.zeros((3, 3))
    for i in range(3):
        for j in range(3):
            E = np.zeros((3, 3))
            E[i, j] = 1.0
            exact[i, j] = w @ expm_frechet(A, E, compute_expm=False) @ y0
    np.testing.assert_allclose(g_A, exact, rtol=1e-7, atol=1e-9)


def test_vector_state_list_result_and_several_args():
    """A function returning a list, args of an array, a float and an int (not differentiated)."""
    rates, y0 = np.array([1.1, 0.4]), np.array([1.0, 0.5])
    for wrt in (0, 1, 2):
        args = (rates, 0.3, y0)
        g = _grad(lotka_loss, wrt, *args)

        def at(x, k=wrt, given=args):
            values = list(given)
            values[k] = float(x) if k == 1 else x
            return lotka_loss(*values)
        x = np.array(0.3) if wrt == 1 else args[wrt].copy()
        fd = numerical_grad(lambda v: at(v), [x], 0)
        np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-6)   # autograd: no list results


IVP_ARGS = (np.array([1.0, 2.0]), np.array(0.7), np.array(0.5), np.linspace(0.2, 1.5, 5),
            np.array([0.0, 2.0]))


@pytest.mark.parametrize("wrt", range(5), ids=["y0", "k", "c", "t_eval", "t_span"])
def test_solve_ivp_with_t_eval_matches_finite_differences(wrt):
    g = _grad(ivp_loss, wrt, *IVP_ARGS)
    fd = numerical_grad(ivp_loss, [a.copy() for a in IVP_ARGS], wrt)
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-7)
    if wrt == 4:
        assert g[1] == 0.0           # the end of the span moves no output of t_eval


def test_solve_ivp_agrees_with_odeint_adjoint():
    """The same system through both solvers: the same gradient (to the tolerances)."""
    def by_odeint(y0, k):
        sol = odeint(lambda y, t, k: -k * y + 0.5 * np.sin(t), y0, np.linspace(0, 1.5, 4),
                     args=(k,), **TOL)
        return np.sum(sol ** 2)

    def by_ivp(y0, k):
        sol = solve_ivp(lambda t, y, k: -k * y + 0.5 * np.sin(t), (0.0, 1.5), y0,
                        t_eval=np.linspace(0, 1.5, 4), args=(k,), method="DOP853", **TOL)
        return np.sum(sol.y ** 2)
    y0, k = np.array([1.0, -0.5]), np.array(0.8)
    for wrt in (0, 1):
        np.testing.assert_allclose(_grad(by_ivp, wrt, y0, k), _grad(by_odeint, wrt, y0, k),
                                   rtol=1e-7)


def test_tfirst_and_full_output():
    def loss(k, y0):
        sol, info = odeint(lambda t, y, k: -k * y * t, y0, [0.0, 0.5, 1.0], args=(k,),
                           tfirst=True, full_output=True, **TOL)
        assert info["message"] == "Integration successful."
        return np.sum(sol[-1])
    k, y0 = np.array(0.9), np.array([1.0, 2.0])
    exact = -np.sum(y0) * 0.5 * np.exp(-0.9 * 0.5)         # y(1) = y0 exp(-k/2)
    np.testing.assert_allclose(_grad(loss, 0, k, y0), exact, rtol=1e-8)


def test_the_callers_arrays_are_not_changed():
    args = tuple(a.copy() for a in (PARAMS, Y0, T))
    _grad(pendulum_loss, 0, *args)
    _grad(by_times, 0, T.copy(), PARAMS.copy(), Y0.copy())
    for given, kept in zip(args, (PARAMS, Y0, T)):
        np.testing.assert_array_equal(given, kept)


def test_a_solve_without_gradient_runs_as_scipy():
    def loss(w, y0):
        sol = odeint(lambda y, t: -y, y0, [0.0, 1.0])
        return np.sum(w * sol[-1])
    y0 = np.array([1.0, 3.0])
    np.testing.assert_allclose(_grad(loss, 0, np.ones(2), y0), odeint(lambda y, t: -y, y0,
                                                                      [0.0, 1.0])[-1])


def test_strict_mode_refuses_with_the_line():
    with pytest.raises(CompileError, match=r"(?s)odeint: differentiated in default mode by "
                       r"the adjoint method.*test_odeint_adjoint\.py\", line \d+"):
        srcgrad.grad(pendulum_loss, strict=True)(PARAMS, Y0, T)
    with pytest.raises(CompileError, match=r"(?s)solve_ivp.*adjoint.*line \d+"):
        srcgrad.grad(ivp_loss, strict=True)(*IVP_ARGS)


def _refused(body):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(CompileError, match=body):
            srcgrad.grad(REFUSED[body], (0, 1))(np.array([1.0, 2.0]), np.array(0.5))


REFUSED = {
    "dense_output": lambda y0, k: np.sum(solve_ivp(forced, (0.0, 1.0), y0, t_eval=[0.5, 1.0],
                                                   args=(k, 0.1), dense_output=True).y),
    "without t_eval": lambda y0, k: np.sum(solve_ivp(forced, (0.0, 1.0), y0,
                                                     args=(k, 0.1)).y),
    "events": lambda y0, k: np.sum(solve_ivp(forced, (0.0, 1.0), y0, t_eval=[1.0], args=(
        k, 0.1), events=lambda t, y, k, c: y[0] - 0.5).y),
    "closure": lambda y0, k: np.sum(odeint(lambda y, t: -k * y, y0, [0.0, 1.0])),
}


@pytest.mark.parametrize("body", list(REFUSED))
def test_what_the_adjoint_does_not_model_is_refused(body):
    _refused(body)


def test_forward_mode_is_refused():
    def solution(y0):
        return odeint(lambda y, t: -y * y, y0, [0.0, 1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(CompileError, match="forward mode"):
            srcgrad.jvp(solution, (np.array([1.0, 2.0]),), (np.ones(2),))


def test_a_second_derivative_is_refused():
    def loss(y0):
        return np.sum(odeint(lambda y, t: -y * y, y0, [0.0, 1.0]))
    with pytest.raises(CompileError):
        srcgrad.hessian(loss)(np.array([1.0, 2.0]))


def written(y, t, k):
    out = np.zeros(2)                 # written in place: recorded in the adjoint's vjp
    out[0] = -k[0] * y[0]
    out[1] = -k[1] * y[1] + y[0]
    return out


def written_solution(k, y0):
    return integrate.odeint(written, [y0[0], y0[1]], [0.0, 0.5, 1.0], args=(k,), **TOL)


def test_module_spelling_buffers_list_y0_and_vjp():
    """``integrate.odeint`` of a list ``y0`` whose items carry gradients, with a function
    that writes into ``np.zeros``; ``vjp`` agrees with ``grad`` and finite differences."""
    k, y0 = np.array([0.7, 1.3]), np.array([1.0, 0.5])

    def loss(k, y0):
        return np.sum(written_solution(k, y0) ** 2)
    g = _grad(loss, (0, 1), k, y0)
    for wrt in (0, 1):
        fd = numerical_grad(loss, [k.copy(), y0.copy()], wrt)
        np.testing.assert_allclose(g[wrt], fd, rtol=1e-6, atol=1e-8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value, back = srcgrad.vjp(written_solution, k, y0)
    for mine, theirs in zip(back(2 * value), g):
        np.testing.assert_allclose(mine, theirs, rtol=1e-12)


def decay(y, t, k):
    return -k * y


def decay_jacobian(y, t, k):
    return -k * np.eye(len(y))


def unwrapped(y, t, k):
    return -k * np.unwrap(y)


def test_jacobians_serve_the_forward_solve():
    """odeint's Dfun and Radau's jac are the forward system's: ``y(t) = y0 exp(-k t)``."""
    def by_dfun(k, y0):
        return np.sum(odeint(decay, y0, [0.0, 0.5, 1.0], args=(k,), Dfun=decay_jacobian,
                             **TOL))

    def by_radau(k, y0):
        sol = solve_ivp(lambda t, y, k: decay(y, t, k), (0.0, 1.0), y0, method="Radau",
                        t_eval=[0.5, 1.0], args=(k,),
                        jac=lambda t, y, k: decay_jacobian(y, t, k), rtol=1e-10, atol=1e-12)
        return np.sum(sol.y)
    k, y0 = np.array(0.8), np.array([1.0, 2.0])
    times = np.array([0.5, 1.0])
    for f in (by_dfun, by_radau):
        g_k, g_y0 = _grad(f, (0, 1), k, y0)
        np.testing.assert_allclose(g_k, -np.sum(y0) * np.sum(times * np.exp(-0.8 * times)),
                                   rtol=1e-7)
        start = 1.0 if f is by_dfun else 0.0        # odeint's outputs include y0 itself
        np.testing.assert_allclose(g_y0, start + np.sum(np.exp(-0.8 * times)), rtol=1e-7)


def test_what_the_engine_refuses_in_the_function_is_its_refusal():
    def loss(k, y0):
        return np.sum(odeint(unwrapped, y0, [0.0, 1.0], args=(k,)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(CompileError, match=r"numpy\.unwrap has no srcgrad derivative rule"):
            srcgrad.grad(loss, (0, 1))(np.array(0.8), np.array([1.0, 2.0]))
