"""SciPy calls lowered to their primitives: ``scipy.special``'s ufuncs with a rule
(:mod:`srcgrad.runtime.rules.bessel`, ``special_functions``), ``logsumexp`` (``b=`` too),
``multigammaln`` and ``polygamma``; the ``scipy.stats`` methods of
:mod:`srcgrad.runtime.rules.scipy_stats` (``stats.norm.cdf(x, loc, scale)``: a bound method of
the distribution object); ``scipy.signal.convolve``; and ``scipy.linalg``'s
``solve_triangular``, ``cho_factor`` (a tuple ``(c, lower)``) and ``cho_solve`` (two
triangular solves), from :mod:`srcgrad.runtime.rules.triangular`.

srcgrad never imports SciPy itself: :func:`scipy_lowering` recognises a callee only once the
user's program has imported the SciPy module it comes from.  Arguments are bound by the
signature SciPy documents; a static one (an axis, a mode, an order) must be a literal or a
named constant, and anything else is refused with a CompileError.
"""

from __future__ import annotations

import ast
import inspect
import sys
from typing import Any

from srcgrad.frontend.callees import bind_call
from srcgrad.frontend.tables.scipy_specs import spec_lowering
from srcgrad.ir import Const, Pack, Var, literal
from srcgrad.runtime.rules.reductions import logsumexp
from srcgrad.runtime.rules.scipy_coverage import SCIPY_SPECS
from srcgrad.runtime.rules.scipy_lu import lu_solve_refusal, scipy_lu_solve
from srcgrad.runtime.rules.scipy_stats import (
    CONTINUOUS,
    DISCRETE,
    METHODS,
    continuous,
    dirichlet,
    poisson,
)
from srcgrad.runtime.rules.signal import CONVOLVE_MODES, signal_convolve
from srcgrad.runtime.rules.special import (
    SCIPY_UFUNCS,
    bind_scipy,
    logsumexp_b,
    logsumexp_sign,
    logsumexp_sign_of,
    logsumexp_signed,
    multigammaln,
    polygamma,
)
from srcgrad.runtime.rules.triangular import (
    CHO_FACTOR_SIGNATURE,
    CHO_SOLVE_SIGNATURE,
    SOLVE_SIGNATURE,
    TRANS,
    cho_factor_c,
    overwrite_refusal,
    solve_triangular,
)

__all__ = ["scipy_lowering", "SCIPY_SURFACE"]

_MISSING = object()


def _static(value: Any) -> Any:
    """A lowered static argument as a Python value where it is a literal."""
    if isinstance(value, Const) and literal(value.value):
        return value.value
    return value


def _bind(lowerer: Any, sig: inspect.Signature, args: list, kwargs: dict, node: ast.Call,
          name: str, values: tuple[str, ...]) -> dict[str, Any]:
    """The call's arguments by parameter name: those in ``values`` lowered as values
    (arrays), the others as static parameters; defaults filled in."""
    bound = bind_call(lowerer, None, args, kwargs, node, name, signature=sig)
    out = {}
    for param in sig.parameters.values():
        value = bound.get(param.name, _MISSING)
        if value is _MISSING:
            value = param.default if param.default is not inspect.Parameter.empty else None
            value = Const(value) if param.name in values else value
        elif isinstance(value, ast.AST):
            value = lowerer.expr(value) if param.name in values else lowerer.prims.param(value)
        if param.name in values:
            if isinstance(value, Pack):
                raise lowerer.error(f"{name}(): pass {param.name} as an array, not a list or "
                                    "tuple literal", node)
        else:
            value = _static(value)
        out[param.name] = value
    return out


def _literal(lowerer: Any, value: Any, what: str, node: ast.AST, test: Any = None) -> Any:
    if isinstance(value, (Var, Const, Pack)) or test is not None and not test(value):
        raise lowerer.error(f"{what} must be a literal or a named constant"
                            + ("" if test is None else f" ({test.__doc__})"), node)
    return value


def _int(v: Any) -> bool:
    """an int"""
    return isinstance(v, int) and not isinstance(v, bool)


def _sig(*names: str, **defaults: Any) -> inspect.Signature:
    P = inspect.Parameter
    return inspect.Signature([P(n, P.POSITIONAL_OR_KEYWORD) for n in names] + [
        P(n, P.POSITIONAL_OR_KEYWORD, default=d) for n, d in defaults.items()])


def _ufunc(name: str) -> Any:
    prim = SCIPY_UFUNCS[name]

    def lower(lowerer: Any, args: list, kwargs: dict, node: ast.Call) -> Any:
        if kwargs or len(args) != prim.nin:
            raise lowerer.error(f"scipy.special.{name} is compiled with {prim.nin} positional "
                                "argument(s) and no keywords", node)
        if any(isinstance(a, Pack) for a in args):
            raise lowerer.error(f"scipy.special.{name}(): pass arrays, not list or tuple "
                                "literals", node)
        return lowerer.prims.prim(prim, args, {}, name, node)
    return lower


_LSE = _sig("a", axis=None, b=None, keepdims=False, return_sign=False)


def _logsumexp(lowerer: Any, args: list, kwargs: dict, node: ast.Call) -> Any:
    name = "scipy.special.logsumexp"
    bound = _bind(lowerer, _LSE, args, kwargs, node, name, ("a", "b"))
    signed = _literal(lowerer, bound["return_sign"], f"{name}()'s return_sign", node)
    axis = bound["axis"]            # an int argument's value serves as it is (no gradient)
    axis = axis if isinstance(axis, Var) else _literal(lowerer, axis, f"{name}()'s axis", node)
    keepdims = _literal(lowerer, bound["keepdims"], f"{name}()'s keepdims", node)
    params = {"axis": list(axis) if isinstance(axis, list) else axis, "keepdims": keepdims}
    if isinstance(params["axis"], list):
        params["axis"] = tuple(params["axis"])
    b = bound["b"]
    if isinstance(b, Const) and b.value is None:
        out = lowerer.prims.prim(logsumexp, [bound["a"]], params, "logsumexp", node)
        return Pack([out, lowerer.prims.prim(logsumexp_sign_of, [bound["a"]], params, "sign",
                                             node)]) if signed else out
    if signed:                                       # log |sum(b exp(a))| and its sign
        return Pack([lowerer.prims.prim(p, [bound["a"], b], params, hint, node) for p, hint
                     in ((logsumexp_signed, "logsumexp"), (logsumexp_sign, "sign"))])
    return lowerer.prims.prim(logsumexp_b, [bound["a"], b], params, "logsumexp", node)


def _multigammaln(lowerer: Any, args: list, kwargs: dict, node: ast.Call) -> Any:
    bound = _bind(lowerer, _sig("a", "d"), args, kwargs, node, "scipy.special.multigammaln",
                  ("a",))
    d = _literal(lowerer, bound["d"], "scipy.special.multigammaln()'s d", node, _int)
    return lowerer.prims.prim(multigammaln, [bound["a"]], {"d": d}, "multigammaln", node)


def _polygamma(lowerer: Any, args: list, kwargs: dict, node: ast.Call) -> Any:
    bound = _bind(lowerer, _sig("n", "x"), args, kwargs, node, "scipy.special.polygamma",
                  ("x",))
    n = _literal(lowerer, bound["n"], "scipy.special.polygamma()'s order n", node, _int)
    return lowerer.prims.prim(polygamma, [bound["x"]], {"n": n}, "polygamma", node)


def _continuous(dist: str, method: str) -> Any:
    shapes = CONTINUOUS[dist]
    sig = _sig("x", *shapes, loc=0.0, scale=1.0)
    name = f"scipy.stats.{dist}.{method}"

    def lower(lowerer: Any, args: list, kwargs: dict, node: ast.Call) -> Any:
        bound = _bind(lowerer, sig, args, kwargs, node, name, tuple(sig.parameters))
        return lowerer.prims.prim(continuous, list(bound.values()),
                                  {"dist": dist, "method": method}, method, node)
    return lower


def _poisson(method: str) -> Any:
    name = f"scipy.stats.poisson.{method}"

    def lower(lowerer: Any, args: list, kwargs: dict, node: ast.Call) -> Any:
        bound = _bind(lowerer, _sig("k", "mu", loc=0), args, kwargs, node, name,
                      ("k", "mu", "loc"))
        loc = bound["loc"]
        if not (isinstance(loc, Const) and loc.value == 0 and _int(loc.value)):
            raise lowerer.error(f"{name}() is compiled without loc=", node)
        return lowerer.prims.prim(poisson, [bound["k"], bound["mu"]], {"method": method}, method,
                                  node)
    return lower


def _dirichlet(method: str) -> Any:
    name = f"scipy.stats.dirichlet.{method}"

    def lower(lowerer: Any, args: list, kwargs: dict, node: ast.Call) -> Any:
        bound = _bind(lowerer, _sig("x", "alpha"), args, kwargs, node, name, ("x", "alpha"))
        return lowerer.prims.prim(dirichlet, [bound["x"], bound["alpha"]], {"method": method},
                                  method, node)
    return lower


_CONVOLVE = _sig("in1", "in2", mode="full", method="auto")


def _convolve(lowerer: Any, args: list, kwargs: dict, node: ast.Call) -> Any:
    name = "scipy.signal.convolve"
    bound = _bind(lowerer, _CONVOLVE, args, kwargs, node, name, ("in1", "in2"))
    mode = _literal(lowerer, bound["mode"], f"{name}()'s mode", node)
    method = _literal(lowerer, bound["method"], f"{name}()'s method", node)
    if mode not in CONVOLVE_MODES or method not in ("auto", "direct", "fft"):
        raise lowerer.error(f"{name}() is compiled with mode one of {', '.join(CONVOLVE_MODES)}"
                            " and method 'auto', 'direct' or 'fft'", node)
    return lowerer.prims.prim(signal_convolve, [bound["in1"], bound["in2"]],
                              {"mode": mode, "method": method}, "convolved", node)


_SPECIAL_FUNCTIONS = {"logsumexp": _logsumexp, "multigammaln": _multigammaln,
                      "polygamma": _polygamma}


def _flag(lowerer: Any, bound: dict, key: str, name: str, node: ast.AST) -> bool:
    return bool(_literal(lowerer, bound[key], f"{name}()'s {key}", node))


def _no_overwrite(lowerer: Any, bound: dict, key: str, name: str, node: ast.AST) -> None:
    if _flag(lowerer, bound, key, name, node):
        raise lowerer.error(overwrite_refusal(name.rsplit(".", 1)[-1], key), node)


def _solve_triangular(lowerer: Any, args: list, kwargs: dict, node: ast.Call) -> Any:
    name = "scipy.linalg.solve_triangular"
    bound = _bind(lowerer, SOLVE_SIGNATURE, args, kwargs, node, name, ("a", "b"))
    _no_overwrite(lowerer, bound, "overwrite_b", name, node)
    trans = _literal(lowerer, bound["trans"], f"{name}()'s trans", node)
    if trans not in TRANS:
        raise lowerer.error(f"{name}(): trans must be one of {TRANS}", node)
    params = {"trans": trans, "lower": _flag(lowerer, bound, "lower", name, node),
              "unit_diagonal": _flag(lowerer, bound, "unit_diagonal", name, node)}
    return lowerer.prims.prim(solve_triangular, [bound["a"], bound["b"]], params, "solved",
                              node)


def _cho_factor(lowerer: Any, args: list, kwargs: dict, node: ast.Call) -> Any:
    name = "scipy.linalg.cho_factor"
    bound = _bind(lowerer, CHO_FACTOR_SIGNATURE, args, kwargs, node, name, ("a",))
    _no_overwrite(lowerer, bound, "overwrite_a", name, node)
    lower = _flag(lowerer, bound, "lower", name, node)
    c = lowerer.prims.prim(cho_factor_c, [bound["a"]], {"lower": lower}, "factor", node)
    return Pack([c, Const(lower)])


def _cho_solve(lowerer: Any, args: list, kwargs: dict, node: ast.Call) -> Any:
    name = "scipy.linalg.cho_solve"
    bound = bind_call(lowerer, None, args, kwargs, node, name, signature=CHO_SOLVE_SIGNATURE)
    if "overwrite_b" in bound:
        _no_overwrite(lowerer, bound, "overwrite_b", name, node)
    pair = bound["c_and_lower"]
    pair = lowerer.expr(pair) if isinstance(pair, ast.AST) else pair
    items = pair.items if isinstance(pair, Pack) else None
    if items is None or len(items) != 2:
        raise lowerer.error(f"{name}(): pass (c, lower) as a tuple written in the call or "
                            "returned by scipy.linalg.cho_factor", node)
    lower = _literal(lowerer, _static(items[1]), f"{name}()'s lower", node)
    b = bound["b"]
    b = lowerer.expr(b) if isinstance(b, ast.AST) else b
    first = lowerer.prims.prim(solve_triangular, [items[0], b],
                               {"trans": 0 if lower else 1, "lower": bool(lower),
                                "unit_diagonal": False}, "solved", node)
    return lowerer.prims.prim(solve_triangular, [items[0], first],
                              {"trans": 1 if lower else 0, "lower": bool(lower),
                               "unit_diagonal": False}, "solved", node)


_LU_SOLVE = _sig("lu_and_piv", "b", trans=0, overwrite_b=False, check_finite=True)


def _lu_solve(lowerer: Any, args: list, kwargs: dict, node: ast.Call) -> Any:
    name = "scipy.linalg.lu_solve"
    bound = bind_call(lowerer, None, args, kwargs, node, name, signature=_LU_SOLVE)
    statics = {k: _static(lowerer.prims.param(bound[k]) if isinstance(bound[k], ast.AST)
                          else bound[k]) for k in ("trans", "overwrite_b") if k in bound}
    why = lu_solve_refusal(_literal(lowerer, statics.get("trans", 0), f"{name}()'s trans",
                                    node),
                           _literal(lowerer, statics.get("overwrite_b", False),
                                    f"{name}()'s overwrite_b", node))
    pair = bound["lu_and_piv"]
    pair = lowerer.expr(pair) if isinstance(pair, ast.AST) else pair
    b = bound["b"]
    b = lowerer.expr(b) if isinstance(b, ast.AST) else b
    items = pair.items if isinstance(pair, Pack) else None
    if why is None and (items is None or len(items) != 2):
        why = (f"{name}(): pass (lu, piv) as a tuple written in the call or returned by "
               "scipy.linalg.lu_factor")
    if why is not None:
        raise lowerer.error(why, node)
    return lowerer.prims.prim(scipy_lu_solve, [items[0], items[1], b], {}, "solved", node)


_LINALG = {"solve_triangular": _solve_triangular, "cho_factor": _cho_factor,
           "cho_solve": _cho_solve, "lu_solve": _lu_solve}


def scipy_lowering(f: Any) -> Any:
    """The lowering of SciPy's ``f`` (a function or a distribution's bound method), or None
    (not a SciPy callable srcgrad has a rule for)."""
    special = sys.modules.get("scipy.special")
    if special is not None:
        for name, lower in _SPECIAL_FUNCTIONS.items():
            if getattr(special, name, None) is f:
                return lower
        if isinstance(getattr(f, "__name__", None), str) and \
                getattr(special, f.__name__, None) is f and f.__name__ in SCIPY_UFUNCS:
            bind_scipy()                         # the eager run meets the same ufunc
            return _ufunc(f.__name__)
    by_spec = spec_lowering(f)             # scipy.linalg.solve, signal.correlate ...
    if by_spec is not None:
        return by_spec
    signal = sys.modules.get("scipy.signal")
    if signal is not None and getattr(signal, "convolve", None) is f:
        return _convolve
    linalg = sys.modules.get("scipy.linalg")
    for name, lower in _LINALG.items():
        if linalg is not None and getattr(linalg, name, None) is f:
            return lower
    stats = sys.modules.get("scipy.stats")
    owner, method = getattr(f, "__self__", None), getattr(f, "__name__", None)
    if stats is None or owner is None or not isinstance(method, str):
        return None
    for dist in CONTINUOUS:
        if owner is getattr(stats, dist, None) and method in METHODS:
            return _continuous(dist, method)
    if owner is getattr(stats, "poisson", None) and method in DISCRETE["poisson"]:
        return _poisson(method)
    if owner is getattr(stats, "dirichlet", None) and method in ("pdf", "logpdf"):
        return _dirichlet(method)
    return None


SCIPY_SURFACE = sorted(
    [(f"scipy.special.{n}", p.name) for n, p in SCIPY_UFUNCS.items()]
    + [("scipy.special.logsumexp(b=)", logsumexp_b.name),
       ("scipy.special.logsumexp(return_sign=True)", logsumexp_signed.name),
       ("scipy.special.multigammaln", multigammaln.name),
       ("scipy.special.polygamma", polygamma.name),
       ("scipy.signal.convolve", signal_convolve.name),
       ("scipy.linalg.solve_triangular", solve_triangular.name),
       ("scipy.linalg.cho_factor", cho_factor_c.name),
       ("scipy.linalg.cho_solve", solve_triangular.name),
       ("scipy.linalg.lu_solve", scipy_lu_solve.name)]
    + [(f"scipy.stats.{d}.{m}", continuous.name) for d in CONTINUOUS for m in METHODS]
    + [(f"scipy.stats.poisson.{m}", poisson.name) for m in DISCRETE["poisson"]]
    + [(f"scipy.stats.dirichlet.{m}", dirichlet.name) for m in ("pdf", "logpdf")]
    + [(n, ", ".join(p.name for p in spec.prims)) for n, spec in SCIPY_SPECS.items()])
"""(SciPy callable, its primitive) for the reference (``python -m srcgrad supported``)."""
