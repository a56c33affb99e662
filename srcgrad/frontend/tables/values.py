"""Calls whose result carries a value of their arguments, lowered exactly.

``float(x)``, ``np.float64(x)``, ``np.full(shape, x)``, ``np.full_like(a, x)``,
``np.linspace(a, b)``, ``np.logspace(a, b)``, ``list((a, b))`` and ``tuple([a, b])``: with
arguments that are all static they are printed as plain Python (a static value); otherwise
they become the primitives of :mod:`srcgrad.runtime.rules.constructors` (or the same list or
tuple), and anything these do not model (``retstep=True``, ``order=``, an active ``dtype``) is
refused.  Never a constant when a gradient flows through them.
"""

from __future__ import annotations

import ast
import builtins
import inspect
from typing import Any

import numpy as np

from srcgrad.frontend.callees import bind_call
from srcgrad.ir import Const, Pack, Tree, Var
from srcgrad.runtime.rules.constructors import (
    cast_to,
    full_of,
    linspace_of,
    to_float,
    to_scalar,
)
from srcgrad.runtime.rules.primitives import PRIMITIVES

__all__ = ["VALUE_CALLS", "bound_arguments", "cast_value", "lower_astype", "array_options"]


def bound_arguments(lowerer: Any, f: Any, node: ast.Call, signature: Any = None
                    ) -> tuple[dict[str, Any], dict[str, ast.expr]]:
    """``f``'s arguments by parameter name: lowered values and their AST nodes."""
    nodes = bind_call(lowerer, f, node.args, {k.arg: k.value for k in node.keywords}, node,
                      _name(f), signature)
    values = {k: lowerer.expr(v) for k, v in nodes.items()}
    return values, nodes


def _name(f: Any) -> str:
    name = getattr(f, "__name__", repr(f))
    return name if getattr(f, "__module__", "") == "builtins" else f"np.{name}"


def _fixed(lowerer: Any, f: Any, values: dict, nodes: dict, allowed: dict[str, Any],
           node: ast.AST) -> dict[str, Any]:
    """The static parameters ``allowed`` (name -> default): literal or static values; any
    other argument given must be None (or its default)."""
    params = {}
    for name, value in values.items():
        if lowerer.prims.carries(value):
            raise lowerer.error(f"{_name(f)}(): the argument {name!r} carries a gradient; "
                                "srcgrad differentiates only the values", node)
        if name in allowed:
            param, default = lowerer.prims.static_param(value, nodes[name]), allowed[name]
            if isinstance(param, (Var, Const)) or type(param) is not type(default) or \
                    param != default:
                params[name] = param
        elif not (isinstance(value, Const) and value.value is None):
            raise lowerer.error(f"{_name(f)}(): the argument {name!r} is not compiled", node)
    for name in ("dtype",):
        if name in params and not (isinstance(params[name], Var) or _float_dtype(params[name])):
            raise lowerer.error(f"{_name(f)}(): a dtype other than a float type is not "
                                "compiled for values that carry a gradient", node)
    return params


def _float_dtype(value: Any) -> bool:
    try:
        return np.dtype(value.value if isinstance(value, Const) else value).kind == "f"
    except TypeError:
        return False


def _scalar(prim: Any, hint: str, dtype: Any = None) -> Any:
    def lower(lowerer: Any, f: Any, node: ast.Call) -> Any:
        if node.keywords or len(node.args) != 1:
            values, _ = bound_arguments(lowerer, f, node, _ONE_ARG)
            if any(lowerer.prims.carries(v) for v in values.values()):
                raise lowerer.error(f"{_name(f)}() is compiled with one positional argument",
                                    node)
            return lowerer.statics.static_expr(node, hint=hint)
        x = lowerer.expr(node.args[0])
        if not lowerer.prims.carries(x):
            return lowerer.statics.static_expr(node, hint=hint)
        params = {"dtype": np.dtype(dtype)} if dtype is not None else {}
        return lowerer.prims.prim(prim, [x], params, hint, node)
    return lower


_ONE_ARG = inspect.Signature([inspect.Parameter("x", inspect.Parameter.POSITIONAL_ONLY)])


def _full(lowerer: Any, f: Any, node: ast.Call) -> Any:
    values, nodes = bound_arguments(lowerer, f, node)
    fill = values.get("fill_value")
    if not lowerer.prims.carries(fill):
        return _static_or_refuse(lowerer, f, values, node, "full")
    rest = {k: v for k, v in values.items() if k != "fill_value"}
    params = _fixed(lowerer, f, rest, nodes, {"shape": None, "dtype": None, "order": "C"},
                    node)
    if "order" in params:
        raise lowerer.error(f"{_name(f)}(): the argument 'order' is not compiled", node)
    return lowerer.prims.prim(full_of, [fill], params, "full", node)


def _full_like(lowerer: Any, f: Any, node: ast.Call) -> Any:
    """``np.full_like(a, x)`` as ``np.full(np.shape(a), x, dtype=np.asarray(a).dtype)``: only
    ``a``'s shape and dtype are read."""
    values, nodes = bound_arguments(lowerer, f, node)
    fill = values.get("fill_value")
    if not lowerer.prims.carries(fill):
        return lowerer.statics.static_expr(node, hint="full")
    rest = {k: v for k, v in values.items() if k not in ("a", "fill_value")}
    params = _fixed(lowerer, f, rest, nodes, {"dtype": None, "shape": None, "order": "K",
                                              "subok": True}, node)
    for name in ("order", "subok"):
        if name in params:
            raise lowerer.error(f"{_name(f)}(): the argument {name!r} is not compiled", node)
    a = nodes["a"]
    if "shape" not in params:
        params["shape"] = lowerer.statics.static_expr(_np_call("shape", a), hint="shape")
    if "dtype" not in params:
        dtype = ast.Attribute(_np_call("asarray", a), "dtype", ast.Load())
        params["dtype"] = lowerer.statics.static_expr(ast.copy_location(dtype, a), hint="dtype")
    return lowerer.prims.prim(full_of, [fill], params, "full", node)


def _np_call(name: str, arg: ast.expr) -> ast.expr:
    call = ast.Call(ast.Attribute(ast.Name("np", ast.Load()), name, ast.Load()), [arg], [])
    for n in (call, call.func, call.func.value):
        ast.copy_location(n, arg)
    return call


def _linspace(lowerer: Any, f: Any, node: ast.Call, base: bool = False) -> Any:
    values, nodes = bound_arguments(lowerer, f, node)
    start, stop = values.get("start"), values.get("stop")
    if not (lowerer.prims.carries(start) or lowerer.prims.carries(stop)):
        return _static_or_refuse(lowerer, f, values, node, "samples")
    rest = {k: v for k, v in values.items() if k not in ("start", "stop")}
    allowed = {"num": 50, "endpoint": True, "axis": 0, "dtype": None}
    allowed.update({"base": 10.0} if base else {"retstep": False})
    params = _fixed(lowerer, f, rest, nodes, allowed, node)
    if "retstep" in params:
        raise lowerer.error("np.linspace(retstep=True) is not compiled", node)
    dtype = params.pop("dtype", None)
    power = params.pop("base", 10.0)
    samples = lowerer.prims.prim(linspace_of, [start, stop], params if base else dict(
        params, **({"dtype": dtype} if dtype is not None else {})), "samples", node)
    if not base:
        return samples
    base_value = power if isinstance(power, (Var, Const)) else Const(power)
    out = lowerer.prims.prim(np.power, [base_value, samples], {}, "powers", node)
    if dtype is not None:
        out = lowerer.prims.prim(PRIMITIVES["cast"], [out], {"dtype": dtype}, "powers", node)
    return out


def _logspace(lowerer: Any, f: Any, node: ast.Call) -> Any:
    return _linspace(lowerer, f, node, base=True)


def _sequence(lowerer: Any, f: Any, node: ast.Call) -> Any:
    """``list(...)``/``tuple(...)`` of a tuple or list literal: the same items."""
    values, _ = bound_arguments(lowerer, f, node, _ITERABLE)
    if not any(lowerer.prims.carries(v) for v in values.values()):
        return lowerer.statics.static_expr(node, hint=f.__name__)
    value = values.get("iterable")
    if isinstance(value, Tree) and value.kind != "dict":
        value = Pack(list(value.children.values()))
    if isinstance(value, Pack):
        return Pack(list(value.items), is_list=f is builtins.list)
    raise lowerer.error(f"{f.__name__}() of an array or of a list built at run time is not "
                        "compiled when it carries a gradient (index the array, or build the "
                        "list with a literal)", node)


_ITERABLE = inspect.Signature([inspect.Parameter("iterable", inspect.Parameter.POSITIONAL_ONLY,
                                                 default=())])


def _static_or_refuse(lowerer: Any, f: Any, values: dict, node: ast.AST, hint: str) -> Any:
    for name, value in values.items():
        if lowerer.prims.carries(value):
            raise lowerer.error(f"{_name(f)}(): the argument {name!r} carries a gradient, "
                                "which srcgrad does not follow there", node)
    return lowerer.statics.static_expr(node, hint=hint)


def cast_value(lowerer: Any, value: Any, dtype: Any, node: ast.AST) -> Any:
    """``value`` converted to ``dtype`` (a Const, a static Var or a literal): a float dtype is
    a cast the gradient passes through; an integer, boolean or text dtype gives a value with
    no gradient (None is returned: the caller prints the call as a static value)."""
    if isinstance(dtype, Var):
        if lowerer.prims.carries(dtype):
            raise lowerer.error("a dtype computed from values that carry a gradient is not "
                                "compiled", node)
        return lowerer.prims.prim(cast_to, [value], {"dtype": dtype}, "cast", node)
    raw = dtype.value if isinstance(dtype, Const) else dtype
    if raw is None:
        return value
    try:
        kind = np.dtype(raw).kind
    except TypeError:
        raise lowerer.error(f"the dtype {raw!r} is not understood", node) from None
    if kind == "f":
        return lowerer.prims.prim(PRIMITIVES["cast"], [value], {"dtype": np.dtype(raw)}, "cast",
                                  node)
    if kind in "iubUSMm":
        return None
    raise lowerer.error(f"a conversion to {np.dtype(raw)} is not compiled (complex and object "
                        "arrays are not supported)", node)


def lower_astype(lowerer: Any, receiver: Var, dtype: Any, node: ast.AST) -> Any:
    """``x.astype(dtype)``."""
    out = cast_value(lowerer, receiver, dtype, node)
    return lowerer.statics.static_expr(node, hint="cast") if out is None else out


_ARRAY_OPTIONS = inspect.Signature([
    inspect.Parameter("object", inspect.Parameter.POSITIONAL_ONLY),
    *(inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=d) for n, d in (
        ("dtype", None), ("copy", True), ("order", "K"), ("subok", False), ("ndmin", 0))),
    inspect.Parameter("like", inspect.Parameter.KEYWORD_ONLY, default=None),
    inspect.Parameter("device", inspect.Parameter.KEYWORD_ONLY, default=None)])


def array_options(lowerer: Any, args: list, kwargs: dict, node: ast.AST) -> Any:
    """The options of ``np.array(x, ...)``/``np.asarray``: the dtype (None: none given), after
    refusing those that change the result's shape or type (``ndmin``, ``like``)."""
    bound = bind_call(lowerer, np.array, args, kwargs, node, "np.array", _ARRAY_OPTIONS)
    for name in ("ndmin", "like", "device"):
        value = bound.get(name)
        if value is None:
            continue
        value = lowerer.prims.param(value) if isinstance(value, ast.AST) else value
        value = value.value if isinstance(value, Const) else value
        if value not in (None, 0, "cpu"):
            raise lowerer.error(f"np.array(..., {name}=) is not compiled", node)
    dtype = bound.get("dtype")
    if isinstance(dtype, ast.AST):
        dtype = lowerer.prims.param(dtype)
    return dtype


VALUE_CALLS = {
    builtins.float: _scalar(to_float, "value"),
    np.float64: _scalar(to_scalar, "value", np.float64),
    np.float32: _scalar(to_scalar, "value", np.float32),
    np.float16: _scalar(to_scalar, "value", np.float16),
    np.longdouble: _scalar(to_scalar, "value", np.longdouble),
    np.full: _full,
    np.full_like: _full_like,
    np.linspace: _linspace,
    np.logspace: _logspace,
    builtins.list: _sequence,
    builtins.tuple: _sequence,
}
"""Callable -> ``lower(lowerer, f, node)``: calls lowered exactly (a rule), static when no
argument carries a gradient."""
