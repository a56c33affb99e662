"""Forward-mode (JVP) rules derived from what a primitive is, for :meth:`Primitive.jvp`.

A primitive's forward rule is, in order of preference:

- its explicit rule (``defjvp(prim, rule)``), called as ``rule(tangents, ans, *xs, **params)``;
- ``linear``: the primitive is jointly linear in its differentiable inputs, so the tangent is
  the primitive applied to the tangents (zeros for an input whose tangent is zero, the primal
  value itself for an input that is not differentiable: an index, a mask);
- ``multilinear``: linear in each differentiable input separately (a product), so the tangent
  is the sum over inputs of the primitive with that input replaced by its tangent;
- ``diagonal``: an elementwise function (a ufunc, not a gufunc such as ``np.matmul``) whose
  vjp rules multiply the cotangent by a per-element derivative: its Jacobian is diagonal, so
  the vjp rule applied to the tangent is the jvp.

This module imports nothing of srcgrad: :mod:`srcgrad.runtime.rules.primitives` calls it.
"""

from __future__ import annotations

import functools
import inspect
import operator
from typing import Any

import numpy as np

__all__ = ["derived_jvp", "forward_kind", "filled", "reduced"]


def filled(t: Any, x: Any) -> Any:
    """The tangent ``t`` of the value ``x`` with zeros for None (element by element in a
    list of arrays, the one input of the list family)."""
    if t is None:
        return type(x)(filled(None, e) for e in x) if isinstance(x, (list, tuple)) \
            else np.zeros_like(x)
    if isinstance(t, (list, tuple)):
        return type(t)(filled(e, v) for e, v in zip(t, x))
    return t


def reduced(*vjps: Any, axis: Any = "param") -> Any:
    """The forward rule of a reduction from its vjp rules (one per input).

    Where each input element reaches one output element (sums, extrema, norms, order
    statistics, det over the last two axes), the vjp rule of a cotangent of ones is the
    row of the Jacobian, so the tangent is ``sum(t * vjp(ones))`` over the reduced axes:
    ``params["axis"]`` (all axes when None), or the ``axis`` given here.
    """
    def rule(tangents: list[Any], ans: Any, *xs: Any, **params: Any) -> Any:
        ones = np.ones_like(ans)
        total = _total([t * vjp(ones, ans, *xs, **params)
                        for t, vjp in zip(tangents, vjps) if t is not None])
        over = params.get("axis") if axis == "param" else axis
        return np.sum(total, axis=over, keepdims=params.get("keepdims", False))
    return rule


def _call(prim: Any, args: list[Any], params: dict) -> Any:
    """``prim(*args, **params)``, through NumPy's own function where the primitive is one (so
    that symbolic values print ``np.reshape``, and Tensors dispatch to the primitive)."""
    fn = prim.fn
    if isinstance(fn, np.ufunc) or (getattr(fn, "__module__", None) or "").startswith("numpy"):
        return fn(*args, **params)
    return prim(*args, **params)


def _total(terms: list[Any]) -> Any:
    return functools.reduce(operator.add, terms) if terms else None


def forward_kind(prim: Any) -> str | None:
    """How ``prim`` gets its forward rule: "rule", "linear", "multilinear", "diagonal" or
    None (no forward rule, and no input differentiable: the tangent is always zero) ."""
    if prim.jvp_rule is not None:
        return "rule"
    for kind in ("linear", "multilinear", "diagonal"):
        if getattr(prim, kind):
            return kind
    return None


def refuse_complex(prim: Any, values: list[Any]) -> None:
    """Raise a TypeError when one of ``values`` (arrays, Tensors, their metadata, dtypes) is
    complex and ``prim``'s rules are written for real values only (gradients of complex
    values are carried as dL/da + i dL/db, and few rules hold for them)."""
    for v in values:
        dtype = getattr(getattr(v, "_data", v), "dtype", v)
        if isinstance(dtype, np.dtype) and dtype.kind == "c":   # (the compiler's values: no)
            raise TypeError(f"srcgrad does not differentiate {prim.name} of complex values "
                            "(complex values are followed through np.fft's transforms and "
                            "np.abs only)")


def derived_jvp(prim: Any, tangents: list[Any], ans: Any, xs: tuple, params: dict,
                differentiable: list[bool]) -> Any:
    """The output tangent of ``prim`` by the first kind of rule it has (see the module)."""
    if not prim.complex_jvp:
        refuse_complex(prim, [*tangents, *xs])
    if prim.jvp_rule is not None:
        return prim.jvp_rule(tangents, ans, *xs, **params)
    if prim.linear:
        args = [filled(t, x) if d else x for t, x, d in zip(tangents, xs, differentiable)]
        return _call(prim, args, params)
    if prim.multilinear:
        return _total([_call(prim, [*xs[:i], t, *xs[i + 1:]], params)
                       for i, t in enumerate(tangents) if t is not None])
    if prim.diagonal:
        return _total([prim.vjp(i)(t, ans, *xs, **params)
                       for i, t in enumerate(tangents) if t is not None])
    raise NotImplementedError(f"primitive {prim.name!r} has no forward-mode (JVP) rule: "
                              "give it one with defjvp or a linear/multilinear hint")


def check_vjp_rule(rule: Any, nin: int | None) -> None:
    """Raise a TypeError naming the mix-up when a vjp rule cannot be called as srcgrad calls
    it, ``rule(g, ans, *inputs, **params)`` (HIPS autograd's rules take ``(ans, *inputs)`` and
    return a function of ``g``)."""
    if rule is None or nin is None:
        return
    try:
        signature = inspect.signature(rule)
    except (TypeError, ValueError):              # no signature to read (a builtin)
        return
    kinds = [p.kind for p in signature.parameters.values()]
    positional = sum(k in (inspect.Parameter.POSITIONAL_ONLY,
                           inspect.Parameter.POSITIONAL_OR_KEYWORD) for k in kinds)
    if positional < 2 + nin and inspect.Parameter.VAR_POSITIONAL not in kinds:
        raise TypeError(f"a vjp rule is called as rule(g, ans, *inputs, **params) with "
                        f"{nin} input(s); {getattr(rule, '__name__', 'the rule')}{signature} "
                        "cannot take that (HIPS autograd's rules take (ans, *inputs) and "
                        "return a function of g)")
