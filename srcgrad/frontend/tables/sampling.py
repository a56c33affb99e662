"""``np.trapezoid`` lowered to the primitive its arguments choose: ``trapezoid_x(y, x)`` with
sample points, ``trapezoid_dx(y, dx)`` with a spacing (both differentiated, as ``y`` is);
``axis`` must be a literal or a named constant.  The eager binding of ``np.trapezoid`` makes
the same choice (:mod:`srcgrad.runtime.rules.interpolation`)."""

from __future__ import annotations

import ast
from typing import Any

import numpy as np

from srcgrad.frontend.callees import bind_call
from srcgrad.ir import Const, Var
from srcgrad.runtime.rules.interpolation import trapezoid_dx, trapezoid_x

__all__ = ["SAMPLING_CALLS"]


def _value(lowerer: Any, value: Any) -> Any:
    return lowerer.expr(value) if isinstance(value, ast.AST) else value


def _trapezoid(lowerer: Any, args: list, kwargs: dict, node: ast.Call) -> Any:
    bound = bind_call(lowerer, np.trapezoid, args, kwargs, node, "np.trapezoid")
    axis = bound.get("axis", -1)
    if isinstance(axis, ast.AST):
        axis = lowerer.prims.param(axis)
    if isinstance(axis, (Var, Const)) or isinstance(axis, bool) or not isinstance(axis, int):
        raise lowerer.error("np.trapezoid()'s axis must be an int literal or a named constant",
                            node)
    y, x = _value(lowerer, bound["y"]), _value(lowerer, bound.get("x", Const(None)))
    if not (isinstance(x, Const) and x.value is None):
        return lowerer.prims.prim(trapezoid_x, [y, x], {"axis": axis}, "integral", node)
    dx = _value(lowerer, bound.get("dx", Const(1.0)))
    return lowerer.prims.prim(trapezoid_dx, [y, dx], {"axis": axis}, "integral", node)


SAMPLING_CALLS = {np.trapezoid: _trapezoid}
"""The calls this module lowers (they join ``SPECIAL_CALLS``)."""
