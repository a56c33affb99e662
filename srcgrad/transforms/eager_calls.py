"""Stand-ins for the eager fallback's run: NumPy's array makers and SciPy's functions.

While a function runs on the eager engine, :mod:`srcgrad.transforms.eager_lists` shows its
module NumPy and SciPy through stand-ins.  Those made here:

- ``np.zeros``, ``np.ones``, ``np.empty``, ``np.full`` and their ``_like`` forms (called by
  the run's own thread) make float arrays as Arrays without grad: ``out = np.zeros(n);
  out[i] = w[i] * 2`` is then recorded with NumPy's semantics, where a plain ndarray would
  drop the gradient (``np.full(shape, v)`` of a ``v`` that carries one is recorded too);
- SciPy's functions that have a rule in the table (``scipy.special.logsumexp``, its ufuncs,
  ``scipy.stats.norm.logpdf`` and the other distributions' methods, ``scipy.signal.
  convolve``; ``scipy.linalg.solve_triangular``, ``cho_factor`` and ``cho_solve``, by
  :mod:`srcgrad.runtime.rules.triangular`), which convert their operands with ``np.asarray``,
  call the rule when an operand carries a gradient, and SciPy itself otherwise; the other
  callables of scipy.special, scipy.linalg and scipy.signal by their spec, on plain data
  (no gradient) or refused, as :mod:`srcgrad.runtime.rules.scipy_coverage` classifies them;
- ``scipy.integrate.odeint`` and ``solve_ivp``, differentiated by the adjoint method
  (:mod:`srcgrad.transforms.eager_odes`);
- the ``math`` module's functions of a float that carries a gradient (``math.exp(sigma)``):
  ``math`` computes the value (and raises where it raises), NumPy's rule records it, as a
  0-d Array.
"""

from __future__ import annotations

import functools
import inspect
import math
import sys
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from srcgrad.runtime.eager.constants import carries_gradient, outside_graph, where
from srcgrad.runtime.eager.ndarray import as_array_constant, full_of
from srcgrad.runtime.rules.primitives import NUMPY_BINDINGS
from srcgrad.runtime.rules.scipy_coverage import SCIPY_SPECS, classify, public_name, refusal
from srcgrad.runtime.rules.scipy_lu import lu_solve_call
from srcgrad.runtime.rules.scipy_specs import eager_call
from srcgrad.runtime.rules.scipy_stats import (
    CONTINUOUS,
    DISCRETE,
    METHODS,
    continuous,
    dirichlet,
    poisson,
)
from srcgrad.runtime.rules.signal import signal_convolve
from srcgrad.runtime.rules.special import (
    SCIPY_NAMES,
    SPECIAL_UFUNCS,
    bind_scipy,
    erf,
    erfc,
    gammaln,
    multigammaln,
    polygamma,
)
from srcgrad.runtime.rules.triangular import (
    cho_factor_call,
    cho_solve_call,
    solve_triangular_call,
)
from srcgrad.transforms.eager_odes import ode_stand_in

__all__ = ["BUFFERS", "Buffer", "scipy_stand_in", "SCIPY_MODULES", "math_stand_in"]

BUFFERS = (np.zeros, np.ones, np.empty, np.full, np.zeros_like, np.ones_like, np.empty_like,
           np.full_like)
SCIPY_MODULES = ("scipy", "scipy.special", "scipy.stats", "scipy.signal", "scipy.linalg",
                 "scipy.integrate")


class Buffer:
    """``np.zeros`` and the other makers of BUFFERS, whose float arrays are Arrays without
    grad in the run's own thread (``owned()``), NumPy's own arrays in any other."""

    def __init__(self, fun: Any, owned: Callable[[], bool]) -> None:
        self._fun, self._owned = fun, owned
        functools.update_wrapper(self, fun)
        self.srcgrad_stands_in_for = fun

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not self._owned():
            return self._fun(*args, **kwargs)
        if self._fun is np.full:
            fill = args[1] if len(args) > 1 else kwargs.get("fill_value")
            if carries_gradient(fill):
                if len(args) > 3 or set(kwargs) - {"shape", "fill_value", "dtype"}:
                    raise TypeError("np.full with a value that carries a gradient is only "
                                    "followed as np.full(shape, value, dtype=...)")
                shape = args[0] if args else kwargs["shape"]
                dtype = args[2] if len(args) > 2 else kwargs.get("dtype")
                return full_of(fill, shape, dtype)
        out = self._fun(*args, **kwargs)
        if type(out) is np.ndarray and out.dtype.kind == "f":
            return as_array_constant(out)
        return out

    def __getattr__(self, name: str) -> Any:
        return getattr(self._fun, name)

    def __repr__(self) -> str:
        return repr(self._fun)


class _Ruled:
    """A SciPy function with a rule: ``rule(*args, **kwargs)`` when an operand carries a
    gradient, SciPy's own function otherwise."""

    def __init__(self, fun: Any, rule: Callable) -> None:
        self._fun, self._rule = fun, rule
        functools.update_wrapper(self, fun)
        self.srcgrad_stands_in_for = fun

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if carries_gradient((args, kwargs)):
            return self._rule(*args, **kwargs)
        return self._fun(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._fun, name)

    def __repr__(self) -> str:
        return repr(self._fun)


class _Distribution:
    """``scipy.stats.norm`` and the others with rules: their methods with a rule are
    :class:`_Ruled`; anything else (``norm(0, 1)``, ``norm.rvs``) is the distribution's."""

    def __init__(self, dist: Any, name: str, methods: dict[str, Callable]) -> None:
        self._dist, self._name, self._methods = dist, name, methods
        self.srcgrad_stands_in_for = dist

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._dist, name)
        rule = self._methods.get(name)
        return value if rule is None else _Ruled(value, rule)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._dist(*args, **kwargs)

    def __repr__(self) -> str:
        return repr(self._dist)


def _bound(sig: inspect.Signature, args: tuple, kwargs: dict) -> dict:
    bound = sig.bind(*args, **kwargs)
    bound.apply_defaults()
    return bound.arguments


def _sig(*names: str, **defaults: Any) -> inspect.Signature:
    P = inspect.Parameter
    return inspect.Signature([P(n, P.POSITIONAL_OR_KEYWORD) for n in names] + [
        P(n, P.POSITIONAL_OR_KEYWORD, default=d) for n, d in defaults.items()])


def _continuous(dist: str, method: str) -> Callable:
    sig = _sig("x", *CONTINUOUS[dist], loc=0.0, scale=1.0)

    def rule(*args: Any, **kwargs: Any) -> Any:
        return continuous(*_bound(sig, args, kwargs).values(), dist=dist, method=method)
    return rule


def _poisson(method: str) -> Callable:
    sig = _sig("k", "mu", loc=0)

    def rule(*args: Any, **kwargs: Any) -> Any:
        bound = _bound(sig, args, kwargs)
        if not (isinstance(bound["loc"], int) and bound["loc"] == 0):
            raise TypeError(f"scipy.stats.poisson.{method}() is followed without loc=")
        return poisson(bound["k"], bound["mu"], method=method)
    return rule


def _dirichlet(method: str) -> Callable:
    def rule(x: Any, alpha: Any) -> Any:
        return dirichlet(x, alpha, method=method)
    return rule


def _convolve(in1: Any, in2: Any, mode: str = "full", method: str | None = None) -> Any:
    return signal_convolve(in1, in2, mode=mode,
                           **({} if method is None else {"method": method}))


def _distribution_methods(stats: Any, value: Any) -> tuple[str, dict] | None:
    for dist in CONTINUOUS:
        if value is getattr(stats, dist, None):
            return dist, {m: _continuous(dist, m) for m in METHODS}
    if value is getattr(stats, "poisson", None):
        return "poisson", {m: _poisson(m) for m in DISCRETE["poisson"]}
    if value is getattr(stats, "dirichlet", None):
        return "dirichlet", {m: _dirichlet(m) for m in ("pdf", "logpdf")}
    return None


def scipy_stand_in(value: Any, runs: Callable[[Any], Any] | None = None) -> Any:
    """The stand-in of a SciPy function or distribution with a rule (None: it needs none);
    ``runs(func)``: the context in which an ODE solver's stand-in runs the user's ``func``."""
    ode = ode_stand_in(value, runs)
    if ode is not None:
        return ode
    special = sys.modules.get("scipy.special")
    if special is not None and bind_scipy():
        for name in SCIPY_NAMES:
            if getattr(special, name, None) is value and not isinstance(value, np.ufunc):
                return _Ruled(value, NUMPY_BINDINGS[value][1])
        if value is getattr(special, "multigammaln", None):
            return _Ruled(value, lambda a, d: multigammaln(a, d=d))
        if value is getattr(special, "polygamma", None):
            return _Ruled(value, lambda n, x: polygamma(x, n=n))
    signal = sys.modules.get("scipy.signal")
    if signal is not None and value is getattr(signal, "convolve", None):
        return _Ruled(value, _convolve)
    linalg = sys.modules.get("scipy.linalg")
    for name, rule in (("solve_triangular", solve_triangular_call),
                       ("cho_solve", cho_solve_call), ("cho_factor", cho_factor_call),
                       ("lu_solve", lu_solve_call)):
        if linalg is not None and value is getattr(linalg, name, None):
            return _Ruled(value, rule)
    covered = _covered_stand_in(value)
    if covered is not None:
        return covered
    stats = sys.modules.get("scipy.stats")
    found = _distribution_methods(stats, value) if stats is not None else None
    return None if found is None else _Distribution(value, *found)


class _Covered:
    """A callable of :data:`~srcgrad.runtime.rules.scipy_coverage.COVERED_MODULES` without a
    rule: run on plain data when its result carries no gradient, refused (a TypeError naming
    it) when an argument carries one and it has none; SciPy's own call otherwise."""

    def __init__(self, fun: Any, name: str, plain: bool) -> None:
        self._fun, self._name, self._plain = fun, name, plain
        functools.update_wrapper(self, fun)
        self.srcgrad_stands_in_for = fun

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not carries_gradient((args, kwargs)):
            return self._fun(*args, **kwargs)
        if self._plain:
            return outside_graph(self._fun, args, kwargs)
        raise TypeError(_located(refusal(self._name)))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._fun, name)

    def __repr__(self) -> str:
        return repr(self._fun)


def _located(message: str) -> str:
    """A refusal with the user's line, as the eager run's other refusals say it."""
    at, _ = where()
    return f"{at}: {message}" if at else message


def _covered_stand_in(value: Any) -> Any:
    """The stand-in of a callable of scipy.special, scipy.linalg or scipy.signal that the
    rules above do not cover (None: it needs none)."""
    name = public_name(value)
    if name is None or isinstance(value, type):
        return None
    spec = SCIPY_SPECS.get(name)
    if spec is not None:
        return _Ruled(value, functools.partial(eager_call, spec, located=_located))
    kind = classify(name)
    return None if kind == "rule" else _Covered(value, name, kind == "no gradient")


_MATH = {"exp": np.exp, "log": np.log, "sqrt": np.sqrt, "sin": np.sin, "cos": np.cos,
         "tan": np.tan, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan,
         "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh, "asinh": np.arcsinh,
         "acosh": np.arccosh, "atanh": np.arctanh, "log1p": np.log1p, "expm1": np.expm1,
         "log2": np.log2, "log10": np.log10, "fabs": np.abs, "erf": erf, "erfc": erfc,
         "lgamma": gammaln, "gamma": SPECIAL_UFUNCS["gamma"], "pow": np.power,
         "atan2": np.arctan2, "hypot": np.hypot}


class _MathFunction:
    """``math.<name>`` of operands that carry a gradient (see the module docstring)."""

    def __init__(self, fun: Any, recorded: Callable) -> None:
        self._fun, self._recorded = fun, recorded
        functools.update_wrapper(self, fun)
        self.srcgrad_stands_in_for = fun

    def __call__(self, *args: Any) -> Any:
        if not carries_gradient(args):
            return self._fun(*args)
        value = self._fun(*(float(np.asarray(a._data if hasattr(a, "_data") else a))
                            for a in args))                # math's own value, or its error
        if self._fun is math.log and len(args) == 2:
            out = np.log(args[0]) / np.log(args[1])
        else:
            out = self._recorded(*args)
        out = np.reshape(out, ())
        if out._data != value and out._data.flags.writeable:    # NumPy's rounding may
            out._data[...] = value                                 # differ in an ulp
        return out

    def __repr__(self) -> str:
        return repr(self._fun)


class _MathModule(types.ModuleType):
    """The ``math`` module, its functions of :data:`_MATH` standing in."""

    def __init__(self) -> None:
        super().__init__(math.__name__, math.__doc__)
        self.__dict__["srcgrad_stands_in_for"] = math

    def __getattr__(self, name: str) -> Any:
        value = getattr(math, name)
        return math_stand_in(value) or value

    def __dir__(self) -> list[str]:
        return dir(math)


def math_stand_in(value: Any) -> Any:
    """The stand-in of the ``math`` module or one of its functions (None: it needs none)."""
    if value is math:
        return _MathModule()
    name = getattr(value, "__name__", None)
    if isinstance(name, str) and name in _MATH and getattr(math, name, None) is value:
        return _MathFunction(value, _MATH[name])
    return None
