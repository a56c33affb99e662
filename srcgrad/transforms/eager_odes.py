"""Stand-ins for ``scipy.integrate.odeint`` and ``scipy.integrate.solve_ivp`` in the eager run.

SciPy integrates on plain arrays (the user's function is called on them, exactly as NumPy
runs it); when ``y0``, the times or ``args=`` carry a gradient, the solution is one node of
the eager graph whose backward runs the adjoint method (:mod:`srcgrad.transforms.ode_adjoint`)
with the caller's solver and tolerances.  What the adjoint does not model is refused when a
gradient would flow through it: ``solve_ivp`` without ``t_eval`` (its output times follow
the adaptive steps), with ``dense_output=True``, ``events`` or ``vectorized=True``; forward
mode (tangents); a gradient through ``rtol=`` and the other options.
"""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from srcgrad.runtime.eager import grad_mode
from srcgrad.runtime.eager import tensor as _tensor
from srcgrad.runtime.eager.constants import carries_gradient
from srcgrad.runtime.eager.tensor import Tensor
from srcgrad.transforms import pytree
from srcgrad.transforms.ode_adjoint import (
    OdeSystem,
    adjoint,
    extended_tolerance,
    plain_of,
    recorded,
    state_of,
)

__all__ = ["ode_stand_in"]

ODEINT = "scipy.integrate.odeint"
SOLVE_IVP = "scipy.integrate.solve_ivp"
# odeint's options that describe the forward system alone (its Jacobian, its band, where it
# starts stepping, its output): left out of the adjoint's solves
_FORWARD_ONLY = ("Dfun", "col_deriv", "full_output", "ml", "mu", "tcrit", "h0", "tfirst")
_IVP_ADJOINT = ("max_step", "min_step")


def _wants(x: Any) -> bool:
    return isinstance(x, Tensor) and x._requires_grad


def _refuse_tangents(name: str, values: Any) -> None:
    """A value with a tangent (forward mode): refused, not dropped."""
    forward = sys.modules.get("srcgrad.runtime.eager.forward_ad")
    if _tensor._forward_hook is None or forward is None:
        return
    if any(isinstance(v, Tensor) and forward.tangent_of(v) is not None
           for v in pytree.flatten(values)[0]):
        raise TypeError(f"{name}: srcgrad differentiates an ODE solve in reverse mode (the "
                        "adjoint method); forward mode (jvp, jacfwd) through it is not followed")


def _plain_callable(fun: Any) -> Any:
    """A callable SciPy calls (a Jacobian), its result made plain."""
    if not callable(fun):
        return plain_of(fun)

    @functools.wraps(fun)
    def plain(*args: Any) -> Any:
        return plain_of(fun(*args))
    return plain


def _no_gradient_in(name: str, options: dict) -> None:
    for key, value in options.items():
        if carries_gradient(value):
            raise TypeError(f"{name}({key}=...): the argument carries a gradient, which srcgrad "
                            f"does not follow; differentiate with respect to y0, the times or "
                            "args=")


class _Solver:
    """A SciPy solver's stand-in; ``runs(func)`` is the context in which the eager engine
    runs the user's function (its module's NumPy stand-ins)."""

    def __init__(self, fun: Any, runs: Callable[[Any], Any] | None) -> None:
        self._fun, self._runs = fun, runs
        self._signature = inspect.signature(fun)
        functools.update_wrapper(self, fun)
        self.srcgrad_stands_in_for = fun

    def _bound(self, args: tuple, kwargs: dict) -> dict:
        bound = self._signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return dict(bound.arguments)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._fun, name)

    def __repr__(self) -> str:
        return repr(self._fun)


class _Odeint(_Solver):
    """``scipy.integrate.odeint``: its solution a node whose backward is the adjoint."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        p = self._bound(args, kwargs)
        func, fargs = p.pop("func"), p.pop("args")
        y0, t = state_of(p.pop("y0")), state_of(p.pop("t"))
        if not isinstance(fargs, tuple):        # SciPy's own error
            return self._fun(func, plain_of(y0), plain_of(t), args=plain_of(fargs), **p)
        _no_gradient_in(ODEINT, {k: v for k, v in p.items() if k != "Dfun"})
        _refuse_tangents(ODEINT, (y0, t, fargs))
        system = OdeSystem(ODEINT, func, fargs, bool(p["tfirst"]), self._runs)
        options = dict(p, Dfun=None if p["Dfun"] is None else _plain_callable(p["Dfun"]))
        y0p, tp = plain_of(y0), np.asarray(plain_of(t), dtype=float)
        out = self._fun(system.plain, y0p, tp, args=system.plain_args, **options)
        ys = out[0] if p["full_output"] else out
        tensors = [x for x in (y0, t) if _wants(x)] + system.tensors
        if not tensors or not grad_mode.is_grad_enabled():
            return out
        y0_flat = np.asarray(y0p, dtype=float).reshape(-1)
        solve = {k: v for k, v in options.items() if k not in _FORWARD_ONLY}
        size = 2 * y0_flat.size + system.size
        solve["rtol"] = extended_tolerance(options["rtol"], y0_flat.size, size)
        solve["atol"] = extended_tolerance(options["atol"], y0_flat.size, size)

        def segment(rhs: Callable, s: np.ndarray, start: float, end: float) -> np.ndarray:
            return self._fun(rhs, s, np.array([start, end]), **solve)[-1]

        def backward(g: np.ndarray) -> list:
            a, g_times, g_t0, b = adjoint(system, tp.reshape(-1), ys, g, float(tp.reshape(-1)[0]),
                                          y0_flat, segment, _wants(t))
            g_times[0] += g_t0
            grads = [a.reshape(np.shape(y0._data))] if _wants(y0) else []
            grads += [g_times.reshape(np.shape(t._data))] if _wants(t) else []
            return grads + system.unflatten_grads(b)

        result = recorded(ys, "OdeintBackward", tensors, backward)
        return (result, out[1]) if p["full_output"] else result


class _SolveIvp(_Solver):
    """``scipy.integrate.solve_ivp`` with ``t_eval``: ``.y`` a node whose backward is the
    adjoint (``.t`` the recorded ``t_eval`` it reached)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        p = self._bound(args, kwargs)
        options = p.pop("options", {})
        fun, fargs = p["fun"], p["args"]
        if isinstance(fargs, list):
            fargs = tuple(fargs)
        t_span, y0 = state_of(p["t_span"]), state_of(p["y0"])
        t_eval = None if p["t_eval"] is None else state_of(p["t_eval"])
        _no_gradient_in(SOLVE_IVP, dict(options, method=p["method"]))
        _refuse_tangents(SOLVE_IVP, (t_span, y0, t_eval, fargs))
        flows = carries_gradient((t_span, y0, t_eval, fargs))
        if flows and isinstance(fargs, tuple):
            _refuse_unmodelled(p)
        system = OdeSystem(SOLVE_IVP, fun, fargs if isinstance(fargs, tuple) else (),
                           True, self._runs)
        plain_options = {k: _plain_callable(v) if k == "jac" else plain_of(v)
                         for k, v in options.items()}
        call = dict(p, fun=system.plain, t_span=plain_of(t_span), y0=plain_of(y0),
                    t_eval=plain_of(t_eval), **plain_options)
        call["args"] = system.plain_args if isinstance(fargs, tuple) and p["args"] is not None \
            else fargs
        res = self._fun(**call)
        tensors = [x for x in (t_span, y0, t_eval) if _wants(x)] + system.tensors
        if not tensors or not grad_mode.is_grad_enabled():
            return res
        y0_flat = np.asarray(call["y0"], dtype=float).reshape(-1)
        t0, times = float(np.asarray(call["t_span"], dtype=float)[0]), np.asarray(res.t)
        size = 2 * y0_flat.size + system.size
        solve = {k: v for k, v in plain_options.items() if k in _IVP_ADJOINT}
        for key in ("rtol", "atol"):
            if key in plain_options:
                solve[key] = extended_tolerance(plain_options[key], y0_flat.size, size)
        ys = np.asarray(res.y).T

        def segment(rhs: Callable, s: np.ndarray, start: float, end: float) -> np.ndarray:
            sol = self._fun(lambda t, state: rhs(state, t), (start, end), s,
                            method=p["method"], **solve)
            if sol.status != 0:
                raise RuntimeError(f"{SOLVE_IVP}: the adjoint's solve from t={start} to "
                                   f"t={end} failed ({sol.message})")
            return sol.y[:, -1]

        want_times = _wants(t_span) or _wants(t_eval)

        def backward(g: np.ndarray) -> list:
            a, g_times, g_t0, b = adjoint(system, times, ys, g.T, t0, y0_flat, segment,
                                          want_times)
            grads = [np.array([g_t0, 0.0]).reshape(np.shape(t_span._data))] \
                if _wants(t_span) else []
            grads += [a.reshape(np.shape(y0._data))] if _wants(y0) else []
            if _wants(t_eval):
                full = np.zeros(t_eval._data.size)
                full[:len(times)] = g_times
                grads.append(full.reshape(np.shape(t_eval._data)))
            return grads + system.unflatten_grads(b)

        res.y = recorded(res.y, "SolveIvpBackward", tensors, backward)
        if _wants(t_eval):
            res.t = np.copy(np.reshape(t_eval, (-1,))[:len(times)])
        return res


def _refuse_unmodelled(p: dict) -> None:
    """What the adjoint of ``solve_ivp`` does not model, when a gradient flows: refused."""
    reasons = []
    if p["t_eval"] is None:
        reasons.append("without t_eval= its output times follow the solver's adaptive steps, "
                       "which no gradient follows; give t_eval=")
    if p["dense_output"]:
        reasons.append("dense_output=True (its interpolant) is not differentiated")
    if p["events"] is not None:
        reasons.append("events= (their times depend on the solution) are not differentiated")
    if p["vectorized"]:
        reasons.append("vectorized=True is not followed; leave it False")
    if reasons:
        raise TypeError(f"{SOLVE_IVP} is differentiated by srcgrad by the adjoint method at "
                        f"the times of t_eval=: {'; '.join(reasons)}")


def ode_stand_in(value: Any, runs: Callable[[Any], Any] | None = None) -> Any:
    """The stand-in of ``scipy.integrate.odeint`` or ``solve_ivp`` (None: ``value`` is
    neither)."""
    integrate = sys.modules.get("scipy.integrate")
    if integrate is None:
        return None
    if value is getattr(integrate, "odeint", None):
        return _Odeint(value, runs)
    if value is getattr(integrate, "solve_ivp", None):
        return _SolveIvp(value, runs)
    return None
