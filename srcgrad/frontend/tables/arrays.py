"""Calls lowered to several primitives, or to a list or tuple of them: ``atleast_1d``,
``split`` and its relatives (a list), ``hstack`` and its relatives, ``append``, ``average``,
``select``, ``gradient``, ``pad``, the argument checks of ``diff``, ``nan_to_num``,
``median``, ``quantile`` and ``percentile``, and
``scipy.special`` (registered when SciPy is imported).

Each lowering emits the primitives the eager binding of the same NumPy function records
(:mod:`srcgrad.runtime.rules.shapes`, ``statistics``, ``special``), so both modes run the same
rules.  An argument these do not model exactly is refused with a CompileError.
"""

from __future__ import annotations

import ast
import inspect
import sys
from typing import Any

import numpy as np

from srcgrad.frontend.callees import bind_call
from srcgrad.frontend.tables.scipy_calls import scipy_lowering
from srcgrad.ir import Const, Pack, Var, literal
from srcgrad.runtime.rules.primitives import PRIMITIVES, lookup
from srcgrad.runtime.rules.shapes import ATLEAST, JOINS, PAD_MODES, SPLITS, section_count
from srcgrad.runtime.rules.special import SCIPY_NAMES, bind_scipy

__all__ = ["ARRAY_CALLS", "SpecialCalls", "int_arithmetic"]


def _arguments(lowerer: Any, f: Any, args: list, node: ast.Call, values: tuple = ()
               ) -> dict[str, Any]:
    """``f``'s arguments by name: positional ones as lowered, keywords lowered here (those in
    ``values`` as values, the others as static parameters)."""
    keywords = {k.arg: k.value for k in node.keywords}
    bound = bind_call(lowerer, f, args, keywords, node, f"np.{f.__name__}")
    out = {}
    for name, value in bound.items():
        if isinstance(value, dict):                      # **kwargs
            value = {k: _static(lowerer, lowerer.prims.param(v)) for k, v in value.items()}
        elif isinstance(value, ast.AST):
            value = lowerer.expr(value) if name in values else _static(
                lowerer, lowerer.prims.param(value))
        else:
            value = _static(lowerer, value) if name not in values else value
        out[name] = value
    return out


def _static(lowerer: Any, value: Any) -> Any:
    """A static parameter as a Python value where it is a literal (a list or tuple literal of
    literals included); a Var or a named constant otherwise."""
    if isinstance(value, Pack) and all(isinstance(v, (Const, Pack)) for v in value.items):
        items = [_static(lowerer, v) for v in value.items]
        if not any(isinstance(v, (Var, Const, Pack)) for v in items):
            return items if value.is_list else tuple(items)
    if isinstance(value, Const):
        inner = value.value
        if isinstance(inner, np.ndarray) and inner.ndim <= 1 and inner.dtype.kind in "iu":
            return inner.tolist()
        return inner if literal(inner) else value
    return value


_ARITHMETIC = (ast.Expression, ast.Constant, ast.List, ast.Tuple, ast.BinOp, ast.UnaryOp,
               ast.operator, ast.unaryop, ast.Load)


def _folded(expr: ast.expr) -> Any:
    """A list or tuple of numbers written with arithmetic (``[0.3, 0.3 * 2]``), as its value;
    the Pack itself when it holds anything else (it is refused where a literal is needed)."""
    tree = ast.Expression(expr)
    if not all(isinstance(n, _ARITHMETIC) for n in ast.walk(tree)):
        return Pack([])
    try:
        return eval(compile(tree, "<literal>", "eval"), {"__builtins__": {}})  # noqa: S307
    except Exception:  # noqa: BLE001 - not a value after all (1 / 0): refused as a Pack
        return Pack([])


_INT_OPS = {ast.Add: int.__add__, ast.Sub: int.__sub__, ast.Mult: int.__mul__,
            ast.FloorDiv: int.__floordiv__, ast.Mod: int.__mod__}


def int_arithmetic(expr: ast.expr) -> Any:
    """An int, or a tuple or list of them, written with literal arithmetic (``5 * 4``,
    ``(2 * 3, -1)``), as its value; None for anything else (no powers: no huge numbers)."""
    if isinstance(expr, ast.Constant) and type(expr.value) is int:
        return expr.value
    if isinstance(expr, (ast.Tuple, ast.List)):
        items = [int_arithmetic(e) for e in expr.elts]
        if any(i is None or not isinstance(i, int) for i in items):
            return None
        return tuple(items) if isinstance(expr, ast.Tuple) else items
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, (ast.USub, ast.UAdd)):
        value = int_arithmetic(expr.operand)
        return None if not isinstance(value, int) else -value if isinstance(
            expr.op, ast.USub) else value
    if isinstance(expr, ast.BinOp) and type(expr.op) in _INT_OPS:
        left, right = int_arithmetic(expr.left), int_arithmetic(expr.right)
        if not (isinstance(left, int) and isinstance(right, int)) or (
                right == 0 and isinstance(expr.op, (ast.FloorDiv, ast.Mod))):
            return None
        return _INT_OPS[type(expr.op)](left, right)
    return None


def _literal_of(lowerer: Any, value: Any, what: str, node: ast.AST) -> Any:
    if isinstance(value, (Var, Const, Pack)):
        raise lowerer.error(f"{what} must be a literal or a named constant", node)
    return value


def _constant(lowerer: Any, value: Any, what: str, node: ast.AST) -> Any:
    """A parameter that must not carry a gradient (srcgrad does not follow one through it)."""
    if isinstance(value, Pack) or lowerer.prims.carries(value) and isinstance(value, Var):
        raise lowerer.error(f"{what} that carries a gradient (or is computed at run time) is "
                            "not compiled", node)
    return value


def _atleast(fun: Any) -> Any:
    def lower(lowerer: Any, args: list, kwargs: dict, node: ast.Call) -> Any:
        if kwargs or not args:
            raise lowerer.error(f"np.{fun.__name__} is compiled with arrays as positional "
                                "arguments", node)
        outs = [lowerer.prims.prim(lookup(fun), [a], {}, fun.__name__, node) for a in args]
        return outs[0] if len(outs) == 1 else Pack(outs)
    return lower


def _split(fun: Any, axis_code: Any, even: bool) -> Any:
    def lower(lowerer: Any, args: list, kwargs: dict, node: ast.Call) -> Any:
        bound = _arguments(lowerer, fun, args, node, values=("ary",))
        sections = _literal_of(lowerer, bound["indices_or_sections"],
                               f"np.{fun.__name__}()'s sections", node)
        if isinstance(sections, tuple):
            sections = list(sections)
        if not (isinstance(sections, int) or isinstance(sections, list) and all(
                isinstance(i, int) for i in sections)):
            raise lowerer.error(f"np.{fun.__name__}()'s sections must be an int or a list of "
                                "ints", node)
        try:
            count = section_count(sections)
        except ValueError as exc:
            raise lowerer.error(str(exc), node) from None
        axis = bound.get("axis", 0) if axis_code == 0 else axis_code
        pieces = [lowerer.prims.prim(PRIMITIVES["split_piece"], [bound["ary"]], {
            "sections": sections, "axis": axis, "k": k, "even": even}, "piece", node)
            for k in range(count)]
        return Pack(pieces, is_list=True)
    return lower


def _join(how: str) -> Any:
    def lower(lowerer: Any, args: list, kwargs: dict, node: ast.Call) -> Any:
        seq = args[0] if len(args) == 1 and not kwargs else None
        if isinstance(seq, Var) and not lowerer.lists.is_list(seq):     # an array: its rows
            return lowerer.prims.prim(PRIMITIVES["joined_rows"], [seq], {"how": how}, how, node)
        if not isinstance(seq, Pack) or not seq.items:
            raise lowerer.error(f"np.{how} is compiled on an array or on a list or tuple literal "
                                "of arrays (without dtype= or casting=)", node)
        return lowerer.prims.prim(PRIMITIVES["joined"], seq.items, {"how": how}, how, node)
    return lower


def _array_of(lowerer: Any, value: Any, expr: ast.expr, node: ast.AST) -> Any:
    if isinstance(value, Pack):
        if lowerer.statics.is_static(value):
            return lowerer.statics.static_expr(expr, hint="array")
        return lowerer.prims.prim(PRIMITIVES["stack"], value.items, {"axis": 0}, "array", node)
    return lowerer.lists.as_array(value, node)    # a list argument, a run-time list


def _append(lowerer: Any, args: list, kwargs: dict, node: ast.Call) -> Any:
    bound = _arguments(lowerer, np.append, args, node, values=("arr", "values"))
    exprs = bind_call(lowerer, np.append, node.args, {k.arg: k.value for k in node.keywords},
                      node, "np.append")
    arr, values = (_array_of(lowerer, bound[k], exprs[k], node) for k in ("arr", "values"))
    axis = bound.get("axis")
    if axis is None:
        arr, values = (lowerer.prims.prim(PRIMITIVES["ravel"], [v], {}, "flat", node)
                       for v in (arr, values))
        axis = 0
    return lowerer.prims.prim(PRIMITIVES["concatenate"], [arr, values], {"axis": axis}, "appended",
                              node)


def _average(lowerer: Any, args: list, kwargs: dict, node: ast.Call) -> Any:
    bound = _arguments(lowerer, np.average, args, node, values=("a", "weights"))
    if bound.get("returned", False) is not False:
        raise lowerer.error("np.average(returned=True) is not compiled", node)
    params = {k: bound[k] for k in ("axis", "keepdims") if k in bound}
    weights = bound.get("weights")
    if weights is None or isinstance(weights, Const) and weights.value is None:
        return lowerer.prims.prim(PRIMITIVES["mean"], [bound["a"]], params, "average", node)
    return lowerer.prims.prim(PRIMITIVES["weighted_average"], [bound["a"], weights], params,
                              "average", node)


def _select(lowerer: Any, args: list, kwargs: dict, node: ast.Call) -> Any:
    bound = _arguments(lowerer, np.select, args, node,
                       values=("condlist", "choicelist", "default"))
    conds, choices = bound["condlist"], bound["choicelist"]
    if not isinstance(conds, Pack) or not isinstance(choices, Pack):
        raise lowerer.error("np.select is compiled on list or tuple literals of conditions "
                            "and choices", node)
    if len(conds.items) != len(choices.items) or not conds.items:
        raise lowerer.error("np.select needs as many choices as conditions (at least one)",
                            node)
    result = bound.get("default", Const(0))
    for cond, choice in reversed(list(zip(conds.items, choices.items))):
        result = lowerer.prims.prim(PRIMITIVES["where"], [cond, choice, result], {}, "select", node)
    return result


def _gradient(lowerer: Any, args: list, kwargs: dict, node: ast.Call) -> Any:
    bound = _arguments(lowerer, np.gradient, args, node, values=("f",))
    axis = bound.get("axis")
    if isinstance(axis, (Var, Const)):
        raise lowerer.error("np.gradient is compiled with a literal axis= (an int or a tuple "
                            "of ints), or without one for a 1-D array", node)
    edge_order = _literal_of(lowerer, bound.get("edge_order", 1), "np.gradient's edge_order",
                             node)
    if axis is None:             # a 1-D array (refused at run time otherwise: NumPy's tuple)
        if bound.get("varargs"):
            raise lowerer.error("np.gradient without axis= is compiled with unit spacing", node)
        return lowerer.prims.prim(PRIMITIVES["vector_gradient"], [bound["f"]],
                                  {"edge_order": edge_order}, "gradient", node)
    axes = list(axis) if isinstance(axis, (tuple, list)) else [axis]
    spacing = list(bound.get("varargs", ()))
    if any(isinstance(h, (Var, Pack)) or isinstance(h, Const) and np.ndim(h.value) != 0
           for h in spacing) or len(spacing) not in (0, 1, len(axes)):
        raise lowerer.error("np.gradient is compiled with literal scalar spacings (one, or "
                            "one per axis)", node)
    spacing = spacing * len(axes) if len(spacing) == 1 else spacing
    outs = []
    for k, a in enumerate(axes):
        out = lowerer.prims.prim(PRIMITIVES["gradient"], [bound["f"]], {
            "axis": a, "edge_order": edge_order}, "gradient", node)
        if spacing:
            h = spacing[k].value if isinstance(spacing[k], Const) else spacing[k]
            out = lowerer.prims.prim(PRIMITIVES["divide"], [out, Const(float(h))], {}, "gradient",
                                     node)
        outs.append(out)
    return outs[0] if not isinstance(axis, (tuple, list)) else Pack(outs)


def _real_if_close(lowerer: Any, args: list, kwargs: dict, node: ast.Call) -> Any:
    """``np.real_if_close(a, tol)``: of a real array, the array itself (``np.real``'s view;
    a complex one is refused by its rule)."""
    bound = _arguments(lowerer, np.real_if_close, args, node, values=("a",))
    _literal_of(lowerer, bound.get("tol", 100), "np.real_if_close's tol", node)
    return lowerer.prims.prim(PRIMITIVES["real"], [bound["a"]], {}, "real", node)


def _pad(lowerer: Any, args: list, kwargs: dict, node: ast.Call) -> Any:
    bound = _arguments(lowerer, np.pad, args, node, values=("array",))
    mode = bound.get("mode", "constant")
    options = bound.get("kwargs", {})
    if not isinstance(mode, str) or mode not in PAD_MODES:
        raise lowerer.error(f"np.pad is compiled for the modes {', '.join(PAD_MODES)}", node)
    for key, value in options.items():
        if key not in PAD_MODES[mode] or key == "reflect_type" and value != "even":
            raise lowerer.error(f"np.pad(mode={mode!r}): the argument {key}={value!r} is not "
                                "compiled", node)
        _constant(lowerer, value, f"np.pad's {key}", node)
    width = bound["pad_width"]         # integers only: computed at run time from anything
    if isinstance(width, Pack):
        width = lowerer.prims.pack_param(width, node, integers=True)
    params = {"pad_width": width, "mode": mode, **options}
    return lowerer.prims.prim(PRIMITIVES["pad"], [bound["array"]], params, "padded", node)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _one_axis(value: Any) -> bool:
    return value is None or isinstance(value, int) and not isinstance(value, bool)


def _checked(fun: Any, constants: tuple[str, ...] = (), checks: dict | None = None,
             dropped: dict | None = None) -> Any:
    """NumPy's own binding, after checking that ``constants`` carry no gradient, that the
    arguments in ``checks`` pass their test, and that those in ``dropped`` (not parameters of
    the rule) have the value they may have."""
    checks, dropped = checks or {}, dropped or {}

    def lower(lowerer: Any, args: list, kwargs: dict, node: ast.Call) -> Any:
        prim = lookup(fun)
        args = [a if k < prim.nin or not isinstance(_static(lowerer, a), Pack) else _folded(
            node.args[k]) for k, a in enumerate(args)]
        bound = _arguments(lowerer, fun, args, node, values=tuple(
            inspect.signature(fun).parameters)[:prim.nin])
        for name in constants:
            if name in bound:
                _constant(lowerer, bound[name], f"np.{fun.__name__}'s {name}", node)
        for name, (test, what) in checks.items():
            if name in bound and not test(bound[name]):
                raise lowerer.error(f"np.{fun.__name__}(): {name} must be {what}", node)
        for name, allowed in dropped.items():
            if name in bound and bound[name] != allowed:
                raise lowerer.error(f"np.{fun.__name__}({name}={bound[name]!r}) is not compiled",
                                    node)
        args = [a if k < prim.nin else _static(lowerer, a) for k, a in enumerate(args)]
        if any(isinstance(a, Pack) for a in args[prim.nin:]):
            raise lowerer.error(f"np.{fun.__name__}(): a list or tuple argument must be a "
                                "literal", node)
        inputs, params = lowerer.prims.bind(fun, prim, args, {
            k: v for k, v in kwargs.items() if k not in dropped}, node)
        return lowerer.prims.prim(prim, inputs, params, fun.__name__, node)
    return lower


def _quantiles(value: Any) -> bool:
    return _is_number(value) or isinstance(value, (list, tuple)) and all(
        _is_number(v) for v in value)


def _axes(value: Any) -> bool:
    return _one_axis(value) or isinstance(value, (list, tuple)) and all(
        _one_axis(v) and v is not None for v in value)


_QUANTILE = {"q": (_quantiles, "a literal number or a list of literal numbers"),
             "axis": (_axes, "literal axes or None"),
             "method": (lambda m: m == "linear", "'linear'")}


def _scipy(name: str) -> Any:
    prim = SCIPY_NAMES[name]

    def lower(lowerer: Any, args: list, kwargs: dict, node: ast.Call) -> Any:
        if name in ("logsumexp", "softmax", "log_softmax"):
            fun = getattr(sys.modules["scipy.special"], name)
            bound = _arguments(lowerer, fun, args, node, values=("a", "x"))
            if bound.get("b") is not None or bound.get("return_sign", False) is not False:
                raise lowerer.error("scipy.special.logsumexp(b=, return_sign=) is not "
                                    "compiled", node)
            if name != "logsumexp" and bound.get("axis") is None:
                raise lowerer.error(f"scipy.special.{name} is compiled with axis= given", node)
            params = {k: bound[k] for k in ("axis", "keepdims") if k in bound}
            return lowerer.prims.prim(prim, [bound.get("a", bound.get("x"))], params, name, node)
        if kwargs or len(args) != 1:
            raise lowerer.error(f"scipy.special.{name} is compiled with one argument", node)
        return lowerer.prims.prim(prim, args, {}, name, node)
    return lower


ARRAY_CALLS: dict[Any, Any] = {
    **{f: _atleast(f) for f in ATLEAST.values()},
    **{f: _split(f, axis, even) for f, (axis, even) in SPLITS.items()},
    **{f: _join(how) for f, how in JOINS.items()},
    np.append: _append, np.average: _average, np.select: _select, np.gradient: _gradient,
    np.pad: _pad, np.real_if_close: _real_if_close,
    np.diff: _checked(np.diff, ("prepend", "append")),
    np.roll: _checked(np.roll), np.rot90: _checked(np.rot90), np.take: _checked(np.take),
    np.partition: _checked(np.partition), np.sort: _checked(np.sort),
    np.nan_to_num: _checked(np.nan_to_num, ("nan", "posinf", "neginf"), dropped={"copy": True}),
    np.median: _checked(np.median, checks={"axis": _QUANTILE["axis"]},
                        dropped={"overwrite_input": False}),
    np.quantile: _checked(np.quantile, checks=_QUANTILE, dropped={"overwrite_input": False}),
    np.percentile: _checked(np.percentile, checks=_QUANTILE,
                            dropped={"overwrite_input": False}),
}


class SpecialCalls(dict):
    """The table of specially lowered calls; ``scipy.special``'s functions join it once
    SciPy is imported (srcgrad never imports SciPy itself)."""

    def _scipy_entry(self, f: Any) -> Any:
        special = sys.modules.get("scipy.special")
        if special is None:
            return None
        for name in SCIPY_NAMES:
            if getattr(special, name, None) is f:
                bind_scipy()
                self[f] = _scipy(name)
                return self[f]
        return None

    def get(self, f: Any, default: Any = None) -> Any:
        try:
            hit = dict.get(self, f)
        except TypeError:                   # unhashable
            return default
        if hit is None:
            hit = scipy_lowering(f)           # SciPy's functions with a rule (lowering_scipy)
            if hit is not None:
                self[f] = hit
        if hit is None:
            hit = self._scipy_entry(f)
        return default if hit is None else hit

    def __contains__(self, f: object) -> bool:
        return self.get(f) is not None
